"""The file kinds of a run, in reading order: where each is found, its reader, where its value goes.

Every reader follows ``sources.protocol`` (``read(path, rel_path) -> Read[T]``) and is imported only when a
file of its kind exists, so a run without W&B folders never loads W&B's record protos. A later kind's finder
sees what earlier kinds stored (the Slurm log outside the run needs ``launch.sbatch``; pimm's launch-directory
W&B folders need the checkpoints' run ids).
"""

from __future__ import annotations

import bisect

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..model import Finding, Severity
from ..sources import rel
from ..sources.protocol import Read, Reader
from .collected import Collected, FileCache
from .discover import EVENT_FILE, LIGHTNING_CSV, WANDB_RUN_DIR, same_id_siblings
from .file_deps import note_probe

if TYPE_CHECKING:
    from ..sources.wandb.reader import WandbRunResult

SLURM_LOG = re.compile(r"^slurm-\d+(?:_\d+)?\.out$")

Found = tuple[Path, str]
"""A file of the kind and the name findings give it (relative to the run, absolute outside it)."""


@dataclass(frozen=True)
class FileKind:
    """One kind of file a run may hold."""

    source_kind: str
    """``SourceFile.kind`` of its files."""
    find: Callable[[Collected, list[str]], list[Found]]
    """Its files in this run (given the run directory's names)."""
    reader: Callable[[], Reader[Any]]
    """The reader, imported when first needed."""
    store: Callable[[Collected, Path, str, Read[Any]], None]
    """Put the value into ``Collected`` and note the run's sources."""
    cached: Callable[[FileCache, Reader[Any], Path, str], Read[Any]] | None = None
    """The cache's call for files that grow (a refresh reads only their appended bytes), handed this kind's
    ``reader``: with or without a cache, every file is read through the reader protocol."""
    label: str | None = None
    """How a reader failure names the file, when not by its own name."""
    listed: bool = True
    """Found from the listing alone (False: the finder needs what earlier kinds read, e.g. ``launch.sbatch``)."""

    def counted_as(self, root: Path, path: Path, rel_path: str) -> tuple[Path, str]:
        """The file progress counts for one found item: a whole HF Trainer dir (``"."``) is its state file."""
        return (root / self.label, self.label) if rel_path == "." and self.label else (path, rel_path)


def listdir(path: Path) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _lazy(module: str, name: str = "read") -> Callable[[], Reader[Any]]:
    """``sources.<module>.<name>``, imported when a file of the kind is first met (W&B's protos only then)."""
    def reader() -> Reader[Any]:
        import importlib

        return getattr(importlib.import_module(f"..sources.{module}", __package__), name)  # type: ignore[no-any-return]
    return reader


def _named(*names: str) -> Callable[[Collected, list[str]], list[Found]]:
    return lambda c, present: [(c.root / n, n) for n in names if n in present]


def _store_to(attr: str, source_kind: str, append: bool = False) -> Callable[[Collected, Path, str, Read[Any]], None]:
    """Keep the value in ``Collected.<attr>`` (appended to a list when ``append``) and note the file."""
    def store(c: Collected, path: Path, rel_path: str, r: Read[Any]) -> None:
        if r.value is not None:
            if append:
                getattr(c, attr).append(r.value)
            else:
                setattr(c, attr, r.value)
        # A file outside the run (pimm's launch-cwd W&B folders, same-id W&B siblings) keeps its finder's name.
        c.note(path, source_kind, r.bytes_read, name=None if path.absolute().is_relative_to(c.root) else rel_path)
    return store



# -- provenance documents ------------------------------------------------------------------------------------

def _store_metadata(c: Collected, path: Path, rel_path: str, r: Read[Any]) -> None:
    if r.value is not None:
        c.provenance, c.metadata_raw = r.value.provenance, r.value.raw
    c.note(path, "json", r.bytes_read)




# -- train.log -----------------------------------------------------------------------------------------------

def _find_train_log(c: Collected, names: list[str]) -> list[Found]:
    path = c.root / "train.log"
    return [(path, "train.log")] if "train.log" in names or path.is_symlink() else []




