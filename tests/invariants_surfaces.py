"""The surfaces of a run for the cross-view invariants: the CLI's JSON documents and the API's run, read once.

``gather(tree)`` runs ``show``/``ls``/``check --json`` over the whole tree (one call each), then per run ``export
--policy all --format json`` (with and without ``--all-sources``), ``config --json`` and ``url --json`` through
click's CliRunner, and loads the run with ``pimm_inspect.load_run``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from click.testing import CliRunner

import pimm_inspect
from pimm_inspect.cli.main import cli
from pimm_inspect.model import Run


@dataclass
class Check:
    """One invariant checked on one run: ``ok``, and when not, the evidence (values each surface gave, files)."""

    invariant: str
    run: str
    ok: bool
    detail: str = ""


@dataclass
class Surfaces:
    """Everything the surfaces said about one run."""

    root: Path
    rel: str
    """The run's path relative to the tree root (the id of its checks)."""
    run: Run
    """The API's run (``pimm_inspect.load_run``)."""
    show: dict[str, Any]
    ls: dict[str, Any]
    check: dict[str, Any]
    export_rows: list[dict[str, Any]] | None
    """Rows of ``export --policy all --format json``; None when export failed (exit code in ``errors``)."""
    every_rows: list[dict[str, Any]] | None
    config: dict[str, Any] | None
    """``config RUN --json``; None when the run has no config document (exit 2)."""
    url: dict[str, Any] | None = None
    """``url RUN --json`` (exit 0 or 1)."""
    errors: list[str] = field(default_factory=list)
    """Commands that failed unexpectedly (exit code and stderr)."""


def invoke(*args: object) -> tuple[int, str, str]:
    """Run the CLI in-process: (exit code, stdout, stderr)."""
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _by_root(doc: dict[str, Any], base: Path) -> dict[Path, dict[str, Any]]:
    return {(base / entry["path"]).resolve(): entry for entry in doc["runs"]}


def gather(tree: Path, run_dirs: list[Path] | None = None,
           progress: Callable[[int, int, Path], None] | None = None) -> Iterator[Surfaces]:
    """The surfaces of every run under ``tree`` (or of ``run_dirs``): show, ls and check over the whole tree in one
    call each, then per run ``export --policy all --format json`` and ``config --json``, and the API's run."""
    tree = tree.resolve()
    dirs = [Path(d).resolve() for d in (run_dirs if run_dirs is not None else pimm_inspect.discover(tree))]
    whole: dict[str, dict[Path, dict[str, Any]]] = {}
    for command, extra in (("show", ()), ("ls", ()), ("check", ("--fail-on", "never"))):
        code, out, err = invoke(command, tree, "--json", *extra)
        assert code == 0, f"{command} {tree} --json exited {code}: {err[-2000:]}"
        whole[command] = _by_root(json.loads(out), tree)
    for i, root in enumerate(dirs, start=1):
        if progress is not None:
            progress(i, len(dirs), root)
        errors: list[str] = []
        missing = [c for c in whole if root not in whole[c]]
        if missing:
            errors.append(f"{', '.join(missing)} --json over {tree} did not list this run")
        code, out, err = invoke("export", root, "--policy", "all", "--format", "json", "-o", "-")
        rows = json.loads(out) if code == 0 else None
        if code != 0 and whole["show"].get(root, {}).get("scalars"):
            errors.append(f"export exited {code}: {err.strip()[-500:]}")
        code, out, err = invoke("export", root, "--policy", "all", "--all-sources", "--format", "json", "-o", "-")
        every = json.loads(out) if code == 0 else None
        code, out, err = invoke("config", root, "--json")
        config = json.loads(out) if code == 0 else None
        if code not in (0, 2):
            errors.append(f"config --json exited {code}: {err.strip()[-500:]}")
        code, out, err = invoke("url", root, "--json")
        url = json.loads(out) if code in (0, 1) and out.strip() else None
        if url is None:
            errors.append(f"url --json exited {code}: {err.strip()[-500:]}")
        yield Surfaces(root=root, rel=os.path.relpath(root, tree), run=pimm_inspect.load_run(root),
                       show=whole["show"].get(root, {}), ls=whole["ls"].get(root, {}),
                       check=whole["check"].get(root, {}), export_rows=rows, every_rows=every, config=config,
                       url=url, errors=errors)
