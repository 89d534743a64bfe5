"""Pilot tests of the UI answering at once: the staged run screen, the streaming runs table, cancellation."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("textual")
pytest.importorskip("textual_plotext")

from textual.widgets import DataTable, Static  # noqa: E402
from textual.worker import WorkerState  # noqa: E402

from pimm_inspect.sources.tensorboard import reader as tb_events  # noqa: E402
from pimm_inspect.session import staged as loader_module  # noqa: E402
from pimm_inspect.tui import table_load  # noqa: E402
from pimm_inspect.tui.app import make_app  # noqa: E402
from pimm_inspect.session.staged import CachingLoader  # noqa: E402
from pimm_inspect.tui.screens.run import RunScreen  # noqa: E402
from pimm_inspect.tui.screens.runs import RunsScreen  # noqa: E402
from tests.test_tui_pilot import plain, row_keys  # noqa: E402
from tests.tui_support import FIXED_NOW, RUNS, fixed_loader, settle, until, utc  # noqa: E402,F401
from tests.train_log_support import write_big_log  # noqa: E402

pytestmark = [pytest.mark.asyncio, pytest.mark.usefixtures("utc")]
SIZE = (120, 36)
ROLLBACK = RUNS / "e2_rollback"


class Gate:
    """Blocks a reader until released, counting the calls it saw (on any thread)."""

    def __init__(self, wrapped, only: str | None = None) -> None:
        self.wrapped = wrapped
        self.only = only
        self.calls: list[str] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, path, *args, **kwargs):
        target = path if isinstance(path, (str, Path)) else path.root  # a path, or a Run (analyze)
        if self.only is None or self.only in str(target):
            self.calls.append(Path(target).name)
            self.entered.set()
            assert self.release.wait(60), "the test never released the gate"
        return self.wrapped(path, *args, **kwargs)


def title(app) -> str:
    return str(app.screen.query_one("#run-title", Static).render())


def progress(app) -> str:
    line = app.screen.query_one("#run-progress", Static)
    return str(line.render()) if line.display else ""


async def test_the_header_comes_before_the_full_read_then_tags_then_findings(monkeypatch):
    gate = Gate(tb_events.read_event_file)
    monkeypatch.setattr(tb_events, "read_event_file", gate)  # the full read waits at the first event file
    checks = Gate(loader_module.analyze)
    monkeypatch.setattr(loader_module, "analyze", checks)  # and then before the checks
    app = make_app(ROLLBACK, loader=CachingLoader(clock=lambda: FIXED_NOW), follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, gate.entered.is_set, what="the full read")
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await until(pilot, lambda: "≥1 attempt(s)" in title(app) and "event files" in progress(app),
                    what="the quick stage's header and the progress of the read")
        # What the tail and the listing give, with nothing read in full yet:
        assert title(app) == "e2_rollback  pimm  finished  ≥1 attempt(s)  step ≥100"
        identity = plain(screen.query_one("#ov-identity", Static))
        assert "scalar tags  reading…" in identity and "last step    ≥100" in identity
        assert progress(app).startswith("reading event files 0/2, ")
        assert "of " in progress(app) and "KB" in progress(app)
        assert screen.run is None and screen.query_one("#ov-provenance", Static).content  # provenance already
        gate.release.set()
        await until(pilot, checks.entered.is_set, what="the checks")
        await until(pilot, lambda: screen.run is not None, what="the read run")
        # Tags, curves and attempts now; the checks still running:
        assert title(app) == "e2_rollback  pimm E2  finished  2 attempt(s)"
        identity = plain(screen.query_one("#ov-identity", Static))
        assert "scalar tags  14" in identity and "findings     running the checks…" in identity
        assert progress(app).startswith("running the checks…")
        assert not screen.analysed
        assert "running the checks…" in str(screen.query_one("#findings-table", DataTable).get_row_at(0)[-1])
        checks.release.set()
        await settle(pilot)
        assert screen.analysed and progress(app) == ""
        identity = plain(screen.query_one("#ov-identity", Static))
        assert "findings     0 error, 2 warning" in identity and "last step" not in identity
        assert len(gate.calls) == 2  # each event file read once


async def _tree(tmp_path: Path, names: dict[str, Path]) -> Path:
    tree = tmp_path / "tree"
    for name, source in names.items():
        shutil.copytree(source, tree / name, symlinks=True)
    return tree


async def test_leaving_the_run_screen_stops_its_read(tmp_path, monkeypatch):
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", "off")  # the second read of "a" must read its files again
    tree = await _tree(tmp_path, {"a": ROLLBACK, "b": RUNS / "e2_clean"})
    app = make_app(tree, loader=CachingLoader(clock=lambda: FIXED_NOW), follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        gate = Gate(tb_events.read_event_file, only="/a/")
        monkeypatch.setattr(tb_events, "read_event_file", gate)
        models: list[str] = []
        from pimm_inspect.sources.checkpoint import reader as checkpoint

        real_model_dir = checkpoint.read_model_dir
        monkeypatch.setattr(checkpoint, "read_model_dir",
                            lambda model, root: models.append(str(root)) or real_model_dir(model, root))
        table = app.screen.query_one("#runs-table", DataTable)
        table.move_cursor(row=table.get_row_index((tree / "a").as_posix()))
        await pilot.press("enter")
        await until(pilot, gate.entered.is_set, what="the run screen's read")
        screen = app.screen
        assert isinstance(screen, RunScreen)
        worker = next(w for w in app.workers if w.group == "run-load")
        await pilot.press("escape")  # leave while the first of two event files is being read
        assert isinstance(app.screen, RunsScreen)
        gate.release.set()
        await settle(pilot)
        assert worker.state == WorkerState.CANCELLED
        assert len(gate.calls) == 1  # the second event file was never read
        assert not [m for m in models if m.endswith("/a")]  # nor the checkpoints after it
        assert screen.run is None


async def test_reloading_cancels_the_load_it_supersedes(monkeypatch):
    gate = Gate(tb_events.read_event_file)
    monkeypatch.setattr(tb_events, "read_event_file", gate)
    app = make_app(ROLLBACK, loader=CachingLoader(clock=lambda: FIXED_NOW), follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, gate.entered.is_set, what="the first read")
        first = next(w for w in app.workers if w.group == "run-load")
        await pilot.press("r")  # a second load starts; the first is cancelled
        gate.release.set()
        await settle(pilot)
        assert first.state == WorkerState.CANCELLED
        assert app.screen.analysed
        assert len(gate.calls) == 1 + 2  # the first load stopped after its first file; the second read both


needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")


@needs_fork
async def test_a_superseded_prefetch_child_is_killed(monkeypatch):
    if threading.active_count() != 1:
        pytest.skip("another thread is running: the loader does not fork then, by design")

    def stuck(run):  # the child (forked with this in place) never finishes its checks
        time.sleep(120)

    loader = CachingLoader(clock=lambda: FIXED_NOW)
    monkeypatch.setattr(loader_module, "analyze", stuck)
    pid = loader.prefetch(ROLLBACK)
    monkeypatch.undo()  # the parent checks as usual
    assert pid is not None
    app = make_app(ROLLBACK, loader=loader, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await until(pilot, lambda: screen.run is not None, what="the child's read run")
        assert not screen.analysed and _alive(pid)  # the child is in its (endless) checks
        await pilot.press("r")  # a reload supersedes the child's load
        await until(pilot, lambda: not _alive(pid), what="the child to be killed")
        await settle(pilot)
        assert screen.analysed and "findings     0 error, 2 warning" in plain(screen.query_one("#ov-identity", Static))


@needs_fork
async def test_quitting_kills_the_prefetch_child(monkeypatch):
    if threading.active_count() != 1:
        pytest.skip("another thread is running: the loader does not fork then, by design")
    loader = CachingLoader(clock=lambda: FIXED_NOW)
    monkeypatch.setattr(loader_module, "analyze", lambda run: time.sleep(120))
    pid = loader.prefetch(ROLLBACK)
    monkeypatch.undo()
    app = make_app(ROLLBACK, loader=loader, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.screen.run is not None, what="the child's read run")
        assert _alive(pid)
    deadline = time.monotonic() + 60  # a hang guard: the kill is prompt, a busy machine may not be
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (a killed child is reaped by the loader)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False  # gone (reading /proc/PID/stat of a process reaped after the open raises ESRCH)


async def test_the_runs_table_streams_rows_and_progress(tmp_path):
    tree = await _tree(tmp_path, {f"run_{i:02d}": RUNS / "e2_clean" for i in range(40)})
    gate = Gate(fixed_loader, only="run_35")
    app = make_app(tree, loader=gate, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, gate.entered.is_set, what="the load to reach run_35")
        screen = app.screen
        table = screen.query_one("#runs-table", DataTable)
        status = lambda: str(screen.query_one("#runs-status", Static).render())  # noqa: E731
        await until(pilot, lambda: not table.flush_pending and table.row_count == 40 and "35/40" in status(),
                    what="every row, and the count of those read")
        assert "40 run(s)" in status() and "loading 35/40…" in status()
        loaded = [k for k in row_keys(table) if str(table.get_row(k)[3]) == "finished"]
        waiting = [k for k in row_keys(table) if str(table.get_row(k)[3]) == "loading…"]
        assert len(loaded) == 35 and len(waiting) == 5  # the first 35 show their facts already
        assert Path(waiting[0]).name == "run_35"
        gate.release.set()
        await settle(pilot)
        assert all(str(table.get_row(k)[3]) == "finished" for k in row_keys(table))
        assert "loading" not in str(screen.query_one("#runs-status", Static).render())


async def test_a_big_run_shows_its_tail_and_does_not_hold_up_the_others(tmp_path, monkeypatch):
    tree = await _tree(tmp_path, {name: RUNS / name for name in ("e2_clean", "e2_crashed", "hf_clean")})
    (tree / "aa_big").mkdir()
    facts = write_big_log(tree / "aa_big" / "train.log", 2 << 20)
    monkeypatch.setattr(table_load, "BIG_RUN_BYTES", 1 << 20)
    gate = Gate(fixed_loader, only="aa_big")
    app = make_app(tree, loader=gate, follow_interval_s=0)
    async with app.run_test(size=(200, 40)) as pilot:
        await until(pilot, gate.entered.is_set, what="the big run's read")
        table = app.screen.query_one("#runs-table", DataTable)
        status = app.screen.query_one("#runs-status", Static)
        # The count comes after every other run's row (messages are handled in order): then the rows are final.
        await until(pilot, lambda: "loading 3/4" in str(status.render()) and not table.flush_pending, what="the rows")
        rows = {Path(k).name: [str(c) for c in table.get_row(k)] for k in row_keys(table)}
        # Every other run is read although aa_big comes first in the tree:
        assert [rows[n][3] for n in ("e2_clean", "e2_crashed", "hf_clean")] == ["finished", "crashed", "finished"]
        assert rows["aa_big"][2:6] == ["pimm", "stopped", "≥1", f"≥{facts['steps']}"]  # from its tail
        assert "reading…" in rows["aa_big"]
        # Sorted by name, a row keeps its place while its run is read (it does not sink below the read ones):
        assert [Path(k).name for k in row_keys(table)] == ["aa_big", "e2_clean", "e2_crashed", "hf_clean"]
        gate.release.set()
        await settle(pilot)
        row = [str(c) for c in table.get_row((tree / "aa_big").as_posix())]
        assert row[2:6] == ["pimm E1", "stopped", "1", str(facts["steps"])]


async def test_refresh_cancels_the_pass_it_supersedes(tmp_path):
    tree = await _tree(tmp_path, {f"run_{i:02d}": RUNS / "e2_clean" for i in range(36)})
    calls: list[str] = []
    blocked = threading.Event()
    release = threading.Event()

    def loader(path: Path):
        calls.append(path.name)
        if path.name == "run_33" and not blocked.is_set():  # the first pass only
            blocked.set()
            release.wait(60)
        return fixed_loader(path)

    app = make_app(tree, loader=loader, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, blocked.is_set, what="the first pass to reach run_33")
        await pilot.press("r")
        await until(pilot, lambda: calls.count("run_35") == 1, what="the second pass to finish")
        release.set()
        await settle(pilot)
        # The first pass read run_00 .. run_33 and stopped; the second read all 36.
        assert len(calls) == 34 + 36
        assert "loading" not in str(app.screen.query_one("#runs-status", Static).render())


async def test_staged_screen_strings_are_data(tmp_path, monkeypatch):
    """The quick stage's header and progress line show a hostile folder name as text, never as markup or controls."""
    from tests.tui_support import DANGEROUS_OUTPUT, hostile_run, rendered

    run = hostile_run(tmp_path)
    gate = Gate(tb_events.read_event_file)
    monkeypatch.setattr(tb_events, "read_event_file", gate)
    app = make_app(run, loader=CachingLoader(clock=lambda: FIXED_NOW), follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "attempt(s)" in title(app) and "reading event files" in progress(app),
                    what="the quick header and the read's progress")
        # The widgets hold the line before the compositor lays it out (it was hidden): wait for the drawn screen too.
        await until(pilot, lambda: "reading event files" in rendered(app)[0], what="the progress line drawn")
        text, raw, _ = rendered(app)
        assert "[bold red]BOLD" in text and "reading event files" in text
        assert not any(seq in raw for seq in DANGEROUS_OUTPUT)
        gate.release.set()
        await settle(pilot)


