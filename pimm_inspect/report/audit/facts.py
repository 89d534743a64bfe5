"""The facts an audit report shows about one run, gathered once from the analysed Run for every format.

Every string here is display-ready text: secrets masked (``analysis.secrets.mask_text``/``mask_value``), redacted
when asked (``redact.Redactor``), control characters shown as escapes (``safe_text.clean``). Escaping for a
format (HTML autoescape, Markdown code spans) is the renderer's job; nothing here is markup.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ...analysis.configs import attempt_configs, config_differences, flatten_config, query_config
from ...analysis.secrets import mask_text, mask_value
from ...analysis.summary import policy_note, restored_by, summary_of
from ...model import Attempt, Run
from ..json_doc import run_notes, run_path
from ..safe_text import clean, finding_text, name_text, shorten
from .charts import ChartGroup, chart_groups
from .redact import Redact

MAX_CONFIG_ROWS = 400
"""Keys of the run's config listed; the rest are counted."""
MAX_DIFF_ROWS = 200
"""Differing keys listed per pair of attempts; the rest are counted."""
MAX_VALUE_CHARS = 200
"""A config value longer than this is cut (with an ellipsis)."""

Scrub = Callable[..., str]


def scrubber(redact: Redact) -> Scrub:
    """Run text to display text: secrets masked, then redacted, then control characters escaped; ``name=True`` for a
    file or folder name (a path), written by the one name escape first (``name_text``: a backslash doubled, a byte
    that is not UTF-8 ``\\xNN``), so two files never read the same in the report when ``ls`` tells them apart."""

    def scrub(value: object, newlines: bool = False, name: bool = False) -> str:
        text = value if isinstance(value, str) else str(value)
        return clean(redact(mask_text(name_text(text) if name else text)), newlines=newlines)

    return scrub


@dataclass(frozen=True, slots=True)
class AttemptRow:
    """One attempt as the timeline and the attempts table show it."""

    index: int
    started: str
    first_step: int | None
    last_step: int | None
    origin: str
    restore_step: int | None
    restored_checkpoint: str
    """The checkpoint restored (run-relative), else the path the log names; '' when none."""
    ended: str
    end_detail: str
    lost: tuple[int, int] | None
    saved_steps: tuple[int, ...]
    sources: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Band:
    """A replayed step range: how many copies, written by which attempts, in which files."""

    first_step: int
    last_step: int
    copies: int
    attempts: tuple[int, ...]
    paths: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FindingRow:
    """One finding as shown: masked message, explanation and what each viewer displays (``Finding.views``)."""

    severity: str
    code: str
    message: str
    explanation: str
    steps: tuple[int, int] | None
    attempts: tuple[int, ...]
    paths: tuple[str, ...]
    views: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class CheckpointRow:
    """One checkpoint as the checkpoints table shows it."""

    path: str
    format: str
    role: str
    complete: bool
    step: int | None
    wandb_id: str
    cursor: str
    picked: bool
    restored_by: tuple[tuple[int, int | None], ...]
    """(attempt, restore step) of every attempt that restarted from this checkpoint (``analysis.summary.restored_by``)."""


@dataclass(frozen=True, slots=True)
class AttemptProvenance:
    """What each attempt ran: where (hosts and pids of its event files), its W&B command, its config documents."""

    index: int
    hosts: tuple[str, ...]
    command: str
    configs: tuple[str, ...]
    files: tuple[str, ...]
    """The files that hold what the attempt wrote (``Attempt.sources``)."""


@dataclass(frozen=True, slots=True)
class ConfigDiff:
    """The keys that differ between the configs two attempts started with."""

    left: int
    right: int
    left_doc: str
    right_doc: str
    rows: tuple[tuple[str, str, str], ...]
    more: int


@dataclass(frozen=True, slots=True)
class RunFacts:
    """Everything one run's section of a report shows."""

    anchor: str
    label: str
    kind: str
    status: str
    header: tuple[tuple[str, str], ...]
    attempts: tuple[AttemptRow, ...]
    step_range: tuple[int, int] | None
    bands: tuple[Band, ...]
    gaps: tuple[tuple[int, int], ...]
    findings: tuple[FindingRow, ...]
    counts: dict[str, int]
    checkpoints: tuple[CheckpointRow, ...]
    restored_elsewhere: tuple[tuple[int, str], ...]
    """(attempt, checkpoint) restored from a checkpoint the run does not hold."""
    provenance: tuple[AttemptProvenance, ...]
    config_doc: str
    config_rows: tuple[tuple[str, str], ...]
    config_more: int
    config_listed: bool
    """False in a big tree's sections: the run's whole config is left to its own report."""
    config_diffs: tuple[ConfigDiff, ...]
    wandb: tuple[tuple[str, str], ...]
    wandb_url: str | None
    wandb_sync: str | None
    notes: tuple[str, ...]
    sources: tuple[tuple[str, str, int], ...]
    charts: tuple[ChartGroup, ...] = ()
    charts_note: str = ""
    policy_note: str = ""
    """Which steps exist more than once, what the policy draws of them, what TensorBoard and W&B show
    (``analysis.summary.policy_note``, the sentence every view shares)."""
    last_step: int | None = None
    best_metric: str = "-"


