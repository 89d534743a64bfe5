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

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f"
                      "\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb"
                      "\U000e0000-\U000e007f]")
"""C0 (except tab and newline), DEL, C1, line/paragraph separators, bidi controls (LRM, RLM, ALM, embeddings,
overrides, isolates) and the invisible characters that make two different names look the same (soft hyphen,
zero-width space/joiners, word joiner, invisible operators, BOM, fillers, tag characters)."""

_NAME_ESCAPE = re.compile("[\\\\\ud800-\udfff]")
"""What ``name_text`` escapes: the backslash itself and surrogates (undecodable bytes of file names)."""


def _name_escape(match: re.Match[str]) -> str:
    char = match.group(0)
    if char == "\\":
        return "\\\\"
    code = ord(char)
    return f"\\x{code - 0xdc00:02x}" if 0xdc80 <= code <= 0xdcff else f"\\u{code:04x}"


def name_text(name: str) -> str:
    """THE text of a name from the filesystem (a path, a file or folder name, a run id), on every surface.

    Unambiguous: a backslash is doubled and each byte that is not UTF-8 (``os.fsdecode``'s surrogate escape) is
    written ``\\xNN``, so a folder whose name holds the bytes ``ff fe`` (``run_\\xff\\xfe``) and one literally
    named ``run_\\xff\\xfe`` (``run_\\\\xff\\\\xfe``) never read the same. Names without either are unchanged.
    Text surfaces apply ``clean`` on top (control and invisible characters shown as escapes); JSON keeps those
    as the JSON value, written ``\\uXXXX``.
    """
    return _NAME_ESCAPE.sub(_name_escape, name) if _NAME_ESCAPE.search(name) else name


_SURROGATE = re.compile("[\ud800-\udfff]")


def encodable_text(text: str) -> str:
    """Text that always encodes as UTF-8: an undecodable byte of a file name as ``\\xNN``, a lone surrogate (a JSON
    ``\\udXXX`` escape) as ``\\uXXXX``, as ``name_text`` writes them; for text that is not a name (backslashes
    kept as they are)."""
    return _SURROGATE.sub(_name_escape, text) if _SURROGATE.search(text) else text


def clean_name(name: str) -> str:
    """A name for a text surface: ``name_text``, then every control or invisible character as an escape."""
    return clean(name_text(name), newlines=False)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON writes a character beyond the BMP as its UTF-16 surrogate pair
    return f"\\u{0xd800 + (code >> 10):04x}\\u{0xdc00 + (code & 0x3ff):04x}"


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
