"""Shared CLI plumbing: loading runs with progress on stderr, output helpers, exit codes."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from ..model import Run

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
"""Exit codes: 0 ok, 1 `check` found something at or above --fail-on (or `url` has no link), 2 usage error or nothing readable."""


def stderr(message: str) -> None:
    """Diagnostics for people go to stderr; stdout carries the product."""
    click.echo(message, err=True)


_DISCOVERY: dict[str, object] = {}
"""--max-depth / --follow-links of the command being run (set by ``discovery_options``)."""


def _remember(_ctx: click.Context, param: click.Parameter, value: object) -> object:
    _DISCOVERY[param.name] = value
    return value


def discovery_options(func):
    """``--max-depth N`` and ``--follow-links`` for commands that search a tree for runs."""
    from ..load.discover import MAX_DEPTH

    func = click.option("--follow-links", is_flag=True, expose_value=False, callback=_remember,
                        help="Follow links that lead out of the searched folder (never into /proc, /sys, /dev).")(func)
    return click.option("--max-depth", type=click.IntRange(0, 1000), default=MAX_DEPTH, show_default=True,
                        expose_value=False, callback=_remember,
                        help="Folder levels searched below each PATH; deeper folders are listed as skipped.")(func)


def discover_paths(path: str, single: bool = False) -> list[Path]:
    """The run directories under ``path``; exit 2 when there is none (or several where one is needed)."""
    from ..load.safe import discover_with_errors

    root = Path(path)
    if not root.exists() and not root.is_symlink():
        stderr(f"pimm-inspect: {path}: no such file or directory")
        sys.exit(EXIT_USAGE)
    run_dirs, errors = discover_with_errors(root, **_DISCOVERY)
    for folder, reason in errors:
        stderr(f"pimm-inspect: skipped {folder}: {reason}")
    if not run_dirs:
        stderr(f"pimm-inspect: no run found under {path} (looked for train.log, event files, run_metadata.json, "
               "model/ checkpoints, wandb/ run folders, trainer_state.json)")
        sys.exit(EXIT_USAGE)
    if single and len(run_dirs) > 1 and root in run_dirs:
        return [root]  # PATH is a run itself (its subfolders may be runs too, as TensorBoard's can)
    if single and len(run_dirs) > 1:
        stderr(f"pimm-inspect: {path} holds {len(run_dirs)} runs; name one of them:")
        for d in run_dirs[:20]:
            stderr(f"  {d}")
        sys.exit(EXIT_USAGE)
    return run_dirs


def iter_loaded(run_dirs: list[Path]) -> Iterator[Run]:
    """Load and analyse runs one at a time, so a tree of thousands never sits in memory at once."""
    from ..analysis import analyze
    from ..load.safe import load_safely

    show_progress = len(run_dirs) > 1 and sys.stderr.isatty()
    for i, run_dir in enumerate(run_dirs, start=1):
        if show_progress:
            click.echo(f"\rloading {i}/{len(run_dirs)} {run_dir.name[:40]:<40}", err=True, nl=False)
        yield analyze(load_safely(run_dir))
    if show_progress:
        click.echo("\r" + " " * 60 + "\r", err=True, nl=False)


def load_runs(path: str, single: bool = False) -> list[Run]:
    """Discover and load (with analysis) every run under ``path``; exit 2 when there is none."""
    return list(iter_loaded(discover_paths(path, single)))


def console(no_color: bool = False):
    """A Rich console writing to stdout (colour off when not a terminal or NO_COLOR is set)."""
    from rich.console import Console

    # Piped output has no terminal width: use a wide page rather than Rich's 80 columns.
    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 140
    return Console(no_color=no_color or None, highlight=False, soft_wrap=False, width=width)


json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document (schema_version 1).")


def stream_many(paths: tuple[str, ...]) -> tuple[Iterator[Run], Path]:
    """Runs under every PATH given ('.' when none), loaded lazily; output paths are relative to the base returned.

    Every PATH is discovered first (so a usage error exits before any output), then runs load one by one.
    """
    paths = paths or (".",)
    run_dirs = [d for path in paths for d in discover_paths(path)]
    return iter_loaded(run_dirs), Path(paths[0]) if len(paths) == 1 else Path(".")
