"""Issue 14 leaks in the UI: the Config tab's tree and every line of the Log tab, on the run with every leak planted."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from tests.hostile_support import leaky_run, planted_secrets  # noqa: E402
from tests.tui_support import opened, settle, until  # noqa: E402

pytestmark = pytest.mark.asyncio


def _labels(node) -> list[str]:
    out, stack = [], [node]
    while stack:
        current = stack.pop()
        out.append(current.label.plain if hasattr(current.label, "plain") else str(current.label))
        stack += list(current.children)
    return out


def _leaks(shown: str) -> dict[str, str]:
    return {name: value for name, value in planted_secrets().items() if value in shown}


async def test_config_tab_and_log_tab_mask_every_planted_secret(tmp_path):
    from textual.widgets import Tree

    from pimm_inspect.tui.widgets.log_view import LogView

    run = leaky_run(tmp_path)
    async with opened(run, (120, 36), tab="3") as (app, pilot):
        tree = app.screen.query_one("#config-tree", Tree)
        labels = "\n".join(_labels(tree.root))
        assert "config_py" in labels and "resolved_config" in labels and "wandb_config" in labels
        assert "lr" in labels and "AdamW" in labels, "harmless values stay"
        assert not _leaks(labels), _leaks(labels)
        await pilot.press("6")
        view = app.screen.query_one(LogView)
        await until(pilot, lambda: view.line_count > 0, what="the log tab's lines")
        await settle(pilot)
        lines = "\n".join(view.line_text(i) for i in range(view.line_count))
        assert "extra state {'password': '****', 'lr': 0.1}" in lines
        assert not _leaks(lines), _leaks(lines)


async def test_log_tab_masks_a_secret_after_a_line_continuation(tmp_path):
    """Was: the Log tab masked each line alone, so a script's long command echoed into train.log (``--wandb-key \\``
    then the key on the next line) showed the key in clear, while ``show`` and the report masked it. Now the lines
    are masked together with the lines before them, wherever the view starts."""
    import shutil

    from pimm_inspect.tui.widgets.log_view import LogView
    from tests.tui_support import RUNS

    secret = "Zq7" * 8
    run = tmp_path / "run"
    shutil.copytree(RUNS / "e2_crashed", run, symlinks=True)
    key_lines = ["b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
                 "QyNTUxOQAAACBSb2Y3ZmFrZWtleWZha2VrZXlmYWtla2V5ZmFrZWtleQAAAJgAAAAAAAAA"]
    with open(run / "train.log", "a", encoding="utf-8") as log:
        log.write(f"launch: pimm submit cfg.py \\\n  --wandb-key \\\n  {secret} \\\n  --lr 0.1\n")
        log.write("-----BEGIN OPENSSH " + "PRIVATE KEY-----\n" + "\n".join(key_lines) + "\n-----END OPENSSH "
                  + "PRIVATE KEY-----\nafter the key\n")
    async with opened(run, (120, 36), tab="6") as (app, pilot):
        view = app.screen.query_one(LogView)
        await until(pilot, lambda: view.line_count > 0, what="the log tab's lines")
        await settle(pilot)
        at = next(i for i in range(view.line_count) if "--wandb-key" in view.line_text(i))
        assert view.line_text(at + 1).strip() == "**** \\"
        view._cache.clear()  # the view read from the key's own line: the flag is only in the context before it
        view._read_lines(at + 1, 4)
        assert view.line_text(at + 1).strip() == "**** \\"
        assert view.line_text(at + 2).strip() == "--lr 0.1"
        assert all(secret not in view.line_text(i) for i in range(view.line_count))
        begin = next(i for i in range(view.line_count) if "PRIVATE" in view.line_text(i) or
                     view.line_text(i).strip() == "****" and i > at + 2)
        view._cache.clear()
        view._read_lines(begin + 2, 4)  # from inside the key: its BEGIN line is only in the context before
        shown = [view.line_text(i) for i in range(begin, begin + 5)]
        assert shown == ["****"] * 4 + ["after the key"], shown
        assert not any(part in "\n".join(view.line_text(i) for i in range(view.line_count)) for part in key_lines)
