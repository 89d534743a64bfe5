"""Limits on nested values from run files: one depth cap for every value, and bounded JSON parsing.

A JSON text is judged before it is parsed (bytes, decoded size, how many values it would become), so a
63 MiB document of empty lists cannot turn into gigabytes of Python objects; what is parsed is then cut
at ``MAX_NESTING_DEPTH`` so nothing downstream (masking, flattening, rendering) meets a deeper value.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Collection, Iterable
from typing import Any

MAX_NESTING_DEPTH = 50
"""Deepest nesting kept in any value from a run file (JSON documents, W&B config and summary values);
deeper parts are replaced by ``DEPTH_CUT`` and reported."""
MAX_JSON_VALUES = 1_000_000
"""Most values (objects, arrays, keys, scalars) one JSON text may hold; more and it is not parsed."""
MAX_JSON_PARSED_BYTES = 256 * 1024 * 1024
"""Most memory a parsed JSON text may be estimated to take (its decoded text plus 64 bytes per value)."""
BYTES_PER_VALUE = 64
"""A Python object per JSON value costs about this much (a small dict or list, with its pointer)."""
DEPTH_CUT = f"<nested deeper than {MAX_NESTING_DEPTH} levels: not read>"
"""What stands in for a part of a value below ``MAX_NESTING_DEPTH``."""
MAX_TAGS_PER_FILE = 10_000
"""Most distinct scalar tags (metric names) read from one file (event file, train.log); the first ones are kept,
the points of the others are not read and ``file.too-many-tags`` counts them. A real run logs at most a few
thousand; a file of a million names would otherwise cost gigabytes of per-name bookkeeping."""
MAX_DROPPED_NAMES_COUNTED = 2_000_000
"""Distinct names refused past ``MAX_TAGS_PER_FILE`` are counted exactly up to this many (by hash: ~70 bytes each)."""


class TagCap:
    """The distinct names one file may bring (``MAX_TAGS_PER_FILE``), each stored once; the rest counted."""

    __slots__ = ("known", "limit", "dropped", "dropped_points")

    def __init__(self, known: Iterable[str] = (), limit: int = MAX_TAGS_PER_FILE) -> None:
        self.known: dict[str, str] = {name: name for name in known}
        """Admitted name -> the one string object every point of it shares."""
        self.limit = limit
        self.dropped: set[int] = set()
        """Hashes of the refused names (a refused name keeps no string alive)."""
        self.dropped_points = 0
        """Points of refused names (the caller counts them where it drops them)."""

    def admit(self, name: str) -> str | None:
        """The stored name (the same object each time), or None when the file already brought ``limit`` names."""
        found = self.known.get(name)
        if found is not None:
            return found
        if len(self.known) < self.limit:
            self.known[name] = name
            return name
        if len(self.dropped) < MAX_DROPPED_NAMES_COUNTED:
            self.dropped.add(hash(name))
        return None

    def finding(self, rel_path: str, what: str = "tags") -> Any:
        """``file.too-many-tags`` naming the file and how many names (and points) were not read; None if none."""
        if not self.dropped:
            return None
        from ..model import Finding, Severity  # the model is below every reader; imported where a finding is made

        count = len(self.dropped)
        more = "more than " if count >= MAX_DROPPED_NAMES_COUNTED else ""
        return Finding(
            "file.too-many-tags", Severity.WARNING,
            f"{rel_path}: {more}{count:,} distinct {what} past the first {self.limit:,} were not read "
            f"({self.dropped_points:,} points)", (rel_path,), None,
            f"At most {self.limit:,} distinct {what} are read from one file (the first ones, in file order): a real "
            "run logs far fewer, and each name costs memory however few points it has. The other names and their "
            "points are left out of every view and export.")

_ESCAPE = re.compile(r"\\.", re.DOTALL)
_STRING = re.compile(r'"[^"]*"')


def _count_values(text: str) -> int:
    # root + one per element or member after the first (commas) + one per key (colons) + the first element
    # of each non-empty container (openers minus the empty ones).
    opens = text.count("[") + text.count("{")
    empty = text.count("[]") + text.count("{}")
    return 1 + text.count(",") + text.count(":") + opens - empty


def estimate_json_values(text: str) -> int:
    """About how many values ``json.loads(text)`` would create (exact for compact JSON without separators
    inside strings; separators inside strings count only while the rough count is within the cap)."""
    rough = _count_values(text)
    if rough <= MAX_JSON_VALUES:
        return rough
    # Drop escapes first, so the string pattern below is linear even on an unterminated string full of \".
    return _count_values(_STRING.sub('""', _ESCAPE.sub("", text)))


def json_over_limit(text: str) -> str | None:
    """Why ``text`` must not be parsed (too many values, too large once parsed), or None."""
    values = estimate_json_values(text)
    if values > MAX_JSON_VALUES:
        return f"holds about {values:,} values, more than the {MAX_JSON_VALUES:,} read; not parsed"
    parsed = sys.getsizeof(text) + BYTES_PER_VALUE * values
    if parsed > MAX_JSON_PARSED_BYTES:
        return (f"would take about {parsed // 2**20} MiB once parsed, more than the "
                f"{MAX_JSON_PARSED_BYTES // 2**20} MiB allowed; not parsed")
    return None


def parse_json_bounded(text: str) -> tuple[Any, str | None, str | None]:
    """(value, finding code, reason): the parsed value cut at ``MAX_NESTING_DEPTH``, or None with why not.

    Codes: ``file.over-limit`` (too many values, too large, too deep) and ``file.invalid-json``.
    A value that parses but is deeper than the cap comes back cut, with code ``file.over-limit`` and the
    first key path that was cut.
    """
    reason = json_over_limit(text)
    if reason:
        return None, "file.over-limit", reason
    try:
        value = json.loads(text)
    except RecursionError:
        return None, "file.over-limit", f"nested deeper than {MAX_NESTING_DEPTH} levels; not parsed"
    except ValueError as exc:
        return None, "file.invalid-json", f"invalid JSON ({exc})"
    value, cut = cap_depth(value)
    if cut:
        return value, "file.over-limit", depth_reason(cut)
    return value, None, None


def depth_reason(cut: list[str]) -> str:
    """One line naming where values were cut at the depth cap."""
    where = cut[0] or "(top)"
    more = f" and {len(cut) - 1} more" if len(cut) > 1 else ""
    return f"nested deeper than {MAX_NESTING_DEPTH} levels at {where[:120]}{more}; the deeper part is not read"


def _path(parent: str, key: Any) -> str:
    return f"{parent}[{key}]" if isinstance(key, int) else (f"{parent}.{key}" if parent else str(key))


def _deeper_than(value: Any, limit: int) -> bool:
    stack = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        children: Collection[Any]
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, (list, tuple)):
            children = node
        else:
            continue
        if depth >= limit:
            if children:
                return True
            continue
        stack += [(child, depth + 1) for child in children if isinstance(child, (dict, list, tuple))]
    return False


def cap_depth(value: Any, limit: int = MAX_NESTING_DEPTH) -> tuple[Any, list[str]]:
    """``value`` with every container below ``limit`` levels replaced by ``DEPTH_CUT``; the key paths cut.

    Iterative (any input depth); returns ``value`` itself, uncopied, when nothing is that deep.
    """
    if not _deeper_than(value, limit):
        return value, []
    cut: list[str] = []
    holder: list[Any] = [None]
    tuples: list[tuple[Any, Any, list[Any]]] = []
    stack: list[tuple[Any, Any, Any, int, str]] = [(value, holder, 0, 0, "")]
    while stack:
        node, into, slot, depth, path = stack.pop()
        container = isinstance(node, (dict, list, tuple))
        if container and depth >= limit and node:
            into[slot] = DEPTH_CUT
            if len(cut) < 100:
                cut.append(path)
        elif isinstance(node, dict):
            out: dict[Any, Any] = dict.fromkeys(node)
            into[slot] = out
            stack += [(v, out, k, depth + 1, _path(path, k)) for k, v in node.items()]
        elif isinstance(node, (list, tuple)):
            items: list[Any] = [None] * len(node)
            into[slot] = items
            if isinstance(node, tuple):
                tuples.append((into, slot, items))
            stack += [(v, items, i, depth + 1, _path(path, i)) for i, v in enumerate(node)]
        else:
            into[slot] = node
    for into, slot, items in reversed(tuples):
        into[slot] = tuple(items)
    cut.sort()
    return holder[0], cut