async def test_the_progress_line_counts_the_bytes_of_a_big_log_as_they_are_read(tmp_path, monkeypatch):
    """Issue 22 N15: the line stayed at ``0 B of 294.8 MB`` for the whole read of one big train.log."""
    import re

    from pimm_inspect.sources import read_progress

    run = tmp_path / "big"
    run.mkdir()
    write_big_log(run / "train.log", 6 << 20, mixed=True)
    offsets: list[int] = []
    halfway, release = threading.Event(), threading.Event()
    real = read_progress.advanced

    def advanced(offset: int, so_far=None) -> None:
        real(offset, so_far)
        offsets.append(offset)
        if len(offsets) == 3:  # the reader is halfway through the log: hold it there
            halfway.set()
            assert release.wait(60), "the test never released the reader"

    monkeypatch.setattr(read_progress, "advanced", advanced)
    loader = CachingLoader(clock=lambda: FIXED_NOW, read_block_bytes=1 << 20)  # six blocks
    app = make_app(run, loader=loader, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, halfway.is_set, what="the reader halfway")
        pattern = re.compile(r"reading train\.log: ([\d.]+) MB of ([\d.]+) MB")
        await until(pilot, lambda: pattern.search(progress(app)) is not None,
                    what=f"bytes read on the progress line: {progress(app)!r}")
        done = pattern.search(progress(app))
        assert done is not None
        assert 1.5 <= float(done.group(1)) <= 3.5 < float(done.group(2))  # halfway through a 6 MiB log
        release.set()
        await until(pilot, lambda: app.screen.run is not None, what="the read run")
        await settle(pilot)
    assert len(offsets) >= 6  # the full read told every block
