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
from tests.tui_support import settle  # noqa: E402

pytestmark = pytest.mark.asyncio
RUNS = Path(__file__).resolve().parent.parent / "fixtures" / "runs"


async def _visit_every_tab(app, pilot) -> None:
    # settle: a curve drawn for the read run is superseded by the one for the checked run (an exclusive worker).
    await settle(pilot)
    for key in ("1", "2", "p", "x", "3", "4", "5", "enter", "escape", "6", "G", "1"):
        await pilot.press(key)
        await settle(pilot)


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
            await settle(pilot)
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


async def _assert_inert(pilot, where: str) -> str:
    """No control character from data in what the screen draws, no link, and nothing dangerous written."""
    from tests.tui_support import inert_screen

    text, _raw = await inert_screen(pilot, where)
    for word in ("BOLD", "LINK"):  # markup would have eaten the brackets: shown, they prove it was not parsed
        assert text.count(word) == text.count(f"]{word}"), f"{where}: {word} rendered without its markup text"
    return text


async def test_hostile_strings_are_inert_on_every_tab(tmp_path):
    """Tags, folder names, log lines, config values and file names with ESC/OSC/CSI/C1 and markup: shown as text."""
    import shutil

    from tests.tui_support import fixed_loader, hostile_run, settle

    root = tmp_path / "runs"
    root.mkdir()
    run_dir = hostile_run(root)
    shutil.copytree(RUNS / "e2_clean", root / "clean", symlinks=True)
    app = make_app(root, loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot)
        text = await _assert_inert(pilot, "runs table")
        assert "run\\x1b]0;T" in text and "\\x9b2J\\x9d0;t\\x9c" in text  # the name is shown, escaped
        table = app.screen.query_one("#runs-table")
        table.move_cursor(row=table.get_row_index(run_dir.as_posix()))
        await pilot.press("enter")
        await settle(pilot)
        seen: dict[str, str] = {}
        run_screen = app.screen
        for keys in (["1"], ["1", "pagedown"], ["2"], ["2", "full_stop", "full_stop"], ["2", "p"], ["2", "x"],
                     ["2", "x"], ["2", "z"], ["3"], ["3", "slash", *"evil", "enter"], ["3", "d"], ["4"], ["5"], ["5", "enter"], ["6"], ["6", "G"],
                     ["6", "slash", *"evil", "enter"], ["6", "w"], ["o"], ["y"], ["question_mark"]):
            for key in keys:
                await pilot.press(key)
                await settle(pilot)
            seen["+".join(keys)] = await _assert_inert(pilot, "+".join(keys))
            if app.screen is not run_screen:  # a modal (diff, finding, help): look, then close it
                await pilot.press("escape")
                await settle(pilot)
            assert app.screen is run_screen, f"{keys} left the run screen"
        # Every tag of the hostile event file is listed (escaped), and the Curves tab did not crash.
        curves = app.screen.query_one("#tag-list")
        prompts = [str(curves.get_option_at_index(i).prompt) for i in range(curves.option_count)]
        assert any("loss\\x1b]52;c;UFdORUQ=\\x1b\\" in p for p in prompts), prompts
        assert "[/x]" in prompts and "[bold red]BOLD[/]" in prompts
        await pilot.press("2")
        await settle(pilot)
        for index, prompt in enumerate(prompts):
            if "\\x" in prompt or "[" in prompt:  # draw each hostile tag, with the cursor readout
                curves.highlighted = index
                await settle(pilot)
                await pilot.press("full_stop")
                await settle(pilot)
                await _assert_inert(pilot, f"curves of {prompt}")
                assert app.screen.query_one("#curve-plot").spec.lines, f"{prompt} drew nothing"
        assert "evil \\x1b]52" in seen["6+slash+e+v+i+l+enter"], "the hostile log line is shown, escaped"
        assert "\\x1b]52" in seen["3+slash+e+v+i+l+enter"], "the hostile config value is shown, escaped"
        assert app.is_running
