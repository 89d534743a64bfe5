"""Opening and copying a run's W&B link from the terminal, safely over SSH.

What reaches the browser or the clipboard is checked again here against the link rules
(``sources.wandb.link_rules``): only an ``http(s)://`` link with a valid host and no userinfo is opened (so the
browser program, which ``webbrowser`` starts as ``<browser> <url>``, never gets a word starting with ``-``), and
only such a link or a ``wandb sync`` command naming absolute, shell-quoted paths is copied.
"""

from __future__ import annotations

import os
import sys
import webbrowser

from ..sources.wandb.link_rules import vetted_command, vetted_link


def browser_available() -> bool:
    """True when a graphical browser can be opened from here (a console browser would take over the TUI)."""
    graphical = bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    local_desktop = sys.platform in ("darwin", "win32") and not os.environ.get("SSH_CONNECTION")
    if not (graphical or local_desktop):
        return False
    try:
        webbrowser.get()
    except webbrowser.Error:
        return False
    return True


def open_in_browser(url: str) -> bool:
    """Open a vetted W&B link in the user's browser; False when that did not happen (or the link is refused)."""
    if not vetted_link(url) or not url.startswith(("https://", "http://")):
        return False  # never an option-like or non-web argument to the browser program
    if not browser_available():
        return False
    try:
        return bool(webbrowser.open(url))
    except webbrowser.Error:
        return False


def copyable(text: str | None) -> str | None:
    """``text`` when it is a vetted link or sync command (what ``y`` may put on the clipboard), else None."""
    if text and (vetted_link(text) or vetted_command(text)):
        return text
    return None
