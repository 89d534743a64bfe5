"""The UI's start (``tui/start.py``): the collector is paused while the UI starts and back on, with what the start
made frozen, once the table's first pass is over; a forked child collects its own garbage whatever the parent did.
(What the pause saves is measured in bench/bench_runs_table.py: no timing here.)"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pimm_inspect.session.child import END, ForkedChild, Send

REPO = Path(__file__).resolve().parents[1]

STARTED = """
import gc, json, sys
from pathlib import Path
from pimm_inspect.session import Session
from pimm_inspect.tui import start
from pimm_inspect.tui.start import begin

assert gc.isenabled()
session = Session()
prefetch = begin(session, Path(sys.argv[1]))  # as pimm-inspect TREE does (cli/cmd_ui.py)
paused_at_start = not gc.isenabled()
import pimm_inspect.tui.app as app_module

app_module.SETTLE_S = 0.01
seen = {}


class Started(app_module.InspectApp):
    CSS_PATH = str(Path(app_module.__file__).with_name("pimm_inspect.tcss"))  # Textual cannot find a -c class's file

    def on_load_finished(self, message):
        seen["paused_when_filled"] = not gc.isenabled()
        super().on_load_finished(message)
        self.set_interval(0.01, self._resumed)

    def _resumed(self):
        if gc.isenabled():
            self.exit()


app = Started(sys.argv[1], follow_interval_s=0, session=session, prefetch=prefetch)
app.run(headless=True, size=(100, 30))
print(json.dumps({"paused_at_start": paused_at_start, "enabled_at_end": gc.isenabled(), **seen,
                  "frozen": gc.get_freeze_count(), "rows": len(app.runs_screen.table.runs)}))
"""


def test_the_collector_waits_for_the_first_pass_then_runs_again(tmp_path) -> None:
    """``pimm-inspect TREE`` starts with the collector off; the filled table turns it back on (a fresh process: the
    collector's state is the process's)."""
    seen = _started(STARTED, tmp_path, copies=4)
    assert seen["paused_at_start"] and seen["paused_when_filled"]
    assert seen["enabled_at_end"] and seen["frozen"] > 1000  # what the start made is never walked again
    assert seen["rows"] == 4


QUITS = """
import gc, json, sys
from pathlib import Path
from pimm_inspect.session import Session
from pimm_inspect.tui.start import begin

session = Session()
prefetch = begin(session, Path(sys.argv[1]))
import pimm_inspect.tui.app as app_module


class Quits(app_module.InspectApp):
    CSS_PATH = str(Path(app_module.__file__).with_name("pimm_inspect.tcss"))

    def on_load_finished(self, message):
        super().on_load_finished(message)
        self.call_after_refresh(self.exit)  # before the collector is back: nothing frozen yet


app = Quits(sys.argv[1], follow_interval_s=0, session=session, prefetch=prefetch)
app.run(headless=True, size=(100, 30))
print(json.dumps({"enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}))
"""


def test_quitting_freezes_what_the_ui_made(tmp_path) -> None:
    """The UI quits, and the process with it: everything is frozen, so the interpreter's collection at exit walks
    none of it (the collector may still be paused: the table was filled a moment ago)."""
    seen = _started(QUITS, tmp_path, copies=3)
    assert not seen["enabled"] and seen["frozen"] > 1000


def test_resume_leaves_a_collector_it_did_not_pause_alone() -> None:
    """An app a test starts (no ``begin``) never touches the collector: resuming or quitting does nothing, freezes
    nothing."""
    from pimm_inspect.tui import start

    assert gc.isenabled() and not start.collections_paused()
    frozen = gc.get_freeze_count()
    gc.disable()
    try:
        start.resume_collections()
        start.quitting()
        assert not gc.isenabled() and gc.get_freeze_count() == frozen
    finally:
        gc.enable()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_collects_although_its_parent_paused() -> None:
    """The child runs with its collector on, over its own objects only (what it inherited is frozen)."""
    def work(send: Send) -> None:
        send((gc.isenabled(), gc.get_freeze_count()))

    gc.disable()
    try:
        child = ForkedChild.start(work)
    finally:
        gc.enable()
    enabled, frozen = child.get(timeout=60)
    assert child.get(timeout=60) is END
    assert enabled and frozen > 1000


def _started(script: str, tmp_path: Path, copies: int) -> dict:
    """What ``script`` prints last (JSON), run as its own process on a quiet tree of ``copies`` copies (the collector's
    state is the process's)."""
    pytest.importorskip("textual")
    from tests.test_tui_table_cache import _quiet_tree

    tree = _quiet_tree(tmp_path, copies=copies)
    env = dict(os.environ, PYTHONPATH=str(REPO), PIMM_INSPECT_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", script, str(tree)], env=env, capture_output=True, text=True,
                         timeout=300, check=True, cwd=tmp_path)
    return json.loads(out.stdout.strip().splitlines()[-1])
