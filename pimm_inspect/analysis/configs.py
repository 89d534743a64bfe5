"""Config documents as flat ``a.b.c`` key maps, shared by the drift check, ``config --flat/--diff`` and the UI."""

from __future__ import annotations

from typing import Any


def flatten_config(data: Any) -> dict[str, Any]:
    """Nested dicts to ``a.b.c`` keys; lists and scalars are leaf values; empty dicts are kept as ``{}``.

    Iterative, so a deeply nested (hostile) document cannot hit the recursion limit.
    """
    out: dict[str, Any] = {}
    if not isinstance(data, dict):
        return {"value": data} if data is not None else out
    stack: list[tuple[str, Any]] = [(str(k), v) for k, v in reversed(list(data.items()))]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict) and node:
            stack += [(f"{path}.{k}", v) for k, v in reversed(list(node.items()))]
        else:
            out[path] = node
    return out
