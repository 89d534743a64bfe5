"""The UI over a read-only tree writes nothing; a malicious checkpoint opened in it never runs."""

from __future__ import annotations

import os
import pickle
import shutil
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("textual")

from pimm_inspect.tui.app import make_app  # noqa: E402
from tests.test_safety import snapshot  # noqa: E402

pytestmark = pytest.mark.asyncio
RUNS = Path(__file__).resolve().parent.parent / "fixtures" / "runs"


async def _visit_every_tab(app, pilot) -> None:
    for _ in range(100):
        await app.workers.wait_for_complete()
        await pilot.pause()
        if not any(w.is_running for w in app.workers):
            break
    for key in ("1", "2", "p", "x", "3", "4", "5", "enter", "escape", "6", "G", "1"):
        await pilot.press(key)
        await app.workers.wait_for_complete()
        await pilot.pause()


async def test_ui_writes_nothing_in_a_read_only_tree(tmp_path):
    root = tmp_path / "runs"
    for name in ("e2_rollback", "e3a_running", "wandb_resumed_offline", "hf_resumed"):
        shutil.copytree(RUNS / name, root / name, symlinks=True)
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            (Path(dirpath) / name).chmod(0o444)
        Path(dirpath).chmod(0o555)
    before = snapshot(root)
    try:
        app = make_app(root, follow_interval_s=0)
        async with app.run_test(size=(120, 36)) as pilot:
            for _ in range(100):
                await app.workers.wait_for_complete()
                await pilot.pause()
                if not any(w.is_running for w in app.workers):
                    break
            await pilot.press("enter")
            await _visit_every_tab(app, pilot)
        for name in ("e2_rollback", "hf_resumed"):
            app = make_app(root / name, follow_interval_s=0)
            async with app.run_test(size=(120, 36)) as pilot:
                await _visit_every_tab(app, pilot)
        assert snapshot(root) == before
    finally:
        for dirpath, _dirs, _files in os.walk(root):
            Path(dirpath).chmod(0o755)


class _Evil:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


async def test_malicious_checkpoint_in_the_ui_leaves_no_trace(tmp_path):
    run = tmp_path / "evil_run"
    (run / "model").mkdir(parents=True)
    marker = tmp_path / "pwned"
    payload = pickle.dumps({"epoch": 3, "state_dict": {}, "note": _Evil(marker)}, protocol=2)
    with zipfile.ZipFile(run / "model" / "model_last.pth", "w") as zf:
        zf.writestr("archive/data.pkl", payload)
        zf.writestr("archive/version", "3\n")
    app = make_app(run, follow_interval_s=0)
    async with app.run_test(size=(120, 36)) as pilot:
        await _visit_every_tab(app, pilot)
        screen = app.screen
        codes = {f.code for f in screen.run.findings} if hasattr(screen, "run") and screen.run else set()
    assert not marker.exists()
    assert "checkpoint.unsafe" in codes
