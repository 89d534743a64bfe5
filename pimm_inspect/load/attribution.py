"""Each series of a run tagged with its attempt and the reader kind of its source file, in one construction.

The readers' series name neither (the train.log reader names attempts only); ``load.attempts`` works the attempt
out and the run's sources say the kind. A series is rebuilt once with both, its arrays shared, never copied.
"""

from __future__ import annotations

from .. import lazy
from ..model import ScalarSeries


def kind_of_source(source: str, kinds: dict[str, str]) -> str:
    """The reader kind of a series' source file: the run's sources say it (``kinds``: path -> kind), else its name
    (a series whose file is not among the run's sources, such as an HF checkpoint's state)."""
    kind = kinds.get(source)
    if kind:
        return kind
    if source.startswith("wandb") or "run-" in source:
        return "wandb"
    if "tfevents" in source:
        return "tb_events"
    return "hf_trainer" if source.endswith("trainer_state.json") else "train_log"


def attributed(s: ScalarSeries, attempt: int | None, kind: str) -> ScalarSeries:
    """``s`` with ``attempt`` and ``source_kind`` set (itself when both are already); a series from the disk cache
    whose columns are not decoded yet stays so (``lazy.replace``)."""
    if s.attempt == attempt and s.source_kind == kind:
        return s
    if type(s) is ScalarSeries:  # the plain class: its constructor, not ``dataclasses.replace``'s field walk
        return ScalarSeries(s.tag, s.steps, s.values, s.wall_times_s, s.source, attempt, kind)
    return lazy.replace(s, attempt=attempt, source_kind=kind)  # type: ignore[no-any-return]

