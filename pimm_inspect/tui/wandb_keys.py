"""What ``o`` and ``y`` do, on the Run screen and on the runs table's cursor row: open or copy the run's W&B link
(or its ``wandb sync`` command), or say why there is none."""

from __future__ import annotations

from typing import Any

from textual.app import App

from ..model import Run
from ..report.safe_text import clean, encodable_text
from . import links
from .facts import no_link_reason, wandb_target


def open_wandb(app: App[Any], run: Run) -> None:
    """Open the W&B run in a browser when one is available, else say how to get there."""
    url, _command = wandb_target(run)
    if url is None:
        app.notify(no_link_reason(run), severity="warning", timeout=10)
    elif links.open_in_browser(url):
        app.notify(f"opened {url}")
    else:
        app.notify(f"no browser here (SSH?): {url}  (y copies it)", severity="warning", timeout=8)


def copy_wandb(app: App[Any], run: Run) -> None:
    """Copy the W&B link (or the ``wandb sync`` command) via the terminal clipboard (OSC 52)."""
    url, command = wandb_target(run)
    text = links.copyable(url or command)  # only a vetted link or sync command reaches the clipboard
    if not text:
        app.notify(f"nothing to copy: {no_link_reason(run)}", severity="warning", timeout=10)
        return
    text = encodable_text(text)  # a surrogate (a name that is not UTF-8) would crash the clipboard's encoder
    app.copy_to_clipboard(text)
    app.notify(clean(f"copied: {text}"), markup=False)
