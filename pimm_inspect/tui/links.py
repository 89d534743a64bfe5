"""Opening and copying a run's W&B link from the terminal, safely over SSH."""

from __future__ import annotations

import os
import sys
import webbrowser


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
    """Open a URL in the user's browser; False when that did not happen."""
    if not browser_available():
        return False
    try:
        return bool(webbrowser.open(url))
    except webbrowser.Error:
        return False
