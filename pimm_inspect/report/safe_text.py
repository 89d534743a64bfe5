"""Display-safe text: every string read from a run file is data, never a terminal control sequence or markup.

Strings from run files (tags, folder names, log lines, config values, pickle global names ...) can hold ESC,
BEL, OSC/CSI/DCS sequences or C1 controls that would set the terminal title, write the clipboard (OSC 52) or
move the cursor. ``clean`` turns each such character into a visible escape (``\\x1b``) so the data stays
readable and inert; ``data_text`` wraps the result in a Rich ``Text`` so it is never parsed as markup.
JSON output needs neither: the JSON encoder escapes control characters itself (``json_doc.dumps`` also
escapes C1 and the other characters below, which the encoder would otherwise pass through as UTF-8).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Rich is imported only when a Text is made: `--json` output needs clean_json alone
    from rich.text import Text

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
"""C0 (except tab and newline), DEL, C1, line/paragraph separators and bidi overrides."""


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group(0)):04x}"


def clean(value: object, newlines: bool = True) -> str:
    """``str(value)`` with control characters shown as escapes; ``newlines=False`` escapes ``\\n`` and ``\\t`` too."""
    text = value if isinstance(value, str) else str(value)
    text = _CONTROL.sub(_escape, text)
    if not newlines:
        text = text.replace("\n", "\\n").replace("\t", "\\t")
    return text


def clean_json(text: str) -> str:
    """Serialized JSON with every character ``clean`` escapes written as ``\\uXXXX`` (the same JSON value).

    Only valid on JSON text: those characters can only occur inside JSON strings, where the escape is legal.
    """
    return _CONTROL.sub(_json_escape, text)


def data_text(value: object, style: str = "", newlines: bool = True) -> Text:
    """A Rich ``Text`` of file-derived data: cleaned of control characters and never read as markup."""
    from rich.text import Text

    return Text(clean(value, newlines), style=style)


def shorten(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    if space > limit // 2:
        head = head[:space]
    return head.rstrip(" ,;:") + "…"
