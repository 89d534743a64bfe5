"""The text of names that are not text, decided once for every surface (JSON, text, the UI, exports, the dataset,
the Python API's DataFrames): ``name_text`` for file and folder names, ``encodable_text`` for any other text.

A file name is bytes; Python reads one that is not UTF-8 with surrogate escapes (``os.fsdecode``), which no UTF-8
writer accepts and which a plain ``\\xNN`` rendering would confuse with a name that literally holds ``\\xNN``.
"""

from __future__ import annotations

import re

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
