"""Shared by the UI tests: the fixture paths, a loader with a fixed clock, and waiting for workers."""

from __future__ import annotations

import time
from contextlib import asynccontextmanager
from pathlib import Path

from textual.worker import WorkerCancelled

from pimm_inspect.analysis import analyze
from pimm_inspect.load.assemble import load_run
from pimm_inspect.model import Run

REPO = Path(__file__).resolve().parent.parent
RUNS = REPO / "fixtures" / "runs"
FIXED_NOW = 4102444800.0
"""2100-01-01: no fixture looks live because of fresh mtimes, so results do not depend on the clock."""


def fixed_loader(path: Path) -> Run:
    """The default loader with a fixed clock."""
    return analyze(load_run(path, now=FIXED_NOW))


async def settle(pilot) -> None:
    """Wait until every worker (loading, curves, log index) is done and its messages are handled."""
    for _ in range(200):
        try:
            await pilot.app.workers.wait_for_complete()
        except WorkerCancelled:
            # An exclusive worker (curves, log index, follow reload) was superseded while we waited:
            # that is the app working as designed, so wait for its successor on the next round.
            pass
        await pilot.pause()
        if not any(w.is_running for w in pilot.app.workers):
            # Messages a finished worker posted last (LoadFinished -> re-sort) may still be queued.
            for _ in range(3):
                await pilot.pause()
            await _tables_laid_out(pilot)
            if not any(w.is_running for w in pilot.app.workers):
                return


async def _tables_laid_out(pilot) -> None:
    """Wait until every DataTable has measured its rows (it does so when idle, after a re-sort rebuilt it) and the
    runs table has put its waiting rows on screen (it flushes them a few times a second)."""
    for _ in range(100):
        if not _tables_pending(pilot):
            return
        await pilot.pause(0.02)


def _tables_pending(pilot) -> bool:
    """A DataTable on screen has rows to measure or waiting rows to put on screen."""
    from textual.widgets import DataTable

    return any(getattr(t, "_require_update_dimensions", False) or getattr(t, "flush_pending", False)
               for t in pilot.app.screen.query(DataTable))