def _store_train_log(c: Collected, path: Path, rel_path: str, r: Read[Any]) -> None:
    c.train_log = r.value
    c.note(path, "train_log", r.bytes_read)
    from ..sources.train_log.config_dump import read_config_dumps  # each attempt's Config: dump (issue 12)

    if r.value is None:
        return
    dumps, findings = read_config_dumps(path, rel_path, r.value.segments)
    c.configs += dumps
    c.findings += findings


# -- TensorBoard event files ---------------------------------------------------------------------------------

def _event_files_in(c: Collected, folder: Path, names: list[str]) -> list[Found]:
    return [(folder / n, rel(folder / n, c.root)) for n in names if EVENT_FILE.match(n)]


def _find_event_files(c: Collected, names: list[str]) -> list[Found]:
    return _event_files_in(c, c.root, names)


def _find_nested_event_files(c: Collected, names: list[str]) -> list[Found]:
    """A plain TensorBoard run with no event file at its top may keep them one level down (``runs/<name>/``)."""
    if c.kind != "tensorboard" or any(EVENT_FILE.match(n) for n in names):
        return []
    return [f for n in names if (c.root / n).is_dir() for f in _event_files_in(c, c.root / n, listdir(c.root / n))]




def _event_file_order(item: tuple[str, Any, Any]) -> tuple[float, float, str]:
    """Process-start order: the timestamp in the name, then the first wall time, then the name."""
    parsed, result = item[1], item[2]
    stamp = parsed.timestamp_s if parsed else float("inf")
    first = result.first_wall_time_s if result.first_wall_time_s is not None else float("inf")
    return (stamp, first, item[0])


def _store_event_file(c: Collected, path: Path, rel_path: str, r: Read[Any]) -> None:
    from ..sources.tensorboard.reader import parse_event_file_name

    c.note(path, "tb_events", r.bytes_read)
    if r.value is None:
        return
    item = (rel_path, parse_event_file_name(path.name), r.value)
    if not c.tb_files or _event_file_order(c.tb_files[-1]) <= _event_file_order(item):
        c.tb_files.append(item)  # files come in name order, which is mostly process-start order: no sort at all
    else:  # keyed binary search: a re-sort per file made 200,000 files 20 billion key computations
        bisect.insort(c.tb_files, item, key=_event_file_order)


# -- Lightning's CSVLogger --------------------------------------------------------------------------------

def _find_csv_metrics(c: Collected, names: list[str]) -> list[Found]:
    """``metrics.csv`` of a CSVLogger folder, also beside event files (a TensorBoardLogger given the same folder):
    what both hold is drawn from the event file (``SOURCE_PRIORITY``), what only the CSV holds from the CSV."""
    csv_logger = LIGHTNING_CSV in names and (c.kind == "lightning" or "hparams.yaml" in names)
    return [(c.root / LIGHTNING_CSV, LIGHTNING_CSV)] if csv_logger else []


def _store_csv_metrics(c: Collected, path: Path, rel_path: str, r: Read[Any]) -> None:
    c.note(path, "lightning_csv", r.bytes_read)
    if r.value is not None:
        c.csv_metrics.append((rel_path, r.value))


# -- checkpoints ---------------------------------------------------------------------------------------------

def _find_model_dir(c: Collected, names: list[str]) -> list[Found]:
    return [(c.root / "model", "model")] if os.path.lexists(c.root / "model") else []




def _find_lightning_dir(c: Collected, names: list[str]) -> list[Found]:
    """A Lightning logger version folder's ``checkpoints/`` holding ``.ckpt`` files (ModelCheckpoint's default)."""
    if "checkpoints" not in names or not any(n.endswith(".ckpt") for n in listdir(c.root / "checkpoints")):
        return []
    return [(c.root / "checkpoints", "checkpoints")]


def _store_lightning_dir(c: Collected, path: Path, rel_path: str, r: Read[Any]) -> None:
    c.lightning = r.value
    if r.value is None:
        return
    for info in r.value.checkpoints:
        c.note(c.root / info.path, "checkpoint")


def _store_model_dir(c: Collected, path: Path, rel_path: str, r: Read[Any]) -> None:
    c.model_dir = r.value
    if r.value is None:
        return
    for info in r.value.checkpoints:
        c.note(c.root / info.path, "checkpoint")


# -- the Slurm job -------------------------------------------------------------------------------------------

