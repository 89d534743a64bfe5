"""Call every reader that applies to a run directory and gather their results."""

from __future__ import annotations

import os
import re
import traceback
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TypeVar

from ..model import ConfigDoc, Finding, Provenance, Severity, SourceFile
from ..sources import rel
from .discover import EVENT_FILE, WANDB_RUN_DIR
from ..sources.confine import also_allowed, confined_to, layout_links

SLURM_LOG = re.compile(r"^slurm-\d+(?:_\d+)?\.out$")

_T = TypeVar("_T")


@dataclass
class Collected:
    """Raw reader results for one run, before attempts and status are worked out."""

    root: Path
    kind: str
    sources: list[SourceFile] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    configs: list[ConfigDoc] = field(default_factory=list)
    provenance: Provenance = field(default_factory=Provenance)
    metadata_raw: dict[str, Any] | None = None
    train_log: Any = None
    tb_files: list[tuple[str, Any, Any]] = field(default_factory=list)
    """(rel path, EventFileName or None, EventFileResult) ordered by name timestamp then first wall time."""
    model_dir: Any = None
    sbatch: Any = None
    eval_metrics: list[Any] = field(default_factory=list)
    rank_logs: list[Any] = field(default_factory=list)
    slurm_logs: list[Any] = field(default_factory=list)
    wandb_runs: list[Any] = field(default_factory=list)
    hf: Any = None
    cache: Any = None
    """A ReadCache: growing train.log and event files are read from where the last read stopped."""
    progress: Any = None
    """A ReadTracker told of every file read (progress, and the place a cancelled load stops), or None."""


def _source(root: Path, path: Path, kind: str, bytes_read: int = 0) -> SourceFile:
    try:
        st = os.stat(path)
        size, mtime = st.st_size, st.st_mtime
    except OSError:
        size, mtime = 0, 0.0
    return SourceFile(rel(path, root), kind, size, mtime, bytes_read)


