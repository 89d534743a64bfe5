"""JSON-like, printable copies of unpickled trees: placeholders become small dicts, huge numbers text."""

from __future__ import annotations

from typing import Any

from .._limits import DEPTH_CUT, MAX_NESTING_DEPTH
from ._placeholders import ArrayPlaceholder, PickledObject, StorageType, TensorPlaceholder, TorchDtype

MAX_PLAIN_INT_BITS = 64
"""Integers wider than this become a short description in ``to_plain`` (``str()`` of a 10**5000 raises)."""


def _big_int(value: int) -> str:
    return f"<integer of {value.bit_length()} bits>"


def key_text(key: Any) -> str:
    """A dict key from a pickle as short text: strings as they are, numbers in range, else the type's name.

    Never ``str()`` of arbitrary file data: a huge int raises, a nested shared tuple takes exponential time.
    """
    if isinstance(key, str):
        return key
    if isinstance(key, bool) or key is None or isinstance(key, float):
        return str(key)
    if isinstance(key, int):
        return str(key) if key.bit_length() <= MAX_PLAIN_INT_BITS else _big_int(key)
    return f"<{type(key).__name__[:40]}>"


def _plain_key(key: Any) -> bool:
    """Whether a key may stay as it is in ``to_plain`` (JSON-able and safe to print)."""
    if isinstance(key, int) and not isinstance(key, bool):
        return key.bit_length() <= MAX_PLAIN_INT_BITS
    return key is None or isinstance(key, (str, float, bool))


def to_plain(value: Any, max_nodes: int = 20_000, cut: list[str] | None = None) -> Any:
    """A JSON-like copy of an unpickled tree: placeholders become small dicts or scalars.

    Depth- and node-capped, so shared or cyclic references in a hostile pickle
    cannot blow up time or recursion; enum-like objects become their value. When ``cut`` is given, the caps
    that were hit are added to it (for the caller's ``file.over-limit`` finding).
    """
    budget = [max_nodes]
    hit: set[str] = set()

    def convert(node: Any, depth: int) -> Any:
        budget[0] -= 1
        if budget[0] < 0:
            hit.add(f"more than {max_nodes} values")
            return "<...>"
        if depth > MAX_NESTING_DEPTH:
            hit.add(f"nested deeper than {MAX_NESTING_DEPTH} levels")
            return DEPTH_CUT
        if isinstance(node, int) and not isinstance(node, bool) and node.bit_length() > MAX_PLAIN_INT_BITS:
            return _big_int(node)
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, (bytes, bytearray)):
            return f"<{len(node)} bytes>"
        if isinstance(node, dict):
            return {(k if _plain_key(k) else key_text(k)): convert(v, depth + 1)
                    for k, v in list(node.items())[: max(budget[0], 0)]}
        if isinstance(node, (list, tuple, set, frozenset)):
            return [convert(v, depth + 1) for v in list(node)[: max(budget[0], 0)]]
        if isinstance(node, TensorPlaceholder):
            return {"tensor": node.dtype, "shape": list(node.shape)}
        if isinstance(node, ArrayPlaceholder):
            return {"array": node.dtype, "shape": list(node.shape)}
        if isinstance(node, (TorchDtype, StorageType)):
            return f"torch.{node.name}"
        if isinstance(node, PickledObject):
            state = node.state
            if isinstance(state, dict):
                return convert(state, depth)
            if state is None and len(node.args) == 1 and not node.kwargs:
                return convert(node.args[0], depth)  # enum-like: Strategy("steps") -> "steps"
            return f"<{type(node).dotted}>"  # type: ignore[attr-defined]
        return f"<{type(node).__name__}>"

    try:
        out = convert(value, 0)
    except RecursionError:
        hit.add("nested too deep to copy")
        out = None
    if cut is not None:
        cut += sorted(hit)
    return out
