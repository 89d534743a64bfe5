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

        from ..report.text import runs_table
        from ._common import console, load_runs

        console().print(runs_table(load_runs(path), Path(path)))
        return
    from ..tui.app import make_app

    make_app(path).run()
