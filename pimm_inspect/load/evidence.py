"""Turn the readers' raw results into the model's typed facts (``pimm_inspect.evidence``).

This is the one place that knows both sides: everything above ``load`` reads the typed facts only.
"""

from __future__ import annotations

from ..evidence import (AttemptStart, BestMetric, EvalFacts, EventFileFacts, EventMarker, HfFacts, ModelDirFacts,
                        RankLogFacts, SbatchFacts, SlurmAttemptFacts, SlurmLogFacts, TrainLogFacts, WandbRunFacts)
from .attempts import created_at_seconds
from .collect import Collected
from .stale import is_stale


def stale_event_paths(c: Collected) -> set[str]:
    """Event files whose first record predates run_metadata.json's ``created_at``: left by an earlier run."""
    created = created_at_seconds(c.provenance.created_at)
    return {rel_path for rel_path, _name, result in c.tb_files if is_stale(result.first_wall_time_s, created)}


def event_files(c: Collected) -> tuple[EventFileFacts, ...]:
    """One record per event file, in process-start order, stale ones marked."""
    stale = stale_event_paths(c)
    facts = []
    for rel_path, name, result in c.tb_files:
        facts.append(EventFileFacts(
            path=rel_path,
            name_time_s=name.timestamp_s if name is not None else None,
            host=name.host if name is not None else None,
            pid=name.pid if name is not None else None,
            first_wall_time_s=result.first_wall_time_s,
            last_wall_time_s=result.last_wall_time_s,
            record_count=result.record_count,
            scalar_count=result.scalar_count,
            markers=tuple(EventMarker(m.kind, m.step, m.wall_time_s, m.detail) for m in result.markers),
            stale=rel_path in stale))
    return tuple(facts)


def train_log(c: Collected) -> TrainLogFacts | None:
    """Attempt starts, best metrics and size of train.log."""
    log = c.train_log
    if log is None:
        return None
    steps = [seg.last_step for seg in log.segments if seg.last_step is not None]
    return TrainLogFacts(
        path="train.log",
        attempt_starts=tuple(AttemptStart(seg.index, seg.start_line, seg.start_offset) for seg in log.segments),
        best=tuple(BestMetric(name, value, step) for name, value, step in log.best),
        last_step=max(steps) if steps else None,
        line_count=log.line_count,
        end_offset=log.end_offset)


def wandb_runs(c: Collected) -> tuple[WandbRunFacts, ...]:
    """One record per local W&B run folder, in the order they were read."""
    return tuple(WandbRunFacts(
        path=w.rel_path, run_id=w.run_id, project=w.project, entity=w.entity, display_name=w.display_name,
        offline=w.offline, synced=w.synced, url=w.url, sync_command=w.sync_command, start_time_s=w.start_time_s,
        step_metrics=dict(w.x_axis), history_rows=len(w.history_steps), first_step=w.first_step,
        few_rows_late_start=w.few_rows_late_start, dropped_steps=tuple(w.dropped_steps),
        dropped_step_warning=w.dropped_step_warning, file_roles=dict(w.file_roles),
        command=w.provenance.command if w.provenance is not None else None,
        command_source=w.provenance.source if w.provenance is not None else None, resume_from=w.resume_from,
        dropped_step_source=w.dropped_step_details[0].source if w.dropped_step_details else None,
        resume_evidence=w.resume_evidence, reinit_of_active=w.reinit_of_active)
        for w in c.wandb_runs)


def model_dir(c: Collected) -> ModelDirFacts | None:
    """Facts of ``model/`` itself (symlink target, publish leftovers)."""
    m = c.model_dir
    if m is None:
        return None
    return ModelDirFacts(link_target=m.model_link_target, link_dangling=m.model_link_dangling,
                         leftovers=tuple(m.leftovers))


def sbatch(c: Collected) -> SbatchFacts | None:
    """The batch script's directives and text."""
    s = c.sbatch
    return SbatchFacts(s.path, dict(s.directives), s.text) if s is not None else None


def rank_logs(c: Collected) -> tuple[RankLogFacts, ...]:
    """One record per structured-log file."""
    return tuple(RankLogFacts(log.path, log.rank, log.started, log.last_step, log.last_event, log.last_time_s,
                              tuple(log.open_spans)) for log in c.rank_logs)


def slurm_logs(c: Collected) -> tuple[SlurmLogFacts, ...]:
    """Each Slurm log of the job, cut at submitit's attempt markers."""
    return tuple(SlurmLogFacts(log.path, log.job_id, tuple(
        SlurmAttemptFacts(seg.k, seg.n, seg.requeued, tuple(seg.problems)) for seg in log.segments))
        for log in c.slurm_logs)


def hf(c: Collected) -> HfFacts | None:
    """Trainer facts of an HF output dir that are not series, checkpoints or attempts."""
    h = c.hf
    if h is None:
        return None
    return HfFacts(state_path=h.state_path, best_metric=h.best_metric,
                   schedule_notes=tuple(h.schedule_notes), best_metric_name=h.best_metric_name,
                   history_conflicts=tuple(h.history_conflicts))


def eval_results(c: Collected) -> tuple[EvalFacts, ...]:
    """Each tester result (``eval/<stamp>/test_metrics.json``), oldest first, with its numeric metrics."""
    out = []
    for doc in sorted(c.eval_metrics, key=lambda d: (d.stamp, d.path)):
        data = doc.metrics
        inner = data.get("metrics")
        values = inner if isinstance(inner, dict) else data
        metrics = tuple((str(k), float(v)) for k, v in values.items()
                        if isinstance(v, (int, float)) and not isinstance(v, bool))
        split, checkpoint = data.get("split"), data.get("checkpoint")
        out.append(EvalFacts(doc.path, doc.stamp, split if isinstance(split, str) else None,
                             checkpoint if isinstance(checkpoint, str) else None, metrics))
    return tuple(out)
