"""The quick stage of loading a run: what its listing, small documents and train.log tail say, at once.

A full read of a run can take many seconds (a gigabyte train.log, a big W&B log); ``glance`` answers in
milliseconds whatever the size, so a screen can show the run's header while the full read goes on.
Every fact comes from the functions the full read uses: the same listing rules as ``collect``, the same
document readers (``kinds.DOCUMENTS``), the train.log reader run over the file's tail
(``read_train_log_tail``), the same writer-process grouping of event files, and the same liveness and
status rules (``assemble.is_live``, ``assemble.run_status``). What the quick stage cannot know is None.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from ..model import ConfigDoc, Finding, Provenance
from ..sources.confine import confined_to, layout_links
from .assemble import LIVE_KINDS, LIVE_WINDOW_S, is_live, log_time, run_status
from .collect import Collected, read_kinds
from .discover import classify_dir
from .kinds import DOCUMENTS, KINDS, listdir
from .process_evidence import group_by_process
from .progress import ListedFile


@dataclass(frozen=True, slots=True)
class RunGlance:
    """A run as the quick stage sees it: header facts before the full read; None where it cannot tell."""

    root: Path
    kind: str
    name: str
    status: str | None
    """By the full read's rule on what the tail and listing show (provisional until the full read);
    None when they cannot tell (a W&B run's exit record, a Trainer's state, event files still fresh)."""
    last_step: int | None
    """The last Train: step in train.log's tail (None without a train.log): a lower bound of the run's last
    step (its event files may have logged later steps than its last Train: line)."""
    attempts: int | None
    """Attempts seen: the exact count when ``attempts_exact``, else a lower bound (None: not known yet).
    From a train.log tail only 1: a ``=> Loading config`` line there may be a tester's, not a process start."""
    attempts_exact: bool
    """True when ``attempts`` is what the full read will count (event-file writers, W&B folders)."""
    attempt_started_at: str | None
    """When the current attempt started, when its start is in train.log's tail (node-local time, as written)."""
    provenance: Provenance | None
    """From run_metadata.json; None without one (the full read then takes it from the W&B folders)."""
    configs: tuple[ConfigDoc, ...]
    """The config documents at the top of the run (resolved config, config.py, ...), as the full read gives them
    first; the full read adds train.log's ``Config:`` dumps, W&B configs and Trainer arguments."""
    files: tuple[ListedFile, ...]
    """What the full read will read, with sizes: the progress line's totals."""
    findings: tuple[Finding, ...]
    """What the quick reads found wrong (a damaged document, an unreadable log)."""

    @property
    def bytes_total(self) -> int:
        """Bytes the full read will cover."""
        return sum(f.size_bytes for f in self.files)


def glance(path: Path | str, now: float | None = None) -> RunGlance:
    """The quick stage for the run at ``path`` (milliseconds whatever its size; reads only inside the run)."""
    root = Path(path).absolute()
    kind = classify_dir(root) or "pimm"
    with confined_to(root, layout_links(root)):
        return _glance(root, kind, time.time() if now is None else now)


def _glance(root: Path, kind: str, now: float) -> RunGlance:
    names = listdir(root)
    files = list_files(root, kind, names)
    c = Collected(root=root, kind=kind)
    read_kinds(c, names, DOCUMENTS)
    findings = list(c.findings)
    newest = max((f.mtime_s for f in files if f.kind in LIVE_KINDS), default=0.0)
    status: str | None = None
    last_step: int | None = None
    attempts: int | None = None
    started: str | None = None
    exact = False
    events = [f for f in files if f.kind == "tb_events"]
    wandb = [f for f in files if f.kind == "wandb"]
    fresh = now - newest <= LIVE_WINDOW_S
    if "train.log" in names:
        from ..sources.train_log.reader import read_train_log_tail

        tail = read_train_log_tail(root / "train.log", "train.log")
        findings += tail.findings
        last_step, started = tail.last_step, tail.attempt_started_at
        attempts = 1 if last_step is not None or tail.attempts_in_tail else None
        cut = not tail.last_line_complete
        live = is_live(now, newest, cut, None, None, log_time(tail.last_timestamp))
        # Left open where the full read's extra evidence could say live: the step cadence (a cut tail older
        # than the default window), or fresh event files' own clock and rank logs' tails.
        others = fresh and any(f.kind in ("tb_events", "structured_log") for f in files)
        if tail.ended in ("completed", "crashed") or live or not ((cut and not fresh) or others):
            status = run_status((tail.ended or "unknown") if attempts else None, live)
    elif events:
        from ..sources.tensorboard.reader import parse_event_file_name

        groups = group_by_process([(f.path, parse_event_file_name(Path(f.path).name), None) for f in events])
        attempts = len(groups)
        # A process with several files may have restarted training (steps going back): only the full read tells.
        exact = all(len(group) == 1 for group in groups)
        if not fresh:  # fresh files need the writer's own clock (the full read) to tell
            status = run_status("unknown", False)
    elif kind == "wandb" and wandb:
        attempts, exact = len(wandb), True
    return RunGlance(root=root, kind=kind, name=root.name, status=status, last_step=last_step, attempts=attempts,
                     attempts_exact=exact, attempt_started_at=started,
                     provenance=c.provenance if c.provenance.source else None,
                     configs=tuple(c.configs), files=tuple(files), findings=tuple(findings))


def list_files(root: Path, kind: str, names: list[str]) -> list[ListedFile]:
    """The files ``collect`` will read in the run at ``root`` (top-level ``names``), found by the file-kind
    table's own finders (those that need no earlier read), with sizes."""
    c = Collected(root=root, kind=kind)
    out: list[ListedFile] = []
    for file_kind in KINDS:
        if not file_kind.listed:
            continue
        for path, rel_path in file_kind.find(c, names):
            path, rel_path = file_kind.counted_as(root, path, rel_path)
            try:
                st = os.stat(path)
            except OSError:
                continue
            size = (0 if file_kind.source_kind == "checkpoint" else
                    sum(_size(path / n) for n in listdir(path) if n.startswith("run-") and n.endswith(".wandb"))
                    if file_kind.source_kind == "wandb" else st.st_size)
            out.append(ListedFile(rel_path, file_kind.source_kind, size, st.st_mtime))
    return out


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def listing(path: Path | str) -> tuple[ListedFile, ...]:
    """What the full read of the run at ``path`` will read (a listing and stats only: no file is opened)."""
    root = Path(path).absolute()
    return tuple(list_files(root, classify_dir(root) or "pimm", listdir(root)))
