"""Reader for local W&B run folders (``wandb/run-*``, ``wandb/offline-run-*``) without importing wandb."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ...model import ConfigDoc, Finding, Provenance, ScalarSeries, Severity, SourceFile
from .._common import LIMIT_EXPLANATION, UnreadableFile, file_finding, open_regular
from .._limits import cap_depth, depth_reason
from ._files import ConsoleLine, DroppedStep, RunFiles, read_run_files
from ._bulk import decode_log
from ._framing import FramingState
from ._history import MetricDefinition, build_series
from ._records import _LogState, _nested, _take_record
from .links import FolderLink, folder_link, logged_link, metadata_provenance
from ._proto import WandbProtoUnavailable, record_class

__all__ = ["ConsoleLine", "DroppedStep", "MetricDefinition", "WandbRunResult", "find_wandb_dirs",
           "group_by_run_id", "read_wandb_run"]

FEW_ROWS = 3
"""At most this many history rows counts as "few" for the only-one-point confusion."""
RUN_DIR_PATTERN = re.compile(r"^(offline-)?run-(\d{8}_\d{6})-(.+)$")


@dataclass(frozen=True, slots=True, eq=False)
class WandbRunResult:
    """Everything read from one local W&B run folder."""

    rel_path: str
    """Run folder, relative to the run root."""
    wandb_file: str | None
    """The ``run-<id>.wandb`` transaction log (None when the folder has none)."""
    run_id: str | None
    project: str | None
    entity: str | None
    display_name: str | None
    group: str | None
    job_type: str | None
    notes: str | None
    tags: tuple[str, ...]
    resumed: bool
    """True when the folder's own records say the server continued an existing run of this id: the run record's
    ``resumed`` flag or a ``starting_step`` past 0, the telemetry feature ``resumed`` (wandb 0.12-0.15 set it, not
    the run record), or debug.log's ``run resumed`` line of this folder's init; ``resume="allow"`` alone says
    nothing happened (see ``resume_requested``). ``resume_evidence`` names the record."""
    offline: bool
    synced: bool
    """A ``wandb sync`` marker is present."""
    start_time_s: float | None
    base_url: str | None
    """As recorded (``settings`` file next to the folders) or passed by the caller; None if unknown."""
    url: str | None
    sync_command: str | None
    """``wandb sync <absolute folder>`` for a never-synced offline folder; else None."""
    config: Mapping[str, Any]
    """User config (values JSON-decoded, nested keys as dicts; wandb's own ``_wandb`` key removed)."""
    summary: Mapping[str, Any]
    series: tuple[ScalarSeries, ...]
    x_axis: Mapping[str, str]
    """Tag -> key whose values are the series steps (a step metric or ``_step``)."""
    history_steps: np.ndarray
    """int64 ``_step`` of every history row, in file order."""
    history_timestamps_s: np.ndarray
    """float64 ``_timestamp`` per row (NaN when absent)."""
    history_runtimes_s: np.ndarray
    """float64 ``_runtime`` per row (NaN when absent)."""
    metrics: tuple[MetricDefinition, ...]
    hidden_keys: tuple[str, ...]
    non_scalar_keys: tuple[str, ...]
    """Keys with media, tables, histograms, strings: not turned into series."""
    console: tuple[ConsoleLine, ...]
    """The last console lines (from output records, else files/output.log)."""
    console_line_count: int
    exit_code: int | None
    runtime_s: int | None
    status: str
    """finished (exit 0), crashed (non-zero exit), stopped (non-zero exit after an interrupt: ``interrupted``), unknown
    (no exit record: running or killed)."""
    preempted: bool
    explicit_step_logging: bool
    """wandb's telemetry says ``run.log(..., step=...)`` was used."""
    first_step: int | None
    few_rows_late_start: bool
    """Explicit steps, few rows and a first ``_step`` above 0: the "only one point" confusion."""
    dropped_steps: tuple[int, ...]
    """Steps of ``run.log`` calls W&B ignored because the step went backwards."""
    dropped_step_details: tuple[DroppedStep, ...]
    dropped_step_warning: str | None
    """The first such warning as W&B wrote it."""
    step_regressions: int
    """History rows whose ``_step`` is not above the previous row's (only after a rewind/fork)."""
    unknown_record_count: int
    metadata: Mapping[str, Any] | None
    configs: tuple[ConfigDoc, ...]
    file_roles: Mapping[str, str]
    """Run-relative path -> what the file is."""
    sources: tuple[SourceFile, ...]
    findings: tuple[Finding, ...]
    end_offset: int = 0
    """Offset just past the last whole record of the transaction log (where a refresh continues)."""
    log_state: Any = field(default=None, repr=False)
    """The reading state to continue from when the log grows (None when it cannot be continued)."""
    link: FolderLink | None = None
    """Mode, entity (and where it came from), link, sync command, server rejection of this folder."""
    provenance: Provenance | None = None
    """Launch facts from files/wandb-metadata.json; None when the folder has none."""
    tracebacks: tuple[tuple[str, int, str], ...] = ()
    """(run-relative file, 1-based line of ``Traceback (most recent call last):``, the exception line) per traceback."""
    resume_from: str | None = None
    """The run record's branch point: ``resume_from <id>?_step=N`` (history rewound to N) or ``fork_from ...``."""
    resume_requested: bool = False
    """``wandb.init(resume="allow"/"must")`` as the run record says: a resume only when an earlier folder of this id
    exists (``load.attempts``) or ``resumed`` says so."""
    resume_evidence: str | None = None
    """The record that says ``resumed`` (``<log>: telemetry feature resumed``, ``logs/debug.log:N: run resumed``)."""
    reinit_of_active: str | None = None
    """``logs/debug.log:N`` when this folder was made by a second ``wandb.init`` in a process whose run was still
    active (W&B returned that run and left only this folder's debug.log): no process start of its own."""
    interrupted: str | None = None
    """``<file>:<line>: <text>`` when the console's last word is an interrupt (Ctrl-C, SIGINT): a traceback ending in
    ``KeyboardInterrupt``, or Lightning's ``Detected KeyboardInterrupt, attempting graceful shutdown`` after the last
    traceback. A non-zero exit code then says the process was stopped, not that it crashed (``status``)."""
    core_start_s: float | None = None
    """UTC seconds of wandb-core's first line in logs/debug-internal.log (zoned), the start evidence of a folder whose
    run record is gone (no ``.wandb`` log) and that has no ``files/wandb-metadata.json``; None otherwise."""


def find_wandb_dirs(root: Path, max_depth: int = 3) -> list[Path]:
    """W&B run folders under ``root`` (``wandb/run-*``, ``wandb/offline-run-*``), symlinks ignored."""
    found: list[Path] = []
    seen: set[tuple[int, int]] = set()
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            # `latest-run` and the top-level debug logs are symlinks to real folders/files.
            if entry.is_symlink() or not entry.is_dir(follow_symlinks=False):
                continue
            path = Path(entry.path)
            if RUN_DIR_PATTERN.match(entry.name) and (folder.name in ("wandb", ".wandb") or depth == 0):
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    found.append(path)
            elif depth < max_depth and (not entry.name.startswith(".") or entry.name == ".wandb"):
                stack.append((path, depth + 1))
    if RUN_DIR_PATTERN.match(root.name) and not found:
        found.append(root)
    return sorted(found)


def group_by_run_id(results: list[WandbRunResult]) -> dict[str, list[WandbRunResult]]:
    """Run folders keyed by run id (several folders with one id: a resumed or replayed run)."""
    groups: dict[str, list[WandbRunResult]] = {}
    for result in results:
        if result.run_id:
            groups.setdefault(result.run_id, []).append(result)
    return groups


def _read_log(path: Path, rel: str, state: _LogState) -> None:
    """Frame and decode the transaction log into ``state``; damage becomes findings."""
    try:
        record_cls, _ = record_class()
    except WandbProtoUnavailable as exc:
        state.findings.append(file_finding("file.unreadable", rel, f"{rel}: cannot decode W&B records ({exc})"))
        return
    framing = FramingState(rel)
    state.findings = []  # this read's findings; the undecodable count below is cumulative
    state.resumable = False
    try:
        fh = open_regular(path, rel)
    except UnreadableFile as exc:
        state.findings.append(exc.finding)
        return
    with fh:
        try:
            st = os.fstat(fh.fileno())
            state.undecodable += decode_log(fh, framing, state.end_offset, record_cls, state.history,
                                            state.summary, lambda rec: _take_record(state, rec))
        except OSError as exc:
            state.findings.append(file_finding("file.unreadable", rel, f"{rel}: read failed ({exc.strerror})"))
            st = None
    state.findings += framing.findings
    if state.undecodable:
        state.findings.append(file_finding(
            "file.corrupt", rel, f"{rel}: {state.undecodable} record(s) could not be decoded and were skipped",
            severity=Severity.WARNING))
    if st is not None:
        state.source = SourceFile(rel, "wandb", st.st_size, st.st_mtime, framing.bytes_read)
        state.end_offset = framing.bytes_read
        state.resumable = framing.header_ok and not framing.corrupt_regions


_TRACEBACK = "Traceback (most recent call last):"
"""What Python prints first of an uncaught exception's traceback."""


def _tracebacks(files: RunFiles, lines: list[ConsoleLine], total: int, log_rel: str | None
                ) -> tuple[tuple[str, int, str], ...]:
    """Where each Python traceback in the console output starts, and the exception it ends with.

    files/output.log is named when present (it is what a user opens); else the transaction log's output records.
    """
    if files.output_log is not None:
        lines, total, source = list(files.output_log.lines), files.output_log.total, files.output_log.source
    else:
        source = log_rel or ""
    first_no = total - len(lines) + 1
    found: list[tuple[str, int, str]] = []
    for i, line in enumerate(lines):
        at = line.text.find(_TRACEBACK)
        if at < 0:
            continue
        # The traceback need not start its line: a progress bar drawn with \r and no newline runs on into it
        # (``  0%|...| 0/61683 [00:00<?, ?it/s]Traceback ...``), and torch's distributed excepthook puts
        # ``[rank0]: `` before every line. A lead the next line repeats is such a prefix: the body is read past it.
        lead = line.text[:at]
        prefix = lead if lead and i + 1 < len(lines) and lines[i + 1].text.startswith(lead) else ""
        body = [x.text[len(prefix):] if x.text.startswith(prefix) else x.text for x in lines[i + 1:i + 500]]
        end = next((j for j, text in enumerate(body) if text and not text.startswith((" ", "\t"))), None)
        found.append((source, first_no + i, body[end][:300] if end is not None else "a traceback"))
    return tuple(found[-20:])


_LIGHTNING_INTERRUPT = "Detected KeyboardInterrupt, attempting graceful shutdown"
"""What pytorch-lightning prints when a KeyboardInterrupt (Ctrl-C, SIGINT) stops ``fit``; it then exits non-zero."""


def _interrupt(files: RunFiles, lines: list[ConsoleLine], total: int, log_rel: str | None,
               tracebacks: tuple[tuple[str, int, str], ...]) -> str | None:
    """Where the console says the process was interrupted, when that is its last word (``interrupted``)."""
    if files.output_log is not None:
        lines, total, source = list(files.output_log.lines), files.output_log.total, files.output_log.source
    else:
        source = log_rel or ""
    last_traceback = tracebacks[-1] if tracebacks else None
    first_no = total - len(lines) + 1
    after = last_traceback[1] if last_traceback is not None else 0
    for i in range(len(lines) - 1, -1, -1):
        number = first_no + i
        if number <= after:
            break
        if _LIGHTNING_INTERRUPT in lines[i].text:
            return f"{source}:{number}: {_LIGHTNING_INTERRUPT}"
    if last_traceback is not None and last_traceback[2].startswith("KeyboardInterrupt"):
        return f"{last_traceback[0]}:{last_traceback[1]}: {last_traceback[2][:100]}"
    return None


def _status(exit_code: int | None, interrupted: str | None) -> str:
    """finished (exit code 0), crashed (another code), stopped (another code after an interrupt), unknown (none)."""
    if exit_code is None:
        return "unknown"
    if exit_code == 0:
        return "finished"
    return "stopped" if interrupted else "crashed"


def _union_dropped(*sources: list[DroppedStep]) -> list[DroppedStep]:
    """Every dropped call any file records, once per (step, current step), in step order.

    The console copy in the log, files/output.log and wandb-core's debug-internal.log can each hold only part
    (the console is captured until the process stops printing; debug-internal notes every ignored row).
    """
    seen: dict[tuple[int, int], DroppedStep] = {}
    for source in sources:
        for drop in source:
            seen.setdefault((drop.step, drop.current_step), drop)
    return sorted(seen.values(), key=lambda d: (d.step, d.current_step))


def read_wandb_run(run_dir: Path, rel_path: str, base_url: str | None = None,
                   previous: WandbRunResult | None = None) -> WandbRunResult:
    """Read one W&B run folder (transaction log, files/, logs/); never raises on damaged input.

    With ``previous`` (an earlier result for the same folder whose log has since grown), only the
    log's appended bytes are read: decoding continues from ``previous.end_offset`` with its state.
    """
    prefix = f"{rel_path}/" if rel_path not in ("", ".") else ""
    name_match = RUN_DIR_PATTERN.match(run_dir.name)
    log_paths = sorted(run_dir.glob("run-*.wandb"))  # open_regular names anything that is not a regular file
    log_rel = prefix + log_paths[0].name if log_paths else None
    state = previous.log_state if previous is not None and previous.wandb_file == log_rel else None
    if state is None or not state.resumable:
        state = _LogState(log_rel or prefix + "output")
    if log_rel is not None:  # set exactly when there is a log
        _read_log(log_paths[0], log_rel, state)
    run = state.run
    run_id = run.get("run_id") or (log_paths[0].name[4:-6] if log_paths else None) or (
        name_match.group(3) if name_match else None)
    files: RunFiles = read_run_files(run_dir, rel_path, run_id)
    series, x_axis, non_scalar = build_series(state.history, state.metrics, log_rel or "")

    console_lines, console_total, log_dropped = state.console.view()
    if not state.has_console and files.output_log is not None:
        console_lines, console_total = list(files.output_log.lines), files.output_log.total
    dropped = _union_dropped(log_dropped, files.output_log.dropped if files.output_log else [], files.core_dropped)
    steps = np.asarray(state.history.steps, dtype=np.int64)
    first_step = int(steps[0]) if len(steps) else None

    offline = state.offline or bool(name_match and name_match.group(1))
    link = folder_link(run_dir, prefix, run, files, run_id, offline, log_rel, base_url)
    entity = link.entity
    project = run.get("project") or files.settings.get("project") or (
        files.finished_entity[1] if files.finished_entity else None)
    recorded_base = link.base_url  # vetted (link_rules): an address that cannot be a link is not kept
    url = link.url or (logged_link(files) if not link.server_rejection and not link.sync_command
                       and not link.refused else None)
    sync_command = link.sync_command

    config = _nested(state.config)
    config.pop("_wandb", None)  # wandb's own bookkeeping, not the user's config
    config, cut = cap_depth(config)  # the one depth cap every nested value from a run file has
    limit_findings = [file_finding("file.over-limit", log_rel or prefix, f"{log_rel or prefix}: config value "
                                   f"{depth_reason(cut)}", LIMIT_EXPLANATION)] if cut else []
    configs = list(files.configs)
    if state.config:
        configs.insert(0, ConfigDoc(log_rel or prefix, "wandb_config", config, None))
    roles = dict(files.roles)
    if log_rel:
        roles[log_rel] = ("W&B transaction log (binary, LevelDB-log framing of protobuf records): history rows, "
                          "config, summary, define_metric, console output, exit code")
    sources = ([state.source] if state.source else []) + files.sources
    tracebacks = _tracebacks(files, console_lines, console_total, log_rel)
    interrupted = _interrupt(files, console_lines, console_total, log_rel, tracebacks)
    exit_code = state.exit_code
    if log_rel is None and files.exit_line is not None:
        # No transaction log (gone, or never committed: GitHub refuses files over 100 MB): the process's own exit
        # code in logs/debug.log is the only word of how it ended.
        exit_code = files.exit_line[0]
    return WandbRunResult(
        rel_path=rel_path, wandb_file=log_rel, run_id=run_id, project=project, entity=entity,
        display_name=run.get("display_name"), group=run.get("group"), job_type=run.get("job_type"),
        notes=run.get("notes"), tags=run.get("tags") or (), resumed=bool(run.get("resumed") or files.resumed_line),
        resume_requested=bool(run.get("resume_requested")),
        resume_evidence=(f"{log_rel}: {run['resumed']}" if run.get("resumed") else
                         f"{files.resumed_line}: run resumed" if files.resumed_line else None),
        reinit_of_active=files.reinit_line if log_rel is None else None,
        offline=offline, synced=files.synced, start_time_s=run.get("start_time_s"),
        base_url=recorded_base, url=url, sync_command=sync_command,
        config=config, summary=cap_depth(_nested(state.summary))[0] if state.summary else (files.summary_json or {}),
        series=tuple(series), x_axis=x_axis, history_steps=steps,
        history_timestamps_s=np.asarray(state.history.timestamps, dtype=np.float64),
        history_runtimes_s=np.asarray(state.history.runtimes, dtype=np.float64),
        metrics=tuple(state.metrics), hidden_keys=tuple(m.name for m in state.metrics if m.hidden and m.name),
        non_scalar_keys=tuple(non_scalar), console=tuple(console_lines), console_line_count=console_total,
        exit_code=exit_code, runtime_s=state.runtime_s,
        status=_status(exit_code, interrupted),
        preempted=state.preempted, explicit_step_logging=state.explicit_step, first_step=first_step,
        few_rows_late_start=bool(state.explicit_step and first_step and first_step > 0 and len(steps) <= FEW_ROWS),
        dropped_steps=tuple(d.step for d in dropped), dropped_step_details=tuple(dropped),
        dropped_step_warning=dropped[0].message if dropped else None,
        step_regressions=int(np.count_nonzero(np.diff(steps) <= 0)) if len(steps) > 1 else 0,
        unknown_record_count=state.unknown, metadata=files.metadata, configs=tuple(configs),
        file_roles=roles, sources=tuple(sources), findings=tuple(state.findings + files.findings + limit_findings),
        # Only a log without its exit record can still grow: keep the state to continue from.
        end_offset=state.end_offset, log_state=state if log_paths and exit_code is None else None,
        link=link, provenance=metadata_provenance(files.metadata, prefix + "files/wandb-metadata.json"),
        tracebacks=tracebacks, resume_from=run.get("resume_from"), core_start_s=files.core_start_s,
        interrupted=interrupted,
    )