def _utc(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "-"
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _value(value: Any) -> str:
    """A config value as JSON text (what ``config --flat`` prints), cut when long."""
    try:
        text = json.dumps(value, default=str, allow_nan=True)
    except (TypeError, ValueError):
        text = str(value)
    return shorten(text, MAX_VALUE_CHARS)


def _link(url: str | None, scrub: Scrub) -> str | None:
    """The vetted W&B link (``WandbInfo.url``) when masking and redaction leave it whole; else no link."""
    if not url or scrub(url) != url or not url.startswith(("https://", "http://")):
        return None
    return url


def _attempt_row(a: Attempt, scrub: Scrub) -> AttemptRow:
    started = (a.started_at + (" UTC" if a.started_at_utc else "")) if a.started_at else "-"
    told = a.end_detail and not a.end_detail.startswith("log stops")  # evidence, not the generic guess
    restored = a.restored_checkpoint or a.resumed_from or ""
    return AttemptRow(a.index, scrub(started), a.first_step, a.last_step, scrub(a.origin), a.restore_step,
                      scrub(restored, name=bool(a.restored_checkpoint)), scrub(a.ended), scrub(a.end_detail) if told and a.end_detail else "",
                      a.lost_steps, a.saved_steps, tuple(scrub(s, name=True) for s in a.sources))


def _header(run: Run, scrub: Scrub) -> tuple[tuple[str, str], ...]:
    summary = summary_of(run)
    prov = run.provenance
    rows: list[tuple[str, str]] = [("kind", scrub(f"{run.kind} {run.era}" if run.era else run.kind)),
                                   ("status", scrub(run.status)), ("attempts", str(len(run.attempts))),
                                   ("last step", "-" if summary.last_step is None else str(summary.last_step)),
                                   ("best metric", scrub(summary.best_metric)),
                                   ("last logged", _utc(summary.last_logged_s))]
    if prov.git_commit:
        dirty = {True: " (dirty)", False: " (clean)"}.get(prov.git_dirty, "") if prov.git_dirty is not None else ""
        rows.append(("git commit", scrub(prov.git_commit[:12] + dirty)))
    for label, value in (("git branch", prov.git_branch), ("git remote", prov.git_remote), ("host", prov.host),
                         ("created", prov.created_at), ("python", prov.python), ("GPU", prov.gpu),
                         ("command", prov.command), ("launch command", prov.launch_command),
                         ("provenance from", prov.source)):
        if value:
            rows.append((label, scrub(value)))
    return tuple(rows)


def _provenance(run: Run, scrub: Scrub) -> tuple[AttemptProvenance, ...]:
    hosts_by_file = {f.path: (f.host, f.pid) for f in run.event_files}
    commands = {w.path: w.command for w in run.wandb_runs if w.command}
    out = []
    for a in run.attempts:
        hosts = sorted({f"{host or '?'}" + (f" pid {pid}" if pid is not None else "")
                        for path, (host, pid) in hosts_by_file.items() if path in a.sources and (host or pid)})
        command = next((c for path, c in commands.items() if any(s == path or s.startswith(path + "/")
                                                                   for s in a.sources)), "")
        docs = tuple(scrub(name_text(doc.path)) + scrub(f" ({doc.kind})") for doc in attempt_configs(run, a.index))
        out.append(AttemptProvenance(a.index, tuple(scrub(h) for h in hosts), scrub(command) if command else "", docs,
                                     tuple(scrub(path, name=True) for path in a.sources)))
    return tuple(out)


def _config_diffs(run: Run, scrub: Scrub) -> tuple[ConfigDiff, ...]:
    """Consecutive attempts' configs (the same kind of document) compared, masked values."""
    firsts = []
    for a in run.attempts:
        parsed = [doc for doc in attempt_configs(run, a.index) if isinstance(doc.data, dict)]
        if parsed:
            firsts.append((a.index, parsed[0]))
    diffs = []
    for (left_i, left), (right_i, right) in zip(firsts, firsts[1:]):
        if left.kind != right.kind:
            continue
        found = config_differences(mask_value(left.data), mask_value(right.data))
        rows = tuple((scrub(d.key), scrub(_value(d.left)) if d.in_left else "(absent)",
                      scrub(_value(d.right)) if d.in_right else "(absent)") for d in found[:MAX_DIFF_ROWS])
        diffs.append(ConfigDiff(left_i, right_i, scrub(name_text(left.path)) + scrub(f" ({left.kind})"),
                                scrub(name_text(right.path)) + scrub(f" ({right.kind})"), rows, max(0, len(found) - MAX_DIFF_ROWS)))
    return tuple(diffs)


def run_facts(run: Run, base: Path, anchor: str, redact: Redact, tags: tuple[str, ...] = (),
              policy: str = "all", draw: bool = True) -> RunFacts:
    """The facts of one analysed run; ``draw`` False leaves the curves and the run's whole config listing out (the
    sections of a big tree: its runs' own reports have them); the config diffs between attempts stay."""
    scrub = scrubber(redact)
    path = run_path(run, base)
    label = scrub(run.name, name=True) if path == "." else scrub(path)  # run_path: escaped already
    attempts = tuple(_attempt_row(a, scrub) for a in run.attempts)
    steps = [s for a in run.attempts for s in (a.first_step, a.last_step) if s is not None]
    order = sorted(range(len(run.findings)), key=lambda i: (-int(run.findings[i].severity), i))
    findings = tuple(FindingRow(f.severity.label, scrub(f.code), scrub(finding_text(f.message, f.paths)),
                                scrub(finding_text(f.explanation, f.paths), True),
                                f.steps, f.attempts, tuple(scrub(p, name=True) for p in f.paths),
                                tuple((scrub(v), scrub(s)) for v, s in f.views))
                     for f in (run.findings[i] for i in order))
    counts = {"error": 0, "warning": 0, "info": 0}
    for f in run.findings:
        counts[f.severity.label] += 1
    held = {ck.path for ck in run.checkpoints}
    restores = restored_by(run)
    checkpoints = tuple(CheckpointRow(
        scrub(ck.path, name=True), scrub(ck.format), scrub(ck.role), ck.complete, ck.global_step, scrub(ck.wandb_run_id or "-"),
        scrub("-" if ck.wandb_cursor is None else f"{ck.wandb_cursor_key}={ck.wandb_cursor}"), ck.resume_candidate,
        restores.get(ck.path, ())) for ck in run.checkpoints)
    elsewhere = tuple((a.index, scrub(a.restored_checkpoint, name=True)) for a in run.attempts
                      if a.restored_checkpoint and a.restored_checkpoint not in held)
    doc = query_config(run)
    flat = flatten_config(mask_value(doc.data)) if doc is not None and draw else {}
    config_rows = tuple((scrub(k), scrub(_value(v))) for k, v in list(flat.items())[:MAX_CONFIG_ROWS])
    info = run.wandb
    wandb_rows = [(label_, scrub(value)) for label_, value in (
        ("run ids", ", ".join(info.run_ids)), ("project", info.project), ("entity", info.entity),
        ("mode", info.mode), ("local folders", ", ".join(info.local_dirs)), ("server rejection", info.server_rejection),
        ("note", info.link_note)) if value]
    if info.url and _link(info.url, scrub) is None:
        wandb_rows.append(("link (redacted)", scrub(info.url)))
    groups, note = chart_groups(run, tags, policy, scrub) if draw else ((), "")
    summary = summary_of(run)
    return RunFacts(
        anchor=anchor, label=label, kind=scrub(f"{run.kind} {run.era}" if run.era else run.kind),
        status=scrub(run.status), header=_header(run, scrub), attempts=attempts,
        step_range=(min(steps), max(steps)) if steps else None,
        bands=tuple(Band(r.first_step, r.last_step, r.copies, r.attempts, tuple(scrub(p, name=True) for p in r.paths))
                    for r in run.replayed),
        gaps=tuple(f.steps for f in run.findings if f.code == "steps.gap" and f.steps is not None),
        findings=findings, counts=counts, checkpoints=checkpoints, restored_elsewhere=elsewhere,
        provenance=_provenance(run, scrub), config_doc=scrub(name_text(doc.path)) + scrub(f" ({doc.kind})") if doc is not None else "",
        config_rows=config_rows, config_more=max(0, len(flat) - MAX_CONFIG_ROWS), config_listed=draw,
        config_diffs=_config_diffs(run, scrub),
        wandb=tuple(wandb_rows), wandb_url=_link(info.url, scrub),
        wandb_sync=scrub(info.sync_command) if info.sync_command else None,
        notes=tuple(scrub(n, True) for n in run_notes(run)),
        sources=tuple((scrub(s.path, name=True), scrub(s.kind), s.size_bytes) for s in run.sources),
        charts=tuple(groups), charts_note=note, policy_note=scrub(policy_note(run, policy), True),
        last_step=summary.last_step, best_metric=scrub(summary.best_metric))
