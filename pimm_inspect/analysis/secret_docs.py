"""Masking a JSON-like document (a config, run metadata): every leaf and key by the rules of ``secrets``, at any depth,
without recursion; ``find_in_mapping`` says where, ``mask_value`` gives the masked copy."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from .secret_names import numeric_only_name as _numeric_only_name, secret_flag, secret_name, user_separator
from .secrets import (MASK, MEMO_MAX_CHARS, SecretHit, _benign_value, _HEX40, _HEX40_CONTEXT, _kind_of, _mask_short,
                      _user_password, mask_text)


def _mask_scalar(value: Any, name: str, previous: Any, before: str = "") -> Any:
    """The masked form of one leaf: ``name`` is the key path's last two parts, ``previous`` the list element before,
    ``before`` the list's elements before ``previous`` joined by spaces (the command a flag belongs to)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        secret = name and secret_name(name) and not _numeric_only_name(name)
        return MASK if secret or _after_secret_flag(previous, str(value), before) else value
    if not isinstance(value, str):
        return value
    if _after_secret_flag(previous, value, before) and not value.startswith("-") and not _benign_value(value):
        return MASK
    if (isinstance(previous, str) and (separators := user_separator(previous, before)) is not None
            and (user_masked := _user_password(value, separators)) is not None):
        return user_masked  # ["curl", "-u", "user:password"], ["smbclient", "-U", "user%password"]
    if name and secret_name(name) and not _benign_value(value):
        if not (_numeric_only_name(name) and value.strip().isdigit()):
            return MASK
    if name and _HEX40.fullmatch(value.strip()) and _HEX40_CONTEXT.search(name):
        return MASK
    return mask_text(value)


def _after_secret_flag(previous: Any, value: str, before: str = "") -> bool:
    """True when ``previous`` is a list element like ``--token`` or ``-p`` (so ``value``, this element, is its value);
    ``before`` is the command's words before ``previous`` (``["srun", "-p", "gpu"]`` names a partition)."""
    return (isinstance(previous, str) and previous.startswith("-") and "=" not in previous
            and len(previous) < 100 and secret_flag(previous, value, before))


LIST_COMMAND_ITEMS = 40
"""How many list elements before a flag still name its command (``["srun", "-N", "2", "-p", "gpu"]``)."""


def _list_before(node: Any, i: int) -> str:
    """The string elements of ``node`` before its element ``i - 1`` (a flag), joined by spaces."""
    return " ".join(v for v in node[max(0, i - 1 - LIST_COMMAND_ITEMS):i - 1] if isinstance(v, str))


