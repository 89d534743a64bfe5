"""A small exact parser for the literal shapes pimm's ``Config:`` dumps hold, without building a Python AST.

pimm logs its config as ``key = value`` lines whose values are ``None``/``True``/``False``, numbers, plain quoted
strings, lists, tuples, sets, ``{k: v}`` dicts and ``dict(k=v)`` calls, nested. ``ast.parse`` spends ~0.35 ms on a
typical 1.7 KB dump building nodes that ``config_dump`` then walks; this reads the same shapes from one regex token
list in a fraction of that. Anything it is not sure of (an expression, a name, an escape, a comment, a prefixed or
implicitly joined string, an odd number form, deep nesting, indentation at the top level...) makes it give up
(``None``), and the caller parses with ``ast`` as before: every text it accepts gives exactly what the ``ast`` path
gives (tests/test_config_dump_literals.py checks both on generated dumps and every fixture dump).
"""

from __future__ import annotations

import keyword
import re
from typing import Any

_TOKEN = re.compile(
    r"""[ \t]*(
      \n[ \t]*                                  # a newline with the next line's indentation
    | '[^'\\\x00-\x08\x0a-\x1f]*'               # a plain string: no escape, no control character but a tab
    | "[^"\\\x00-\x08\x0a-\x1f]*"
    | (?:[0-9]|\.[0-9])[\w.]*(?:(?<=[eE])[+-][\w.]*)?   # a number, greedily (checked whole below)
    | [A-Za-z_]\w*                              # a name
    | .                                         # anything else: one character (punctuation, or given up on)
    )""", re.VERBOSE | re.ASCII)
_INT = re.compile(r"[1-9][0-9]*|0", re.ASCII)
_FLOAT = re.compile(r"(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+", re.ASCII)
_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NUMBER_START = frozenset("0123456789.")
_RESERVED = frozenset(keyword.kwlist) | {"__debug__"}
_CONSTANTS: dict[str, Any] = {"None": None, "True": True, "False": False}
_KEY_TYPES = (str, int, float, bool)
MAX_NESTING = 40
"""Deeper nesting is left to ``ast`` (whose walk turns past 60 levels into source text)."""


class _GiveUp(Exception):
    """Not a shape this parser is sure of: the caller parses with ``ast``."""


def parse_literals(text: str) -> dict[str, Any] | None:
    """The ``key = value`` assignments of a dump as ``config_dump``'s ``ast`` walk makes them, or None when the
    text holds anything but the plain literal shapes (then the ``ast`` walk decides, as before)."""
    if "\x00" in text:
        return None
    if not text.isascii():
        try:
            text.encode("utf-8")  # a lone surrogate: ``ast.parse`` refuses the text
        except UnicodeEncodeError:
            return None
    tokens = _TOKEN.findall("\n" + text)
    tokens.append("")  # the end: no token is empty
    try:
        return _module(tokens)
    except (_GiveUp, IndexError, RecursionError):
        return None


def _number(token: str) -> int | float:
    if _INT.fullmatch(token) is not None and len(token) <= 40:
        return int(token)
    if _FLOAT.fullmatch(token) is not None and len(token) <= 80:
        return float(token)
    raise _GiveUp


def _module(tokens: list[str]) -> dict[str, Any]:
    """Top-level ``name = value`` lines (each value on its line, lines inside brackets aside)."""
    out: dict[str, Any] = {}
    end = len(tokens) - 1
    at = 0
    while at < end:
        token = tokens[at]
        if token[0] == "\n":
            at += 1
            if len(token) > 1 and tokens[at][:1] not in ("\n", ""):
                raise _GiveUp  # an indented statement
            continue
        if token[0] not in _NAME_START or token in _RESERVED or tokens[at + 1] != "=":
            raise _GiveUp
        value, at = _value(tokens, at + 2, 0)
        if tokens[at][:1] not in ("\n", ""):
            raise _GiveUp  # more on the line: an expression, a second statement
        out[token] = value
    return out


