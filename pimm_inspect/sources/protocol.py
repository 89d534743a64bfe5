"""The one reader protocol every file family follows: ``read(path, rel_path) -> Read[T]``.

``path`` is the file (or folder: ``model/``, a W&B run folder, an HF output dir) to read; ``rel_path`` is how
findings name it, relative to the run directory (or an absolute path for pimm's files outside the run).
A reader never raises on bad input: what could be read is the value (``None`` when nothing could), and what
went wrong is in the findings, each naming the file. ``load.collect`` is a table of file kinds to such readers.

Readers with more to offer (resuming at an offset, an earlier result to extend) keep their own entry
(``read_event_file``, ``read_train_log``, ``read_wandb_run``); their ``read`` is that entry's plain call.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Protocol, Sequence, TypeVar

from ..model import Finding

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Read(Generic[T]):
    """One reader call: the value, the findings naming the file, and the bytes of it consumed.

    ``bytes_read`` is where a resumable reader stopped (a refresh continues there); 0 where a reader does not
    count (small documents read whole).
    """

    value: T | None
    findings: tuple[Finding, ...] = ()
    bytes_read: int = 0


class Reader(Protocol[T]):
    """``read(path, rel_path) -> Read[T]``."""

    def __call__(self, path: Path, rel_path: str, /) -> Read[T]: ...


class _CarriesFindings(Protocol):
    @property
    def findings(self) -> Sequence[Finding]: ...


R = TypeVar("R", bound=_CarriesFindings)


def read_of(result: R, bytes_read: int = 0) -> Read[R]:
    """A rich result that carries its own findings, as a ``Read``."""
    return Read(result, tuple(result.findings), bytes_read)


def run_root(path: Path, rel_path: str) -> Path:
    """The run directory ``rel_path`` is relative to (``path`` itself for ``"."``)."""
    root = path
    for _part in Path(rel_path).parts:
        root = root.parent
    return root
