"""Pilot tests of the runs table on the session's row cache (issues 20, 22 N24, 23): a warm tree's rows come from
the cache without reading a run, a refresh of an unchanged tree reads no run file, a big run read last is stored,
and no column jumps when it arrives."""

from __future__ import annotations

import os
import shutil
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("textual")

from textual.widgets import DataTable, Static  # noqa: E402

from pimm_inspect.session import Session, rows, staged  # noqa: E402
from pimm_inspect.session.store import codec  # noqa: E402
from pimm_inspect.tui import table_load  # noqa: E402
from pimm_inspect.tui.app import make_app  # noqa: E402
from tests.cache_support import age, spy_builds  # noqa: E402
from tests.test_tui_pilot import row_keys  # noqa: E402
from tests.train_log_support import write_big_log  # noqa: E402
from tests.tui_support import RUNS, drawn, settle, until  # noqa: E402

pytestmark = [pytest.mark.asyncio]
SIZE = (120, 36)
SOURCES = ("e2_clean", "e2_crashed", "hf_clean", "e0_legacy", "wandb_clean")


def _quiet_tree(tmp_path: Path, copies: int = 10) -> Path:
    """``copies`` fixture runs with every mtime a day old (no run looks live, every row may be stored)."""
    tree = tmp_path / "tree"
    for i in range(copies):
        shutil.copytree(RUNS / SOURCES[i % len(SOURCES)], tree / f"run_{i:02d}", symlinks=True)
    age(tree)
    return tree


def _decodes(monkeypatch) -> list[str]:
    """Every stored row detail (findings, attempts, command, config, metrics) decoded from now on."""
    decoded: list[str] = []
    real = codec.from_text
    monkeypatch.setattr(codec, "from_text", lambda text: decoded.append(text) or real(text))
    return decoded


class _Opens:
    """Files opened for reading under ``tree`` while ``on`` (an audit hook: any thread, any reader)."""

    hooked: list[_Opens] = []

    def __init__(self, tree: Path) -> None:
        self.tree = str(tree.resolve()) + os.sep
        self.seen: list[str] = []
        self.on = False
        if not _Opens.hooked:
            sys.addaudithook(_Opens._audit)  # audit hooks stay for the process: inert while no instance is on
        _Opens.hooked.append(self)

    @staticmethod
    def _audit(event: str, args: tuple) -> None:
        if event != "open" or not _Opens.hooked:
            return
        path, _mode, flags = (args + (None, None, None))[:3]
        if isinstance(flags, int) and flags & getattr(os, "O_PATH", 0):
            return  # where a path leads (real_path): nothing read
        for opens in _Opens.hooked:
            if opens.on and isinstance(path, str) and os.path.abspath(path).startswith(opens.tree):
                opens.seen.append(path)


def _shown(table: DataTable) -> dict[str, list[str]]:
    return {Path(k).name: [str(c) for c in table.get_row(k)] for k in row_keys(table)}


def _status(app) -> str:
    return str(app.screen.query_one("#runs-status", Static).render())


async def test_a_warm_tree_fills_the_table_from_the_row_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    tree = _quiet_tree(tmp_path)
    session = Session()
    cold = {row.root.name: row for row in session.rows(session.discover(tree))}  # what ls stores
    built, decoded = spy_builds(monkeypatch, rows, "build_row"), _decodes(monkeypatch)
    app = make_app(tree, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#runs-table", DataTable)
        shown = _shown(table)
        assert sorted(shown) == sorted(cold) and len(shown) == 10
        assert [shown[name][3] for name in sorted(shown)] == [cold[name].status for name in sorted(shown)]
        assert shown["run_01"][3] == "crashed" and shown["run_01"][-1] == "1E"  # counts of the stored row
        assert built == []  # no run was loaded: every row is the cached one
        assert decoded == []  # ... and no row's findings or config were even decoded for the table
        assert "loading" not in _status(app)


async def test_refreshing_an_unchanged_tree_reads_no_run_file(tmp_path, monkeypatch):
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    tree = _quiet_tree(tmp_path)
    opens = _Opens(tree)
    app = make_app(tree, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)  # the first pass stores every row
        table = app.screen.query_one("#runs-table", DataTable)
        before = _shown(table)
        built = spy_builds(monkeypatch, rows, "build_row")
        opens.on = True
        await pilot.press("r")
        await settle(pilot)
        opens.on = False
        assert opens.seen == [] and built == []  # stat checks and listings only
        assert _shown(table) == before and "loading" not in _status(app)
        # A run that changed is read again, and only that one.
        with open(tree / "run_00" / "train.log", "a") as log:
            log.write("[2026-07-15 09:05:00,000 INFO train.py line 1] one more line\n")
        age(tree / "run_00")
        opens.seen.clear()
        opens.on = True
        await pilot.press("r")
        await settle(pilot)
        opens.on = False
        assert built == [(tree / "run_00").absolute()]
        assert {Path(p).relative_to(tree.resolve()).parts[0] for p in opens.seen} == {"run_00"}


def _big_tree(tmp_path: Path) -> tuple[Path, Path]:
    tree = _quiet_tree(tmp_path, copies=3)
    big = tree / "aa_big"
    big.mkdir()
    write_big_log(big / "train.log", 2 << 20)
    age(big)
    return tree, big


class _Gate:
    """Holds ``CachingLoader.load_here`` (the big run's staged read) until released."""

    def __init__(self, monkeypatch) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        real = staged.CachingLoader.load_here

        def held(loader, path, *args, **kwargs):
            self.entered.set()
            assert self.release.wait(60), "the test never released the gate"
            return real(loader, path, *args, **kwargs)

        monkeypatch.setattr(staged.CachingLoader, "load_here", held)


async def test_a_big_run_read_last_is_stored_and_no_column_jumps_when_it_arrives(tmp_path, monkeypatch):
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(table_load, "BIG_RUN_BYTES", 1 << 20)
    tree, big = _big_tree(tmp_path)
    gate = _Gate(monkeypatch)
    app = make_app(tree, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one("#runs-table", DataTable)
        await until(pilot, lambda: gate.entered.is_set() and "loading 3/4" in _status(app)
                    and not table.flush_pending, what="every small run's row, the big one reading")
        await drawn(pilot)  # the columns measured for the rows shown (not a fixed pause)
        widths = {str(c.key.value): c.width for c in table.ordered_columns if c.key.value != "run"}
        assert "reading…" in _shown(table)["aa_big"]
        gate.release.set()
        await settle(pilot)
        assert _shown(table)["aa_big"][3] == "stopped"
        assert {str(c.key.value): c.width for c in table.ordered_columns if c.key.value != "run"} == widths
    stored = Session().stored_rows([big])
    assert big in stored and stored[big] == Session().row(big)  # the next ls or table serves it from the cache
    built = spy_builds(monkeypatch, rows, "build_row")
    app = make_app(tree, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:  # the gate is still in place: a second staged read would hang
        await settle(pilot)
        assert _shown(app.screen.query_one("#runs-table", DataTable))["aa_big"][3] == "stopped"
        assert built == []
