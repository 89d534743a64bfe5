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

    from ..tui.start import begin
    from ._common import session

    front_door = session()
    prefetch = begin(front_door, Path(path))  # no Textual: a run's read or a tree's stored rows, begun meanwhile

    from ..tui.app import make_app, run_app

    sys.exit(run_app(make_app(path, session=front_door, prefetch=prefetch)))