async def until(pilot, condition, timeout_s: float = 60.0, what: str = "") -> None:
    """Pause the pilot until ``condition()`` holds; fail after ``timeout_s``, a hang guard generous enough for a
    busy 2-core CI machine (a test waits for a state, never for a fixed time)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what or condition}")
        await pilot.pause(0.02)


async def drawn(pilot, condition=None, timeout_s: float = 60.0, what: str = "") -> str:
    """The plain text of the current screen once it is drawn: the screen has laid out and painted every change it
    was asked for (a widget can hold new content a frame before the compositor shows it) and, if given,
    ``condition(text)`` holds. A widget whose size depends on its content is laid out again after it renders,
    so the text must also read the same twice in a row."""
    deadline = time.monotonic() + timeout_s
    previous = None
    while True:
        await pilot.pause()
        screen = pilot.app.screen
        if not (_tables_pending(pilot) or screen._layout_required or screen._repaint_required
                or screen._scroll_required or screen._recompose_required or screen._dirty_widgets):
            text = rendered(pilot.app)[0]
            if text == previous and (condition is None or condition(text)):
                return text
            previous = text
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for the screen to show {what or condition}")


@asynccontextmanager
async def opened(path: Path, size: tuple[int, int], tab: str | None = None):
    """The app on ``path`` (fixed clock, no live follow), settled, on run tab ``tab`` if given: (app, pilot)."""
    from pimm_inspect.tui.app import make_app

    app = make_app(path, loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        if tab is not None:
            await pilot.press(tab)
            await settle(pilot)
        yield app, pilot


# -- hostile input: every string a run file can carry, with terminal controls and Rich markup ------------------

OSC52 = "\x1b]52;c;UFdORUQ=\x1b\\"
"""Writes 'PWNED' to the clipboard of a terminal that honours OSC 52."""
HOSTILE = {
    "osc52": OSC52,
    "title": "\x1b]0;TITLE\x07",
    "csi": "\x1b[2J\x1b[31;1m",
    "c1": "\x9b2J\x9d0;t\x9c",
    "dcs": "\x1bP+q544e\x1b\\",
    "close": "[/x]",
    "bold": "[bold red]BOLD[/]",
    "link": "[link=https://evil.example]LINK[/link]",
}
"""Terminal injections and markup; each must reach the screen as visible, inert text."""
DANGEROUS_OUTPUT = ("\x1b]", "\x07", "\x1bP", "\x1b\\", "\x1b[2J", "\x1b[31;1m", "\x9b", "\x9d", "\x9c")
"""Sequences (and C1 bytes) the UI itself never writes, so any in the terminal output came from data."""


def hostile_run(parent: Path) -> Path:
    """A copy of e2_rollback whose folder name, tags, log lines, config values and file names are all hostile."""
    import json
    import shutil

    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    root = parent / f"run{HOSTILE['title']}[bold red]BOLD{HOSTILE['c1']}"  # no "/" in a file name
    shutil.copytree(RUNS / "e2_rollback", root, symlinks=True)
    tags = [f"loss{HOSTILE['osc52']}", HOSTILE["close"], HOSTILE["bold"], HOSTILE["link"],
            f"x{HOSTILE['c1']}", f"y{HOSTILE['dcs']}{HOSTILE['csi']}"]
    # The event files of e2_rollback start at 1784212209: write the hostile tags inside the run's own time.
    writer = EventFileWriter(str(root), max_queue_size=1000, flush_secs=3600)
    for step in range(1, 31):
        values = [summary_pb2.Summary.Value(tag=t, simple_value=float(step) / (i + 1)) for i, t in enumerate(tags)]
        writer.add_event(event_pb2.Event(wall_time=1784212210.0 + step, step=step,
                                         summary=summary_pb2.Summary(value=values)))
    writer.close()
    log = root / "train.log"
    lines = log.read_text().splitlines(keepends=True)
    evil = "".join(HOSTILE.values())
    for i, line in enumerate(lines):
        if "Train: [1/5][10/20]" in line:
            lines[i] = line.rstrip("\n") + f" {HOSTILE['close']}: 0.5 q{HOSTILE['csi']}: 0.25\n"
            lines.insert(i + 1, f"[2026-07-16 14:30:18,500 WARNING train.py line 9] evil {evil}\n")
            lines.insert(i + 2, f"[2026-07-16 14:30:18,501 ERROR train.py line 9] {HOSTILE['bold']} {OSC52}\n")
            break
    log.write_text("".join(lines))
    config = json.loads((root / "resolved_config.json").read_text())
    config["evil"] = evil
    config[f"key{HOSTILE['close']}{HOSTILE['osc52']}"] = {"nested": HOSTILE["link"]}
    (root / "resolved_config.json").write_text(json.dumps(config))
    meta = json.loads((root / "run_metadata.json").read_text())
    meta.update(host=f"node{HOSTILE['title']}", git_commit=f"abc{HOSTILE['csi']}",
                launch_command=f"pimm submit {HOSTILE['bold']} {OSC52}")
    (root / "run_metadata.json").write_text(json.dumps(meta))
    (root / "config.py").write_text((root / "config.py").read_text() + f"\nevil = {evil!r}\n# {evil}\n")
    ckpt = root / "model" / "model_best.pth"
    shutil.copyfile(ckpt, root / "model" / f"epoch_3{HOSTILE['osc52']}[bold].pth")
    return root


def rendered(app) -> tuple[str, str, list]:
    """(plain text, raw terminal data, segments) of everything the current screen would draw now."""
    from textual._compositor import LayoutUpdate

    compositor = app.screen._compositor
    strips = compositor.render_strips()
    segments = [segment for strip in strips for segment in strip]
    update = compositor.render_full_update()
    raw = LayoutUpdate(update.strips, update.region).render_segments(app.console)
    text = "\n".join("".join(s.text for s in strip) for strip in strips)
    return text, raw, segments


async def inert_screen(pilot, where: str) -> tuple[str, str]:
    """(text, raw) of the settled screen, asserting that no control character from data is drawn, no segment carries a
    link, and no dangerous sequence reaches the terminal (the safety tests' shared part; each adds its own checks)."""
    await drawn(pilot)  # what the screen shows once every change is laid out, not a frame before
    text, raw, segments = rendered(pilot.app)
    for segment in segments:
        bad = [c for c in segment.text if ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f]
        assert not bad, f"{where}: control characters {bad!r} drawn in {segment.text!r}"
        assert segment.style is None or not segment.style.link, f"{where}: a link from data: {segment.text!r}"
    for sequence in DANGEROUS_OUTPUT:
        assert sequence not in raw, f"{where}: {sequence!r} reached the terminal"
    return text, raw


import pytest  # noqa: E402


@pytest.fixture(autouse=False)
def utc(monkeypatch):
    """The viewer's zone fixed to UTC, so wall-clock labels do not depend on the machine running the tests."""
    import time

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()