def _find_eval(c: Collected, names: list[str]) -> list[Found]:
    if "eval" not in names:
        return []
    paths = [c.root / "eval" / stamp / "test_metrics.json" for stamp in listdir(c.root / "eval")]
    return [(p, rel(p, c.root)) for p in paths if p.exists()]


def _find_rank_logs(c: Collected, names: list[str]) -> list[Found]:
    if "structured_logs" not in names:
        return []
    folder = c.root / "structured_logs"
    return [(folder / n, rel(folder / n, c.root)) for n in listdir(folder) if ".jsonl" in n]


def _find_slurm_logs(c: Collected, names: list[str]) -> list[Found]:
    return [(c.root / n, n) for n in names if SLURM_LOG.match(n)]


def _find_outside_slurm(c: Collected, names: list[str]) -> list[Found]:
    """The job's Slurm log where pimm's launch put it (``<repo>/slurm_logs/``), named by its absolute path."""
    from .slurm_paths import outside_slurm_logs

    outside = outside_slurm_logs(c.root, c.sbatch, c.metadata_raw, c.rank_logs)
    for path, why in outside.named:
        c.findings.append(Finding("file.outside-run", Severity.INFO, f"launch.sbatch points at the Slurm log "
                                  f"{path.as_posix()}: {why}", ("launch.sbatch",)))
    return [(path, path.absolute().as_posix()) for path in outside.read]


def _store_outside_slurm(c: Collected, path: Path, rel_path: str, r: Read[Any]) -> None:
    log = r.value
    if log is not None and (log.job_id is None or log.job_id not in {s.job_id for s in c.slurm_logs}):
        c.slurm_logs.append(log)
        c.note(path, "slurm", path.stat().st_size, name=rel_path)




# -- W&B -----------------------------------------------------------------------------------------------------

def _find_wandb(c: Collected, names: list[str]) -> list[Found]:
    folders: list[Path] = []
    if WANDB_RUN_DIR.match(c.root.name):
        folders += same_id_siblings(c.root)  # one id's folders are one run, even beside other ids
    if "wandb" in names:
        folders += [c.root / "wandb" / n for n in listdir(c.root / "wandb") if WANDB_RUN_DIR.match(n)]
    if not folders and c.kind == "pimm":
        folders += _launch_dir_wandb(c)
    # Folders outside the run (pimm's <launch cwd>/wandb/) are named by their absolute path.
    return [(f, "." if f == c.root else rel(f, c.root) if f.is_relative_to(c.root) else f.absolute().as_posix())
            for f in folders]


def _launch_dir_wandb(c: Collected) -> list[Path]:
    """pimm's W&B folders of this run under ``<launch cwd>/wandb/`` (found by run id), with a finding saying so."""
    from .wandb_paths import outside_wandb_folders, run_ids

    checkpoints = list(c.model_dir.checkpoints) if c.model_dir is not None else []
    save_paths = [seg.save_path for seg in c.train_log.segments if seg.save_path] if c.train_log is not None else []
    folders, findings = outside_wandb_folders(c.root, c.metadata_raw, save_paths, run_ids(checkpoints, c.configs))
    c.findings += findings
    return folders




def read_wandb_folder(folder: Path, rel_path: str, previous: WandbRunResult | None = None) -> WandbRunResult:
    """``read_wandb_run``, with the W&B ``settings`` file beside the folder noted as read even when absent (the
    reader looks for it without listing that folder, so a settings file created later must count as a change)."""
    from ..sources.wandb.reader import read_wandb_run  # W&B's record protos are loaded only now

    note_probe(folder.parent / "settings")
    return read_wandb_run(folder, rel_path, previous=previous)


def read_wandb(path: Path, rel_path: str) -> Read[WandbRunResult]:
    """The reader protocol's read of a W&B run folder (``sources.wandb.read``), with the ``settings`` probe noted as
    ``read_wandb_folder`` does."""
    from ..sources import wandb  # W&B's record protos are loaded only now

    note_probe(path.parent / "settings")
    return wandb.read(path, rel_path)


# -- HF Trainer ----------------------------------------------------------------------------------------------

def _find_hf(c: Collected, names: list[str]) -> list[Found]:
    return [(c.root, ".")] if c.kind == "hf-trainer" else []