def _context(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key


_NUMBER_TYPES = frozenset({int, float, bool, type(None)})
"""Leaf types a list of numbers holds: such a list is copied whole unless its name says secret (``_walk``)."""


def _walk(data: Any, name: str, hits: list[SecretHit] | None) -> Any:
    """A masked copy of ``data`` built without recursion; records where masking changed something in ``hits``.

    Only containers go on the stack: a leaf is masked where its container is copied (a float, None or a bool as it
    is: no rule masks one; a short string or an int that follows no flag by a remembered answer), and a list of plain
    numbers under a name that is no secret is copied whole."""
    record = hits is not None
    holder: list[Any] = [None]
    tuples: list[tuple[Any, Any, list[Any]]] = []
    # (node, container to write into, slot in it, key-name context, path for hits, previous list element)
    stack: list[tuple[Any, Any, Any, str, str, Any]] = [(data, holder, 0, name, "", None)]
    while stack:
        node, into, slot, ctx, path, previous = stack.pop()
        if isinstance(node, dict):
            out: dict[Any, Any] = {}
            into[slot] = out
            key_name = ctx.rsplit(".", 1)[-1] if ctx else ""
            pending: list[tuple[Any, Any, Any, str, str, Any]] = []
            for key, value in node.items():
                kind = type(value)
                leaf_only = kind is float or kind is bool or value is None
                shown = key
                if isinstance(key, str):
                    shown = (_mask_short(key) if len(key) <= MEMO_MAX_CHARS and "!!binary" not in key
                             else mask_text(key))
                    if shown != key:
                        if hits is not None:
                            hits.append(SecretHit(_context(path, shown), _kind_of(key)))
                        n = 2
                        while shown in out or shown in node:
                            shown, n = f"{mask_text(key)} ({n})", n + 1
                    text_key = shown
                else:
                    text_key = str(shown)
                if leaf_only:  # no rule masks a float, None or a bool
                    out[shown] = value
                    continue
                child_ctx = f"{key_name}.{text_key}" if key_name else text_key
                child_path = (f"{path}.{text_key}" if path else text_key) if record else ""
                if kind is str and len(value) <= MEMO_MAX_CHARS:
                    masked = _mask_short_leaf(value, child_ctx)
                    if hits is not None and masked != value:
                        hits.append(SecretHit(child_path, _kind_of(value)))
                    out[shown] = masked
                elif kind is int:
                    out[shown] = MASK if _int_secret(child_ctx) else value
                    if hits is not None and out[shown] is MASK:
                        hits.append(SecretHit(child_path, "credential"))
                elif isinstance(value, (dict, list, tuple)):
                    out[shown] = None
                    pending.append((value, out, shown, child_ctx, child_path, None))
                else:
                    out[shown] = _masked_leaf(value, child_ctx, None, child_path, hits)
            stack += reversed(pending)
        elif isinstance(node, (list, tuple)):
            if isinstance(node, tuple):
                items: list[Any] = [None] * len(node)
                tuples.append((into, slot, items))
            elif all(type(v) in _NUMBER_TYPES for v in node) and not _int_secret(ctx):
                into[slot] = list(node)  # nothing in it can be masked
                continue
            else:
                items = [None] * len(node)
            into[slot] = items
            prev = None
            pending = []
            for i, value in enumerate(node):
                if isinstance(value, (dict, list, tuple)):
                    pending.append((value, items, i, ctx, f"{path}[{i}]" if record else "", prev))
                elif value is None or value is True or value is False or isinstance(value, float):
                    items[i] = value
                else:
                    before = _list_before(node, i) if isinstance(prev, str) and prev.startswith("-") else ""
                    items[i] = _masked_leaf(value, ctx, prev, f"{path}[{i}]" if record else "", hits, before)
                prev = value
            stack += reversed(pending)
        else:
            into[slot] = _masked_leaf(node, ctx, previous, path, hits)
    for into, slot, items in reversed(tuples):
        into[slot] = tuple(items)
    return holder[0]


@lru_cache(maxsize=8192)
def _int_secret(ctx: str) -> bool:
    """True when an integer under the key-name context ``ctx`` is masked (``_mask_scalar``'s rule for ints)."""
    return bool(ctx) and secret_name(ctx) and not _numeric_only_name(ctx)


@lru_cache(maxsize=16384)
def _mask_short_leaf(value: str, ctx: str) -> str:
    """``_mask_scalar`` of a short string that follows no flag, remembered: a tree's configs repeat their leaves."""
    masked: str = _mask_scalar(value, ctx, None)
    return masked


def _masked_leaf(value: Any, ctx: str, previous: Any, path: str, hits: list[SecretHit] | None,
                 before: str = "") -> Any:
    """``_mask_scalar`` of one leaf, recording a hit at ``path`` when it changed."""
    kind = type(value)
    if not isinstance(previous, str):  # no flag before it: the leaf and its name decide
        if kind is int:
            masked = MASK if _int_secret(ctx) else value
        elif kind is str and len(value) <= MEMO_MAX_CHARS:
            masked = _mask_short_leaf(value, ctx)
        else:
            masked = _mask_scalar(value, ctx, previous)
    else:
        masked = _mask_scalar(value, ctx, previous, before)
    if hits is not None and masked is not value and masked != value:  # NaN != NaN: unchanged all the same
        hits.append(SecretHit(path, _kind_of(value) if isinstance(value, str) else "credential"))
    return masked


def find_in_mapping(data: Any, prefix: str = "") -> list[SecretHit]:
    """Secret-looking values (and keys) in a nested JSON-like document, by key path."""
    hits: list[SecretHit] = []
    _walk(data, "", hits)
    if prefix:
        hits = [SecretHit(f"{prefix}.{h.where}" if h.where else prefix, h.kind) for h in hits]
    return sorted(hits, key=lambda h: h.where)


def mask_value(data: Any, key: str = "") -> Any:
    """A copy of a JSON-like value with every secret-looking string masked (any depth, no recursion)."""
    return _walk(data, key, None)
