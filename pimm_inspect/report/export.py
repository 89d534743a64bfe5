"""Tidy scalar tables for ``export`` (pandas, imported lazily)."""

from __future__ import annotations

import fnmatch


from ..analysis.curves import merge
from ..model import Run


def scalar_frame(run: Run, tags: tuple[str, ...] = (), policy: str = "all"):  # -> pandas.DataFrame
    """Columns tag, step, value, wall_time, attempt, source; ``policy`` dedupes replayed steps per tag and source."""
    import pandas as pd  # ~0.5 s: only export and the Python API build DataFrames

    frame = run.scalars()
    if tags:
        frame = frame[frame["tag"].map(lambda t: any(fnmatch.fnmatchcase(t, p) for p in tags))]
    if policy == "all" or frame.empty:
        return frame.reset_index(drop=True)
    parts = []
    for (tag, _kind), group in _groups(run, tags):
        for s in merge(group, policy):
            parts.append(pd.DataFrame({"tag": tag, "step": s.steps, "value": s.values, "wall_time": s.wall_times_s,
                                       "attempt": pd.array([pd.NA] * len(s), dtype="Int64"),
                                       "source": s.source}))
    return pd.concat(parts, ignore_index=True) if parts else frame.iloc[0:0]


def _groups(run: Run, tags: tuple[str, ...]):
    from ..analysis.curves import source_kind

    groups: dict[tuple[str, str], list] = {}
    for s in run.series:
        if tags and not any(fnmatch.fnmatchcase(s.tag, p) for p in tags):
            continue
        groups.setdefault((s.tag, source_kind(run, s)), []).append(s)
    return sorted(groups.items())
