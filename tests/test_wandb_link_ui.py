"""The UI's ``o`` and ``y`` on W&B links built from run files (issue 21): only vetted links and commands."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

pytest.importorskip("textual")

from pimm_inspect.model import Run, WandbInfo  # noqa: E402
from pimm_inspect.tui import links  # noqa: E402
from pimm_inspect.tui.app import make_app  # noqa: E402
from tests.tui_support import RUNS, fixed_loader, settle  # noqa: E402

SIZE = (120, 36)
pytestmark = pytest.mark.asyncio


async def test_o_and_y_refuse_a_link_that_is_not_vetted(monkeypatch):
    # A Run built by hand with a bad link (the loader never makes one): the front end checks again.
    bad = "--proxy-server=evil.example https://wandb.ai/a/b/runs/c"

    def with_bad_link(path: Path) -> Run:
        return dataclasses.replace(fixed_loader(path), wandb=WandbInfo(run_ids=("c",), url=bad))

    opened: list[str] = []
    monkeypatch.setattr(links, "browser_available", lambda: True)
    monkeypatch.setattr(links.webbrowser, "open", lambda url: opened.append(url) or True)
    app = make_app(RUNS / "e2_rollback", loader=with_bad_link, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("o")
        await pilot.press("y")
        await settle(pilot)
        assert opened == [] and not getattr(app, "clipboard", "")
