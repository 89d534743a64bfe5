"""Display-safe text: every string read from a run file is data, never a terminal control sequence or markup.

Strings from run files (tags, folder names, log lines, config values, pickle global names ...) can hold ESC,
BEL, OSC/CSI/DCS sequences or C1 controls that would set the terminal title, write the clipboard (OSC 52) or
move the cursor. ``clean`` turns each such character into a visible escape (``\\x1b``) so the data stays
readable and inert; ``data_text`` wraps the result in a Rich ``Text`` so it is never parsed as markup.
JSON output needs neither: the JSON encoder escapes control characters itself.
"""

from __future__ import annotations

import re

from rich.text import Text

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
"""C0 (except tab and newline), DEL, C1, line/paragraph separators and bidi overrides."""


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(value: object, newlines: bool = True) -> str:
    """``str(value)`` with control characters shown as escapes; ``newlines=False`` escapes ``\\n`` and ``\\r`` too."""
    text = value if isinstance(value, str) else str(value)
    text = _CONTROL.sub(_escape, text)
    if not newlines:
        text = text.replace("\n", "\\n").replace("\t", "\\t")
    return text


def data_text(value: object, style: str = "", newlines: bool = True) -> Text:
    """A Rich ``Text`` of file-derived data: cleaned of control characters and never read as markup."""
    return Text(clean(value, newlines), style=style)
