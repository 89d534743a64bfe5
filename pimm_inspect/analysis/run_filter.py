"""The runs filter's grammar, one implementation for every front end: substring, ``!`` negation, ``/regex/``
(case-insensitive) on a row's text, or ``cfg.<key> OP value`` on the row's config (``RunRow.config``, the run's
query config of ``configs.query_config`` with its secrets masked, flattened to ``a.b.c`` keys: a filter sees a
secret as ``****`` and can never test its value)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from ..evidence import RunRow


def filter_error(text: str) -> str | None:
    """Why a filter cannot be used as typed (an invalid ``/regex/``), or None when it is fine."""
    body = text.strip().removeprefix("!").strip()
    if len(body) >= 2 and body.startswith("/") and body.endswith("/"):
        try:
            re.compile(body[1:-1])
        except re.error as exc:
            return f"invalid regex /{body[1:-1]}/: {exc}"
    return None


def compile_filter(text: str) -> Callable[[str], bool]:
    """A predicate for the filter syntax: substring, ``!`` negation, ``/regex/`` (case-insensitive)."""
    text = text.strip()
    negate = text.startswith("!")
    if negate:
        text = text[1:].strip()
    if not text:
        return lambda _haystack: True
    if len(text) >= 2 and text.startswith("/") and text.endswith("/"):
        try:
            pattern = re.compile(text[1:-1], re.IGNORECASE)
        except re.error:
            pattern = re.compile(re.escape(text[1:-1]), re.IGNORECASE)
        matches: Callable[[str], bool] = lambda haystack: pattern.search(haystack) is not None
    else:
        needle = text.lower()
        matches = lambda haystack: needle in haystack.lower()
    return (lambda haystack: not matches(haystack)) if negate else matches


_CFG_TERM = re.compile(r"^cfg\.(?P<key>[\w.\-\[\]]+)\s*(?P<op>==|!=|>=|<=|=|>|<|~)\s*(?P<value>.*)$")


_Comparable = TypeVar("_Comparable", float, str)


def _compare(left: object, op: str, right: str) -> bool:
    try:
        a, b = float(left), float(right)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        sa, sb = str(left).lower(), right.strip().strip("'\"").lower()
        if isinstance(left, bool):
            sa = str(left).lower()
        return _apply(sa, op, sb)
    return _apply(a, op, b)


def _apply(a: _Comparable, op: str, b: _Comparable) -> bool:
    if op == "~":
        return str(b) in str(a)
    if op in ("=", "=="):
        return a == b
    if op == "!=":
        return a != b
    try:
        return {">": a > b, "<": a < b, ">=": a >= b, "<=": a <= b}[op]
    except TypeError:
        return False


def cfg_key(text: str) -> str | None:
    """The config key a ``cfg.<key> OP value`` filter compares (``!`` or not); None for a text filter."""
    stripped = text.strip()
    match = _CFG_TERM.match(stripped[1:].strip() if stripped.startswith("!") else stripped)
    return match["key"] if match is not None else None


def compile_run_filter(text: str) -> Callable[[str, RunRow | None], bool]:
    """The Runs filter: text syntax of ``compile_filter`` on a haystack, or ``cfg.<key> op value`` on the row's config
    (``RunRow.config``: the run's query config, ``configs.query_config``, flattened).

    ``op`` is one of ``= == != > < >= <= ~`` (``~`` is substring); numbers compare as numbers.
    A leading ``!`` negates. Runs not loaded yet never match a config filter.
    """
    stripped = text.strip()
    negate = stripped.startswith("!")
    body = stripped[1:].strip() if negate else stripped
    match = _CFG_TERM.match(body)
    if match is None:
        plain = compile_filter(text)
        return lambda haystack, _run: plain(haystack)
    key, op, value = match["key"], match["op"], match["value"]

    def matches(_haystack: str, row: RunRow | None) -> bool:
        if row is None:
            return False
        config = dict(row.config)
        hit = key in config and _compare(config[key], op, value)
        return not hit if negate else hit

    return matches


def row_text(name: str, row: RunRow | None) -> str:
    """What a text filter searches in a run's row: its name as shown, kind and era, status, W&B ids, finding codes."""
    if row is None:
        return name
    kind = f"{row.kind} {row.era}" if row.era else row.kind
    return " ".join([name, kind, row.status, *row.wandb_run_ids, *(f.code for f in row.findings)])
