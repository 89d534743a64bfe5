"""Each attempt's Slurm context and the compute its lost steps cost, from the files that say (spec sections 7-8).

Job id, array index, nodes, partition, GPU count and elapsed time come from the structured logs (each record
names its ``job_id``, ``host_name``, ``world_size``), the Slurm logs (their names carry the job id and array
index; slurmstepd's and srun's lines name the node) and ``launch.sbatch``; each fact set on an ``Attempt`` names
its file in ``context_sources``. Nothing is guessed: a fact no file ties to the attempt stays None.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import TYPE_CHECKING

import numpy as np

from ..model import Attempt, ScalarSeries
from .collect import Collected
from .column_ranges import ColumnRanges
from .stamps import stamp_seconds

if TYPE_CHECKING:
    from ..sources.slurm.rank_logs import RankLog
    from ..sources.slurm.sbatch import SbatchInfo
    from ..sources.slurm.slurm_log import SlurmAttempt, SlurmLog

MATCH_WINDOW_S = 900.0
"""A structured-log file whose process-start stamp lies this close to an attempt's first train.log line is that
attempt's (both are the node's local clock)."""


def _stamp_s(text: str | None, fmt: str) -> float | None:
    """A node-local time stamp as seconds (read as UTC, like every node-local time here; only differences count)."""
    return stamp_seconds(text, fmt)


def _log_s(text: str | None) -> float | None:
    return _stamp_s(text[:19] if text else None, "%Y-%m-%d %H:%M:%S")


def _rank_groups(rank_logs: list[RankLog]) -> list[list[RankLog]]:
    """Structured-log files by process start (a stamp shared by every rank and rotated segment), oldest first."""
    groups: dict[str, list[RankLog]] = {}
    for log in rank_logs:
        if log.started:
            groups.setdefault(log.started, []).append(log)
    return [sorted(groups[stamp], key=lambda log: (log.rank if log.rank is not None else 1 << 30, log.path))
            for stamp in sorted(groups)]


def _match_groups(attempts: list[Attempt], groups: list[list[RankLog]]) -> dict[int, list[RankLog]]:
    """Attempt index -> its structured-log files: by start time on the node clock, else one process start each."""
    out: dict[int, list[RankLog]] = {}
    local = [(a.index, _log_s(a.started_at)) for a in attempts if not a.started_at_utc]
    if len(local) == len(attempts) and all(t is not None for _i, t in local):
        for group in groups:
            start = _stamp_s(group[0].started[:15] if group[0].started else None, "%Y%m%d-%H%M%S")
            if start is None:
                continue
            index, gap = min(((i, abs(t - start)) for i, t in local if t is not None), key=lambda item: item[1])
            if gap <= MATCH_WINDOW_S and index not in out:
                out[index] = group
        if out:
            return out
    if len(groups) == len(attempts):
        return {a.index: group for a, group in zip(attempts, groups)}
    return {}


def _slurm_segment(log: SlurmLog, ks: tuple[int, ...]) -> SlurmAttempt | None:
    """The part of ``log`` an attempt wrote: the one attempt marker there is, else the submitit attempt ``ks`` name."""
    marked = [seg for seg in log.segments if seg.k is not None]
    if len(marked) == 1:
        return marked[0]
    found = [seg for seg in marked if seg.k in ks]
    return found[0] if len(found) == 1 else None


def _slurm_for(attempts: list[Attempt], c: Collected, jobs: dict[int, str],
               ks: dict[int, tuple[int, ...]]) -> dict[int, tuple[SlurmLog, SlurmAttempt | None]]:
    """Attempt index -> (its Slurm log, the part of it the attempt wrote)."""
    logs = c.slurm_logs
    out: dict[int, tuple[SlurmLog, SlurmAttempt | None]] = {}
    if jobs:  # the structured logs name each attempt's job
        by_job = {log.job_id: log for log in logs if log.job_id}
        for index, job in jobs.items():
            log = by_job.get(job)
            if log is not None:
                out[index] = (log, _slurm_segment(log, ks.get(index, ())))
        return out
    if len(logs) == 1:  # one job: submitit's attempt k is the run's attempt k (a requeue keeps the job id)
        (log,) = logs
        by_k = {seg.k: seg for seg in log.segments if seg.k is not None}
        for att in attempts:
            if att.index in by_k:
                out[att.index] = (log, by_k[att.index])
            elif not by_k and len(attempts) == 1:
                out[att.index] = (log, log.segments[0] if log.segments else None)
        return out
    # Several jobs and no structured logs: each attempt marker, jobs in submission (job id) order, is one attempt
    # only when the counts agree.
    ordered = sorted((log for log in logs if log.job_id and log.job_id.isdigit()), key=lambda log: int(log.job_id or 0))
    starts = [(log, seg) for log in ordered for seg in log.segments if seg.k is not None]
    if len(ordered) == len(logs) and len(starts) == len(attempts):
        out = {att.index: start for att, start in zip(attempts, starts)}
    return out


_GRES_GPUS = re.compile(r"(?:^|,)gpu(?::[^:,]+)?:(\d+)(?:,|$)")


def sbatch_gpus(sbatch: SbatchInfo) -> int | None:
    """GPUs a batch script asks for: ``--gpus``, else per node (``--gpus-per-node``, ``--gres=gpu[:type]:N``) x
    ``--nodes`` (1 when absent); None when it asks for none it says."""
    d = sbatch.directives

    def number(key: str) -> int | None:
        value = d.get(key, "").strip()
        value = value.rsplit(":", 1)[-1]  # --gpus-per-node=a100:4
        return int(value) if value.isdigit() and len(value) <= 6 else None

    total = number("gpus")
    if total is not None:
        return total
    per_node = number("gpus-per-node")
    if per_node is None:
        match = _GRES_GPUS.search(d.get("gres", ""))
        per_node = int(match[1]) if match and len(match[1]) <= 6 else None
    if per_node is None:
        return None
    nodes = d.get("nodes", "1").split("-")[0].strip()  # --nodes=2 or a range 2-4: the minimum is what is certain
    return per_node * int(nodes) if nodes.isdigit() and len(nodes) <= 6 else None


def _elapsed(att: Attempt, c: Collected, series: list[ScalarSeries]) -> tuple[float, str] | None:
    """(seconds, file) from the attempt's first to last train.log line, else its event files' wall times, else the
    first to the last point of its most written series that has times (an HF Trainer's or a W&B run's)."""
    if c.train_log is not None:
        seg = next((s for s in c.train_log.segments if s.index == att.index), None)
        if seg is not None:
            begin, end = _log_s(seg.started_at), _log_s(seg.ended_at)
            if begin is not None and end is not None and end >= begin:
                return end - begin, "train.log"
    own = [(p, r) for p, _n, r in c.tb_files if _owned(p, att) and r.first_wall_time_s and r.last_wall_time_s]
    if own:
        begin_s = min(float(r.first_wall_time_s or 0.0) for _p, r in own)
        end_s = max(float(r.last_wall_time_s or 0.0) for _p, r in own)
        if math.isfinite(begin_s) and math.isfinite(end_s) and end_s >= begin_s:
            return end_s - begin_s, own[0][0]
    timed = [(s, s.wall_times_s[np.isfinite(s.wall_times_s)]) for s in series if s.attempt == att.index and len(s)]
    timed = [(s, walls) for s, walls in timed if walls.size > 1]
    if timed:
        best, walls = max(timed, key=lambda item: item[1].size)
        return float(walls.max() - walls.min()), best.source
    return None


def _owned(path: str, att: Attempt) -> bool:
    """True for a file the attempt lists as its source, or that lies in a folder it lists (HF's ``runs/<stamp>``)."""
    return any(path == src or path.startswith(src + "/") for src in att.sources)


_CLOCK_RANK = {"tb_events": 0, "train_log": 1, "hf_trainer": 2}


def _lost_wall(att: Attempt, series: list[ScalarSeries], elapsed: tuple[float, str] | None,
               kinds: dict[str, str]) -> tuple[float, str] | None:
    """(seconds, file) the attempt spent on its lost steps: from the wall time of its last kept point to that of its
    last lost one, on its most written series; the whole attempt when it lost every step it trained."""
    if att.lost_steps is None:
        return None
    first, last = att.lost_steps
    if elapsed is not None and att.first_step is not None and first <= att.first_step and last >= (att.last_step or last):
        return elapsed
    own = [s for s in series if s.attempt == att.index and len(s) and _some_finite(s.wall_times_s)]
    if not own:
        return None
    # A series that reaches the last lost step (an event file may have lost its unflushed tail), then the writers
    # that stamp each point on the training node's clock (a W&B row's time is when the client took it), then the
    # most written one.
    columns = ColumnRanges()  # each step column scanned once (the tags of a train.log share theirs)
    best = min(own, key=lambda s: ((columns.steps(s) or (0, 0))[1] < last,
                                   _CLOCK_RANK.get(kinds.get(s.source, ""), len(_CLOCK_RANK)), -len(s)))
    ok = np.isfinite(best.wall_times_s)
    # No copies of a column that is all finite (5M points: each copy was 40 MB more at the peak of a load).
    steps, walls = (best.steps, best.wall_times_s) if ok.all() else (best.steps[ok], best.wall_times_s[ok])
    kept, lost = _first_of_largest(steps, first - 1), _first_of_largest(steps, last)
    if kept is None or lost is None:
        return None
    spent = float(walls[lost] - walls[kept])
    return (spent, best.source) if spent >= 0 else None


def _some_finite(values: np.ndarray) -> bool:
    """True when a value is finite: a few values' sum is finite when every one is (else numpy answers)."""
    if values.ndim == 1 and 0 < values.shape[0] <= _FEW:
        total = sum(values.tolist())
        if total - total == 0:
            return True
    return bool(np.isfinite(values).any())


_FEW = 256
_SLICE = 1 << 18


def _first_of_largest(steps: np.ndarray, top: int) -> int | None:
    """Position of the first point of the largest step ``<= top``, or None: a slice at a time (a 5M-point column's
    masked copy was 40 MB more at the peak of a load)."""
    found: tuple[int, int] | None = None  # (step, position)
    lowest = np.iinfo(steps.dtype).min
    for start in range(0, steps.shape[0], _SLICE):
        part = steps[start:start + _SLICE]
        inside = part <= top
        if not inside.any():
            continue
        at = int(np.argmax(np.where(inside, part, lowest)))
        if found is None or int(part[at]) > found[0]:
            found = (int(part[at]), start + at)
    return None if found is None else found[1]


def _jobs(attempts: list[Attempt], c: Collected) -> tuple[dict[int, list[RankLog]], dict[int, str],
                                                          dict[int, tuple[int, ...]]]:
    """Per attempt index: its structured-log files, the one job id they name, the submitit attempts they name."""
    groups = _match_groups(attempts, _rank_groups(c.rank_logs))
    jobs: dict[int, str] = {}
    ks: dict[int, tuple[int, ...]] = {}
    for index, group in groups.items():
        ids = {job for log in group for job in log.job_ids}
        if len(ids) == 1:
            jobs[index] = ids.pop()
        ks[index] = tuple(sorted({k for log in group for k in log.attempts}))
    return groups, jobs, ks


def slurm_parts(attempts: list[Attempt], c: Collected) -> dict[int, tuple[SlurmLog, SlurmAttempt | None]]:
    """Attempt index -> (its Slurm log, the part of it the attempt wrote): the one rule pairing Slurm logs with the
    run's attempts (how an attempt ended, ``load.attempts``; its job, node and array index, here)."""
    _groups, jobs, ks = _jobs(attempts, c)
    return _slurm_for(attempts, c, jobs, ks)


def attempt_context(attempts: list[Attempt], c: Collected, series: list[ScalarSeries]) -> list[Attempt]:
    """The attempts with their job id, array index, nodes, partition, GPUs, elapsed time and lost compute set where
    a file says, each named in ``context_sources``."""
    groups, jobs, ks = _jobs(attempts, c)
    kinds = {source.path: source.kind for source in c.sources}
    slurm = _slurm_for(attempts, c, jobs, ks)
    known_jobs = set(jobs.values()) | {log.job_id for log, _seg in slurm.values() if log.job_id}
    sbatch = c.sbatch if len(known_jobs) <= 1 else None  # the script in the run is one submission's
    out = []
    for att in attempts:
        facts: dict[str, tuple[object, str]] = {}
        group = groups.get(att.index, [])
        if att.index in jobs:
            facts["job_id"] = (jobs[att.index], group[0].path)
        hosts = tuple(dict.fromkeys(log.host for log in group if log.host))
        if hosts:
            facts["nodes"] = (hosts, group[0].path)
        sizes = {log.world_size for log in group if log.world_size}
        if len(sizes) == 1:
            facts["gpus"] = (sizes.pop(), group[0].path)
        found = slurm.get(att.index)
        if found is not None:
            log, seg = found
            if log.job_id and "job_id" not in facts:
                facts["job_id"] = (log.job_id, log.path)
            if log.array_index is not None:
                facts["array_index"] = (log.array_index, log.path)
            if seg is not None and seg.nodes and "nodes" not in facts:
                facts["nodes"] = (tuple(seg.nodes), log.path)
        if "nodes" not in facts:  # rank 0's host names each of its event files (``...tfevents.<time>.<host>``)
            named = [(p, n.host) for p, n, _r in c.tb_files if n is not None and n.host and _owned(p, att)]
            if named:
                facts["nodes"] = (tuple(dict.fromkeys(host for _p, host in named)), named[0][0])
        if sbatch is not None:
            if sbatch.directives.get("partition"):
                facts["partition"] = (sbatch.directives["partition"], sbatch.path)
            gpus = sbatch_gpus(sbatch)
            if gpus is not None and "gpus" not in facts:
                facts["gpus"] = (gpus, sbatch.path)
        elapsed = _elapsed(att, c, series)
        if elapsed is not None:
            facts["elapsed_s"] = (round(elapsed[0], 3), elapsed[1])
        lost = _lost_wall(att, series, elapsed, kinds)
        if lost is not None:
            facts["lost_wall_s"] = (round(lost[0], 3), lost[1])
            if "gpus" in facts:
                gpus_n = facts["gpus"][0]
                assert isinstance(gpus_n, int)
                facts["lost_gpu_hours"] = (round(lost[0] * gpus_n / 3600.0, 6), facts["gpus"][1])
        if not facts and not att.context_sources:  # no file says anything more: the attempt as it is
            out.append(att)
            continue
        values = {name: value for name, (value, _src) in facts.items()}
        out.append(dataclasses.replace(att, **values,  # type: ignore[arg-type]  # each value has its field's type
                                       context_sources=tuple((name, src) for name, (_v, src) in facts.items())))
    return out