def _store_hf(c: Collected, path: Path, rel_path: str, r: Read[Any]) -> None:
    c.hf = r.value
    if r.value is None:
        return
    known = {s.path for s in c.sources}
    # Its state files (checkpoint-N/trainer_state.json too) and runs/* event files: series name these sources.
    c.sources += [s for s in r.value.sources if s.path not in known and s.path != "trainer_state.json"]
    if (c.root / "trainer_state.json").exists():
        c.note(c.root / "trainer_state.json", "hf_trainer")


def _cached_train_log(cache: FileCache, read: Reader[Any], path: Path, rel_path: str) -> Read[Any]:
    return cache.train_log(path, rel_path, read)


def _cached_event_file(cache: FileCache, read: Reader[Any], path: Path, rel_path: str) -> Read[Any]:
    return cache.event_file(path, rel_path, read)


def _cached_model_dir(cache: FileCache, read: Reader[Any], path: Path, rel_path: str) -> Read[Any]:
    return cache.model_dir(path, rel_path, read)


def _cached_wandb_run(cache: FileCache, read: Reader[Any], path: Path, rel_path: str) -> Read[Any]:
    return cache.wandb_run(path, rel_path, read)


_CACHED_TRAIN_LOG = _cached_train_log
_CACHED_EVENT_FILE = _cached_event_file
_CACHED_MODEL_DIR = _cached_model_dir
_CACHED_WANDB_RUN = _cached_wandb_run

DOCUMENTS: tuple[FileKind, ...] = (
    FileKind("json", _named("run_metadata.json"), _lazy("config.json_docs", "read_run_metadata"), _store_metadata),
    FileKind("json", _named("resolved_config.json"), _lazy("config.json_docs", "read_resolved_config"),
             _store_to("configs", "json", append=True)),
    FileKind("json", _named("model_config.json"), _lazy("config.json_docs", "read_model_config"),
             _store_to("configs", "json", append=True)),
    FileKind("config_py", _named("config.py"), _lazy("config.json_docs", "read_config_py"),
             _store_to("configs", "config_py", append=True)),
    FileKind("config_yaml", _named("hparams.yaml"), _lazy("config.hparams_yaml", "read_hparams_yaml"),
             _store_to("configs", "config_yaml", append=True)),  # PyTorch Lightning's logger version folder
)
"""The small provenance and config documents at the top of a run (also all the quick stage reads whole)."""

KINDS: tuple[FileKind, ...] = DOCUMENTS + (
    FileKind("train_log", _find_train_log, _lazy("train_log"), _store_train_log, _CACHED_TRAIN_LOG),
    FileKind("tb_events", _find_event_files, _lazy("tensorboard"), _store_event_file, _CACHED_EVENT_FILE),
    FileKind("tb_events", _find_nested_event_files, _lazy("tensorboard"), _store_event_file,
             _CACHED_EVENT_FILE),
    FileKind("lightning_csv", _find_csv_metrics, _lazy("lightning.csv_metrics"), _store_csv_metrics),
    FileKind("checkpoint", _find_model_dir, _lazy("checkpoint"), _store_model_dir, _CACHED_MODEL_DIR),
    FileKind("checkpoint", _find_lightning_dir, _lazy("checkpoint", "read_lightning"), _store_lightning_dir,
             label="checkpoints"),
    FileKind("sbatch", _named("launch.sbatch"), _lazy("slurm.sbatch", "read_sbatch"), _store_to("sbatch", "sbatch")),
    FileKind("eval", _find_eval, _lazy("config.json_docs", "read_eval_metrics"),
             _store_to("eval_metrics", "eval", append=True)),
    FileKind("structured_log", _find_rank_logs, _lazy("slurm.rank_logs", "read_rank_log"),
             _store_to("rank_logs", "structured_log", append=True)),
    FileKind("slurm", _find_slurm_logs, _lazy("slurm.slurm_log", "read_slurm_log"),
             _store_to("slurm_logs", "slurm", append=True)),
    FileKind("slurm", _find_outside_slurm, _lazy("slurm.slurm_log", "read_slurm_log"), _store_outside_slurm,
             label="slurm_logs", listed=False),
    FileKind("wandb", _find_wandb, lambda: read_wandb, _store_to("wandb_runs", "wandb", append=True),
             _CACHED_WANDB_RUN),
    FileKind("hf_trainer", _find_hf, _lazy("hf"), _store_hf, label="trainer_state.json"),
)
