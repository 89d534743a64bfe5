"""How the runs table names runs: relative paths cut to the parts that tell runs apart, and cut to a width."""

from __future__ import annotations


def shorten(name: str, width: int) -> str:
    """Cut the middle of a long relative path so both its top folder and the run's own name stay visible."""
    if len(name) <= width:
        return name
    head = max((width - 1) // 3, 1)
    return name[:head] + "…" + name[-(width - 1 - head):]


def distinguishing(names: dict[str, str]) -> dict[str, str]:
    """Each run's name cut to the parts that tell the runs apart: the folders every run shares at the front are
    dropped, and a middle folder every run has at the same place becomes ``…`` (the full path is on the status
    line). ``sweep/a/runs/baseline`` and ``sweep/b/runs/baseline`` become ``a/…/baseline`` and ``b/…/baseline``."""
    if len(names) < 2:
        return dict(names)
    parts = {key: name.split("/") for key, name in names.items()}
    lists = list(parts.values())
    first = lists[0]
    shortest = min(len(p) for p in lists)
    common = 0
    while common < shortest - 1 and all(p[common] == first[common] for p in lists):
        common += 1
    rest = {key: p[common:] for key, p in parts.items()}
    depth = max(len(p) for p in rest.values())
    # A middle folder is shared when every name that has a middle folder there has this one (shallower names
    # have nothing there to tell apart).
    shared = {i for i in range(1, depth - 1)
              if len({p[i] for p in rest.values() if i < len(p) - 1}) == 1}
    out = {}
    for key, p in rest.items():
        shown: list[str] = []
        for i, part in enumerate(p):
            if i in shared and 0 < i < len(p) - 1:
                if not shown or shown[-1] != "…":
                    shown.append("…")
            else:
                shown.append(part)
        out[key] = "/".join(shown)
    return out


def shorten_end(text: str, width: int) -> str:
    """``text`` cut to ``width`` cells with an ellipsis at the end."""
    return text if len(text) <= width else text[:width - 1] + "…"
