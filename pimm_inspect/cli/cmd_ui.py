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

        from ..report.text import plain_runs_table, runs_table, runs_table_row
        from ._common import console, discover_paths, iter_rows

        rows = [runs_table_row(r, Path(path)) for r in iter_rows(discover_paths(path))]
        out = console()
        plain = plain_runs_table(rows, out.width) if out.color_system is None else None
        out.file.write(plain) if plain is not None else out.print(runs_table(rows))
        return
    from pathlib import Path

    from ..load.discover import classify_dir
    from ._common import session

    front_door = session()
    root = Path(path)
    if root.is_dir() and classify_dir(root.absolute()) is not None:
        front_door.staged.prefetch(root.absolute())  # one run: read it while the UI's modules import

    from ..tui.app import make_app, run_app

    sys.exit(run_app(make_app(path, session=front_door)))
