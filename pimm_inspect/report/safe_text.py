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
from collections.abc import Sequence
from typing import TYPE_CHECKING

# The one escape of names (and of undecodable bytes in any text) lives at the package root, below every surface that
# writes names (the Python API's DataFrames included); text and JSON surfaces take it from here.
from ..names import encodable_text as encodable_text, name_text as name_text

if TYPE_CHECKING:  # Rich is imported only when a Text is made: `--json` output needs clean_json alone
    from rich.text import Text

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\xa0\xad\u034f\u061c\u115f\u1160\u1680\u17b4\u17b5"
                      "\u180b-\u180f\u2000-\u200f\u2028-\u202f\u205f-\u206f\u2800\u3164\ufe00-\ufe0f\ufeff"
                      "\uffa0\ufff0-\ufffb\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]")
"""C0 (except tab and newline), DEL, C1, line/paragraph separators, bidi controls (LRM, RLM, ALM, embeddings,
overrides, isolates) and the invisible characters that make two different names look the same (soft hyphen,
zero-width space/joiners, word joiner, invisible operators, BOM, fillers, tag characters, variation selectors, and
the spaces that are not U+0020 but look like it: no-break, en/em/thin/hair, narrow no-break, medium mathematical,
Ogham, braille blank): every Default_Ignorable_Code_Point of Unicode (drawn as nothing) is among them."""

def clean_name(name: str) -> str:
    """A name for a text surface: ``name_text``, then every control or invisible character as an escape."""
    return clean(name_text(name), newlines=False)


def finding_text(text: str, paths: Sequence[str]) -> str:
    """A finding's message or explanation with each file it names (its ``paths``) written by the one name escape.

    Checks quote file names in free text; a name holding a newline would start a new line of ``check``'s output
    (a forged finding), and one holding a backslash or an undecodable byte would read like another file. Each
    quoted path that ``clean_name`` changes is replaced in one pass (longest first); the rest of the text is cleaned
    by the surface as any text."""
    special = sorted({p for p in paths if p and clean_name(p) != p}, key=len, reverse=True)
    if not special or not any(p in text for p in special):
        return text
    pattern = re.compile("|".join(re.escape(p) for p in special))
    return pattern.sub(lambda m: clean_name(m.group(0)), text)


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
    """``str(value)`` with control and invisible characters shown as escapes, and undecodable bytes as ``\\xNN``;
    ``newlines=False`` escapes ``\\n`` and ``\\t`` too."""
    text = value if isinstance(value, str) else str(value)
    text = encodable_text(_CONTROL.sub(_escape, text))  # a byte of a name that is not UTF-8: \xNN, as name_text
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


SHOWN_NAME_CHARS = 1000
"""A name (tag, key) longer than this is shown with its middle elided where one line of the UI names it: a status
line or a plot title wraps the whole text, and a 2 MB tag took seconds per redraw (the log view's lines have their
own cap, ``MAX_LINE_CHARS``)."""


SHOWN_LINE_CHARS = 2000
"""A config line or value longer than this is shown elided in the UI (the log view's ``MAX_LINE_CHARS``): the full
text is what ``pimm-inspect config`` prints, and a search still matches all of it."""


def elide(text: str, limit: int = SHOWN_NAME_CHARS) -> str:
    """``text``, or its first and last ``limit // 2`` characters around ``…`` when it is longer than ``limit``."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}…{text[-half:]}"


def shorten(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    if space > limit // 2:
        head = head[:space]
    return head.rstrip(" ,;:") + "…"
