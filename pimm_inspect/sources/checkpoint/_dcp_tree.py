"""The nested state dict a DCP ``.metadata`` describes, rebuilt from its flattened keys and planner paths."""

from __future__ import annotations

from typing import Any


def extent(value: Any) -> int | None:
    """A DCP offset or length: a non-negative int below 2**63, else None."""
    return value if type(value) is int and 0 <= value < 2**63 else None


def _path_key(key: Any) -> bool:
    """Whether a planner-path element can be a key: a string, or a list index of sane size."""
    return isinstance(key, str) or (type(key) is int and 0 <= key < 2**31)


def insert(root: dict[Any, Any], path: Any, fqn: str, value: Any, created: set[int]) -> bool:
    """Place a value at its planner path (tuple of keys), falling back to the dotted name.

    A path holding anything but strings and small ints (a hostile list, a huge int) is not used:
    the item goes under its dotted name instead, so one bad entry never loses the others.
    """
    usable = isinstance(path, (tuple, list)) and len(path) > 0 and all(_path_key(k) for k in path)
    keys = list(path) if usable else fqn.split(".")
    if len(keys) > 64:
        keys = [fqn]
    node = root
    for key in keys[:-1]:
        child = node.get(key)
        if not (isinstance(child, dict) and id(child) in created):
            child = node[key] = {}
            created.add(id(child))
        node = child
    node[keys[-1]] = value
    return usable or path is None


def listify(root: dict[Any, Any], created: set[int]) -> dict[Any, Any]:
    """Turn the dicts we built keyed 0..n-1 (flattened lists) back into lists."""
    stack: list[Any] = [root]
    while stack:
        current = stack.pop()
        pairs = list(current.items()) if isinstance(current, dict) else list(enumerate(current))
        for key, child in pairs:
            if not (isinstance(child, dict) and id(child) in created):
                continue  # a value from the file: leave it as read
            if child and all(isinstance(k, int) for k in child) and sorted(child) == list(range(len(child))):
                as_list = [child[i] for i in range(len(child))]
                current[key] = as_list
                stack.append(as_list)
            else:
                stack.append(child)
    return root