def _value(tokens: list[str], at: int, depth: int) -> tuple[Any, int]:
    """The value starting at ``tokens[at]`` and the index after it."""
    token = tokens[at]
    first = token[:1]
    if first == "'" or first == '"':
        if len(token) < 2:
            raise _GiveUp
        return token[1:-1], at + 1
    if first in _NUMBER_START and first:
        return _number(token), at + 1
    if token in _CONSTANTS:
        return _CONSTANTS[token], at + 1
    if depth >= MAX_NESTING:
        raise _GiveUp
    if token == "dict" and tokens[at + 1] == "(":
        return _keywords(tokens, at + 2, depth + 1)
    if token == "[":
        return _items(tokens, at + 1, "]", depth + 1, [])
    if token == "(":
        return _parenthesized(tokens, at + 1, depth + 1)
    if token == "{":
        return _braces(tokens, at + 1, depth + 1)
    if token == "-":
        operand = tokens[at + 1]
        if operand[:1] not in _NUMBER_START or not operand:
            raise _GiveUp
        return -_number(operand), at + 2
    raise _GiveUp


def _items(tokens: list[str], at: int, close: str, depth: int, out: list[Any]) -> tuple[list[Any], int]:
    """Elements up to ``close``, appended to ``out`` (after the opening bracket, or after a first element and its
    comma); newlines between them do not matter."""
    while True:
        token = tokens[at]
        while token[:1] == "\n":
            at += 1
            token = tokens[at]
        if token == close:
            return out, at + 1
        value, at = _value(tokens, at, depth)
        out.append(value)
        token = tokens[at]
        while token[:1] == "\n":
            at += 1
            token = tokens[at]
        at += 1
        if token == close:
            return out, at
        if token != ",":
            raise _GiveUp


def _skip_newlines(tokens: list[str], at: int) -> int:
    while tokens[at][:1] == "\n":
        at += 1
    return at


def _parenthesized(tokens: list[str], at: int, depth: int) -> tuple[Any, int]:
    """``()`` or a tuple (a list), or one parenthesized value."""
    at = _skip_newlines(tokens, at)
    if tokens[at] == ")":
        return [], at + 1
    inner, at = _value(tokens, at, depth)
    at = _skip_newlines(tokens, at)
    token = tokens[at]
    if token == ")":
        return inner, at + 1
    if token != ",":
        raise _GiveUp
    return _items(tokens, at + 1, ")", depth, [inner])


def _braces(tokens: list[str], at: int, depth: int) -> tuple[Any, int]:
    """A ``{k: v}`` dict with plain keys, or a set (a list)."""
    at = _skip_newlines(tokens, at)
    if tokens[at] == "}":
        return {}, at + 1
    key, at = _value(tokens, at, depth)
    at = _skip_newlines(tokens, at)
    token = tokens[at]
    if token == "}":
        return [key], at + 1
    if token == ",":
        return _items(tokens, at + 1, "}", depth, [key])
    if token != ":":
        raise _GiveUp
    out: dict[Any, Any] = {}
    while True:
        if not isinstance(key, _KEY_TYPES):
            raise _GiveUp  # ``ast``'s walk keeps such a dict as source text
        # a repeated key: the first key's place, the last value (as ``ast``'s walk)
        out[key], at = _value(tokens, _skip_newlines(tokens, at + 1), depth)
        at = _skip_newlines(tokens, at)
        token = tokens[at]
        if token == "}":
            return out, at + 1
        if token != ",":
            raise _GiveUp
        at = _skip_newlines(tokens, at + 1)
        if tokens[at] == "}":
            return out, at + 1
        key, at = _value(tokens, at, depth)
        at = _skip_newlines(tokens, at)
        if tokens[at] != ":":
            raise _GiveUp


def _keywords(tokens: list[str], at: int, depth: int) -> tuple[dict[str, Any], int]:
    """``dict(k=v, ...)`` after its ``(``: keyword arguments only (a repeated one keeps its last value, as the
    ``ast`` walk does)."""
    out: dict[str, Any] = {}
    while True:
        name = tokens[at]
        while name[:1] == "\n":
            at += 1
            name = tokens[at]
        if name == ")":
            return out, at + 1
        if name[:1] not in _NAME_START or name in _RESERVED or tokens[at + 1] != "=":
            raise _GiveUp
        out[name], at = _value(tokens, at + 2, depth)
        token = tokens[at]
        while token[:1] == "\n":
            at += 1
            token = tokens[at]
        at += 1
        if token == ")":
            return out, at
        if token != ",":
            raise _GiveUp
