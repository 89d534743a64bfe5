"""What ``collect`` gathers from one run directory: each reader's value, by file kind, before any analysis."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..model import ConfigDoc, Finding, Provenance, SourceFile
from ..sources import rel

if TYPE_CHECKING:
    from ..sources.checkpoint.reader import ModelDirResult
    from ..sources.config.json_docs import EvalMetrics
    from ..sources.hf.reader import HfTrainerResult
    from ..sources.lightning.csv_metrics import CsvMetricsResult
    from ..sources.slurm.rank_logs import RankLog
    from ..sources.slurm.sbatch import SbatchInfo
    from ..sources.slurm.slurm_log import SlurmLog
    from ..sources.tensorboard.reader import EventFileName, EventFileResult
    from ..sources.train_log.reader import TrainLogResult
    from ..sources.wandb.reader import WandbRunResult
    from ..sources.protocol import Read, Reader
    from .progress import ReadTracker


class FileCache(Protocol):
    """What ``collect`` asks of a read cache handed in (``session.store.cache.ReadCache``): each call reads the file
    through the file kind's protocol reader ``read`` (``sources.protocol``), reusing an earlier result while nothing it was read from changed and reading
    only the bytes appended to a grown file. ``load`` never makes one itself: the session owns the cache."""

    def train_log(self, path: Path, rel_path: str, read: Reader[TrainLogResult] | None = None
                  ) -> Read[TrainLogResult]: ...

    def event_file(self, path: Path, rel_path: str, read: Reader[EventFileResult] | None = None
                   ) -> Read[EventFileResult]: ...

    def model_dir(self, model: Path, rel_path: str, read: Reader[ModelDirResult] | None = None
                  ) -> Read[ModelDirResult]: ...

    def wandb_run(self, folder: Path, rel_path: str, read: Reader[WandbRunResult] | None = None
                  ) -> Read[WandbRunResult]: ...


@dataclass
class Collected:
    """Reader results for one run, before attempts and status are worked out."""

    root: Path
    kind: str
    sources: list[SourceFile] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    configs: list[ConfigDoc] = field(default_factory=list)
    provenance: Provenance = field(default_factory=Provenance)
    metadata_raw: dict[str, Any] | None = None
    train_log: TrainLogResult | None = None
    tb_files: list[tuple[str, EventFileName | None, EventFileResult]] = field(default_factory=list)
    """(rel path, parsed name or None, result) ordered by name timestamp then first wall time."""
    model_dir: ModelDirResult | None = None
    lightning: ModelDirResult | None = None
    """A Lightning logger version folder's ``checkpoints/*.ckpt`` (``sources.checkpoint.lightning``)."""
    csv_metrics: list[tuple[str, CsvMetricsResult]] = field(default_factory=list)
    """(rel path, result) of a Lightning CSVLogger folder's ``metrics.csv`` (``sources.lightning.csv_metrics``)."""
    sbatch: SbatchInfo | None = None
    eval_metrics: list[EvalMetrics] = field(default_factory=list)
    rank_logs: list[RankLog] = field(default_factory=list)
    slurm_logs: list[SlurmLog] = field(default_factory=list)
    wandb_runs: list[WandbRunResult] = field(default_factory=list)
    hf: HfTrainerResult | None = None
    cache: FileCache | None = None
    """Growing train.log, event files and W&B logs are read from where the last read stopped."""
    progress: ReadTracker | None = None
    """Told of every file read (progress, and the place a cancelled load stops), or None."""

    def note(self, path: Path, kind: str, bytes_read: int = 0, name: str | None = None) -> None:
        """Record ``path`` as a source of the run (named relative to the run unless ``name`` is given)."""
        try:
            st = os.stat(path)
            size, mtime = st.st_size, st.st_mtime
        except OSError:
            size, mtime = 0, 0.0
        self.sources.append(SourceFile(name or rel(path, self.root), kind, size, mtime, bytes_read))
