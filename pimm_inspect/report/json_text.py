"""The text of a JSON document, indented by 2: the bytes ``json.dumps(clean(doc), indent=2, ensure_ascii=False)``
gives, in one pass that cleans as it writes.

``json.dumps`` with ``indent`` runs the pure-Python encoder (the C one only serves ``indent=None``), a generator per
container and value; on ``ls --json`` of a 1,000-run tree the cleaning copy plus that encoder were ~10% of the warm
process. Strings still go through the C string escaper. ``tests/test_json_text.py`` compares both on random documents.
"""

from __future__ import annotations

import math
import os
import re
from json.encoder import encode_basestring  # the C escaper when available (what ensure_ascii=False uses)
from pathlib import Path
from typing import Any

from .safe_text import clean_json, encodable_text, name_text

SCHEMA_VERSION = 1
"""Of every JSON document (README, "JSON contract"): fields are only added, never changed or removed."""


def dumps(document: dict[str, Any]) -> str:
    """Serialize a document deterministically (NaN/inf become null; C1 and other controls escaped as ``\\uXXXX``)."""
    return clean_json(indented(document))


def root_path(root: Path, base: Path) -> str:
    """The path of the run at ``root`` (absolute) relative to the PATH the user gave ('.' when it is the run)."""
    try:
        relative = os.path.relpath(root, Path(base).absolute())
    except ValueError:
        return name_text(root.name)
    return name_text(Path(relative).as_posix())


def safe_str(text: str) -> str:
    """Text that always encodes: undecodable bytes of file names as ``\\xNN``, lone surrogates as ``\\uXXXX``."""
    return encodable_text(text)


_LONE_SURROGATE = re.compile("[\ud800-\udc7f\udd00-\udfff]")


def clean(value: Any) -> Any:
    """The value as JSON can hold it: NaN/inf None, tuples lists, numpy scalars Python ones, keys and strings safe,
    anything else its ``str``."""
    if isinstance(value, dict):
        return {safe_str(str(k)): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return safe_str(value)
    if isinstance(value, (int, bool)) or value is None:
        return value
    if hasattr(value, "item"):
        return clean(value.item())
    return str(value)


def indented(document: Any) -> str:
    """``json.dumps(clean(document), indent=2, ensure_ascii=False)``, byte for byte."""
    return indented_at(document, "\n")


def indented_at(value: Any, newline: str) -> str:
    """``value``'s text as ``indented`` writes it inside a document where its line starts with ``newline`` (a
    newline and that line's indentation)."""
    out: list[str] = []
    _write(value, out, newline)
    return "".join(out)


def _write(value: Any, out: list[str], newline: str) -> None:
    """Append ``value``'s text; ``newline`` is a newline plus the indentation of the line ``value`` starts on."""
    if isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = newline + "  "
        separator = "," + inner
        out.append("{" + inner)
        first = True
        for key, item in {safe_str(str(k)): v for k, v in value.items()}.items():  # as clean: equal keys merge
            if not first:
                out.append(separator)
            first = False
            out.append(encode_basestring(key) + ": ")
            _write(item, out, inner)
        out.append(newline + "}")
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        inner = newline + "  "
        separator = "," + inner
        out.append("[" + inner)
        first = True
        for item in value:
            if not first:
                out.append(separator)
            first = False
            _write(item, out, inner)
        out.append(newline + "]")
    elif isinstance(value, float):
        out.append(float.__repr__(value) if math.isfinite(value) else "null")
    elif isinstance(value, str):
        out.append(encode_basestring(safe_str(value)))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif hasattr(value, "item"):
        _write(value.item(), out, newline)
    else:
        out.append(encode_basestring(str(value)))
