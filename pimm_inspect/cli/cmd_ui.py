"""``pimm-inspect [PATH]``: open the terminal UI on a run or a tree of runs."""

from __future__ import annotations

import sys

import click


@click.command("ui")
@click.argument("path", type=click.Path(), default=".")
def command(path: str) -> None:
    """Browse runs in the terminal UI (keyboard-first; works over SSH).

    Example: pimm-inspect exp/
    """
    if not sys.stdout.isatty():
        from pathlib import Path

        from ..report.text import runs_table_row
        from ._common import discover_paths, iter_rows, print_runs_table

        print_runs_table([runs_table_row(r, Path(path)) for r in iter_rows(discover_paths(path))])
        return
    from pathlib import Path

    from ..load.discover import classify_dir
    from ._common import session

    front_door = session()
    root = Path(path)
    prefetch = None
    if root.is_dir() and classify_dir(root.absolute()) is not None:
        front_door.staged.prefetch(root.absolute())  # one run: read it while the UI's modules import
    else:
        from ..tui.prefetch import RowPrefetch  # no Textual: a tree's runs and stored rows, found meanwhile

        prefetch = RowPrefetch.start(front_door, root)

    from ..tui.app import make_app, run_app

    sys.exit(run_app(make_app(path, session=front_door, prefetch=prefetch)))