@contextmanager
def _reading(c: Collected, rel_path: str) -> Iterator[None]:
    """Run one reader; a bug it trips over becomes a finding naming the file, and the run loads on."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - one file must never cost the whole run
        where = traceback.extract_tb(exc.__traceback__)[-1]
        c.findings.append(Finding(
            "internal.reader-failed", Severity.ERROR, f"{rel_path}: could not be read: {type(exc).__name__}: {exc}"[:400],
            (rel_path,), None,
            f"The reader for this file failed on its content; the rest of the run was read. "
            f"Please report this bug (at {Path(where.filename).name}:{where.lineno})."))


@contextmanager
def _tracked(c: Collected, kind: str, path: Path) -> Iterator[None]:
    """Tell the progress tracker (if any) that a file of ``kind`` is read; it may stop the load here."""
    if c.progress is not None:
        c.progress.reading(kind)
    yield
    if c.progress is not None:
        c.progress.read(kind, path, rel(path, c.root) if path.is_relative_to(c.root) else path.as_posix())


def _read_one(c: Collected, path: Path, source_kind: str,
              reader: Callable[[Path, str], tuple[_T | None, Iterable[Finding]]],
              into: list[_T] | None = None) -> _T | None:
    """A ``(value, findings)`` reader on one file, guarded: keep its findings (and value in ``into``), note the source."""
    rel_path = rel(path, c.root)
    value = None
    with _tracked(c, source_kind, path), _reading(c, rel_path):
        value, findings = reader(path, rel_path)
        c.findings += findings
        if value and into is not None:
            into.append(value)
    c.sources.append(_source(c.root, path, source_kind))
    return value


def _listdir(path: Path) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def collect(root: Path, kind: str, cache: Any = None, progress: Any = None) -> Collected:
    """Read every known file of the run at ``root`` (through ``cache``, a ReadCache, when given).

    No file whose real path leaves ``root`` is read (``file.outside-run``), except pimm's own layout.
    ``progress`` (a ReadTracker) is told of every file and may stop the read between two files.
    """
    if cache is None:
        from .cache import transient_cache

        cache = transient_cache()  # the disk cache, unless it is off
    with confined_to(root, layout_links(root)):
        return _collect_confined(root, kind, cache, progress)


def _collect_confined(root: Path, kind: str, cache: Any = None, progress: Any = None) -> Collected:
    c = Collected(root=root, kind=kind, cache=cache, progress=progress)
    names = _listdir(root)
    _read_docs(c, names)
    with _reading(c, "train.log"):
        _read_train_log(c)
    _read_event_files(c, root, names)
    if kind == "tensorboard" and not c.tb_files:
        # A plain TensorBoard run may keep its event files one level down (runs/<name>/).
        for name in names:
            if (root / name).is_dir():
                _read_event_files(c, root / name, _listdir(root / name))
    with _reading(c, "model"):
        _read_model_dir(c)
    _read_side_files(c, names)
    with _reading(c, "slurm_logs"):
        _read_outside_slurm(c)
    _read_wandb(c, names)
    if kind == "hf-trainer":
        with _tracked(c, "hf_trainer", root / "trainer_state.json"), _reading(c, "trainer_state.json"):
            _read_hf(c)
    return c


def _read_docs(c: Collected, names: list[str]) -> None:
    from ..sources import json_docs

    root = c.root
    if "run_metadata.json" in names:
        with _tracked(c, "json", root / "run_metadata.json"), _reading(c, "run_metadata.json"):
            _read_metadata(c)
    for name, kind in (("resolved_config.json", "resolved_config"), ("model_config.json", "model_config")):
        if name in names:
            _read_one(c, root / name, "json", partial(json_docs.read_config_json, kind=kind), c.configs)
    if "config.py" in names:
        _read_one(c, root / "config.py", "config_py", partial(json_docs.read_text_doc, kind="config_py"), c.configs)
    if "hparams.yaml" in names:  # PyTorch Lightning's logger version folder
        from ..sources.hparams_yaml import read_hparams_yaml

        _read_one(c, root / "hparams.yaml", "config_yaml", read_hparams_yaml, c.configs)


def _read_metadata(c: Collected) -> None:
    from ..sources import json_docs

    meta = json_docs.read_run_metadata(c.root / "run_metadata.json", "run_metadata.json")
    c.provenance, c.metadata_raw = meta.provenance, meta.raw
    c.findings += meta.findings
    c.sources.append(_source(c.root, c.root / "run_metadata.json", "json"))


def _read_train_log(c: Collected) -> None:
    path = c.root / "train.log"
    if not (path.exists() or path.is_symlink()):
        return
    from ..sources.train_log import read_train_log

    with _tracked(c, "train_log", path):
        result = c.cache.train_log(path, "train.log") if c.cache is not None else read_train_log(path, "train.log")
    c.train_log = result
    c.findings += result.findings
    c.sources.append(_source(c.root, path, "train_log", result.end_offset))
    from ..sources.config_dump import read_config_dumps  # each attempt's Config: dump (issue 12)

    dumps, findings = read_config_dumps(path, "train.log", result.segments)
    c.configs += dumps
    c.findings += findings


def _event_file_order(item: tuple[str, Any, Any]) -> tuple[float, float, str]:
    """Process-start order: the timestamp in the name, then the first wall time, then the name."""
    parsed, result = item[1], item[2]
    stamp = parsed.timestamp_s if parsed else float("inf")
    first = result.first_wall_time_s if result.first_wall_time_s is not None else float("inf")
    return (stamp, first, item[0])


def _read_event_files(c: Collected, folder: Path, names: list[str]) -> None:
    from ..sources.tb_events import parse_event_file_name, read_event_file

    found = []
    for name in names:
        if not EVENT_FILE.match(name):
            continue
        path = folder / name
        rel_path = rel(path, c.root)
        with _tracked(c, "tb_events", path), _reading(c, rel_path):
            result = c.cache.event_file(path, rel_path) if c.cache is not None else read_event_file(path, rel_path)
            c.findings += result.findings
            c.sources.append(_source(c.root, path, "tb_events", result.end_offset))
            found.append((rel_path, parse_event_file_name(name), result))

    c.tb_files += found
    c.tb_files.sort(key=_event_file_order)


def _read_model_dir(c: Collected) -> None:
    model = c.root / "model"
    if not (os.path.lexists(model)):
        return
    from ..sources.checkpoint import read_model_dir

    with _tracked(c, "checkpoint", model):
        result = c.cache.model_dir(model, c.root) if c.cache is not None else read_model_dir(model, c.root)
    c.model_dir = result
    c.findings += result.findings
    for info in result.checkpoints:
        c.sources.append(_source(c.root, c.root / info.path, "checkpoint"))


def _read_side_files(c: Collected, names: list[str]) -> None:
    root = c.root
    if "launch.sbatch" in names:
        from ..sources.sbatch import read_sbatch

        c.sbatch = _read_one(c, root / "launch.sbatch", "sbatch", read_sbatch)
    if "eval" in names:
        from ..sources.json_docs import read_eval_metrics

        for stamp in _listdir(root / "eval"):
            path = root / "eval" / stamp / "test_metrics.json"
            if path.exists():
                _read_one(c, path, "eval", read_eval_metrics, c.eval_metrics)
    if "structured_logs" in names:
        from ..sources.structured_logs import read_rank_log

        for name in _listdir(root / "structured_logs"):
            if ".jsonl" not in name:
                continue
            _read_one(c, root / "structured_logs" / name, "structured_log", read_rank_log, c.rank_logs)
    for name in names:
        if SLURM_LOG.match(name):
            from ..sources.slurm import read_slurm_log

            _read_one(c, root / name, "slurm", read_slurm_log, c.slurm_logs)


def _read_outside_slurm(c: Collected) -> None:
    """The job's Slurm log where pimm's launch put it (``<repo>/slurm_logs/``), named by its absolute path."""
    from ..sources.slurm import read_slurm_log
    from .slurm_paths import outside_slurm_logs

    beside = {log.job_id for log in c.slurm_logs}
    outside = outside_slurm_logs(c.root, c.sbatch, c.metadata_raw, c.rank_logs)
    for path, why in outside.named:
        c.findings.append(Finding("file.outside-run", Severity.INFO, f"launch.sbatch points at the Slurm log "
                                  f"{path.as_posix()}: {why}", ("launch.sbatch",)))
    for path in outside.read:
        name = path.absolute().as_posix()
        with _tracked(c, "slurm", path), also_allowed(path):
            log, findings = read_slurm_log(path, name)
        c.findings += findings
        if log is not None and (log.job_id is None or log.job_id not in beside):
            c.slurm_logs.append(log)
            beside.add(log.job_id)
            st = path.stat()
            c.sources.append(SourceFile(name, "slurm", st.st_size, st.st_mtime, st.st_size))


def _read_wandb(c: Collected, names: list[str]) -> None:
    folders: list[Path] = []
    if WANDB_RUN_DIR.match(c.root.name):
        folders.append(c.root)
    if "wandb" in names:
        folders += [c.root / "wandb" / n for n in _listdir(c.root / "wandb") if WANDB_RUN_DIR.match(n)]
    if not folders and c.kind == "pimm":
        folders += _launch_dir_wandb(c)
    if not folders:
        return
    from ..sources.wandb_local import read_wandb_run  # only now: it loads W&B's record protos

    for folder in folders:
        # Folders outside the run (pimm's <launch cwd>/wandb/) are named by their absolute path.
        rel_path = "." if folder == c.root else rel(folder, c.root) if folder.is_relative_to(c.root) else \
            folder.absolute().as_posix()
        # A launch-directory folder was matched to this run by its W&B id: pimm's own layout, read where it is.
        outside = also_allowed(folder) if not folder.is_relative_to(c.root) else nullcontext()
        with _tracked(c, "wandb", folder), _reading(c, rel_path), outside:
            result = c.cache.wandb_run(folder, rel_path) if c.cache is not None else read_wandb_run(folder, rel_path)
            c.wandb_runs.append(result)
            c.findings += result.findings
        c.sources.append(_source(c.root, folder, "wandb"))


def _launch_dir_wandb(c: Collected) -> list[Path]:
    """pimm's W&B folders of this run under ``<launch cwd>/wandb/`` (found by run id), with a finding saying so."""
    from .wandb_paths import outside_wandb_folders, run_ids

    checkpoints = list(c.model_dir.checkpoints) if c.model_dir is not None else []
    save_paths = [seg.save_path for seg in c.train_log.segments if seg.save_path] if c.train_log is not None else []
    folders, findings = outside_wandb_folders(c.root, c.metadata_raw, save_paths, run_ids(checkpoints, c.configs))
    c.findings += findings
    return folders


def _read_hf(c: Collected) -> None:
    from ..sources.hf_trainer import read_hf_trainer_dir

    result = read_hf_trainer_dir(c.root, c.root)
    c.hf = result
    c.findings += result.findings
    known = {s.path for s in c.sources}
    # Its state files (checkpoint-N/trainer_state.json too) and runs/* event files: series name these sources.
    c.sources += [s for s in result.sources if s.path not in known and s.path != "trainer_state.json"]
    if (c.root / "trainer_state.json").exists():
        c.sources.append(_source(c.root, c.root / "trainer_state.json", "hf_trainer"))
