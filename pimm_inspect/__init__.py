"""pimm-inspect: offline inspector for pimm, TensorBoard, W&B and HF Trainer runs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

__version__ = "0.1.0"

__all__ = ["__version__", "Attempt", "Finding", "NotARunError", "Run", "attempts", "checkpoints", "compare",
           "compare_attempts", "discover", "findings", "load_run", "scalars"]

if TYPE_CHECKING:
    import pandas as pd

    from .analysis.compare import AttemptsComparison, SidesComparison
    from .model import Attempt, Finding, Run
    from .session import NotARunError
    from .session.frames import RunsArg


def load_run(path: Path | str) -> Run:
    """Load and analyse one run directory into a :class:`Run`.

    Damaged files become findings, never exceptions; a missing ``path`` raises ``FileNotFoundError`` and a folder
    that is not a run (a tree of runs: use :func:`discover`; a folder inside a run) raises :class:`NotARunError`.
    """
    from .session import default_session

    return default_session().load(path)


def discover(root: Path | str) -> list[Path]:
    """Run directories under ``root`` (``root`` itself when it is a run), sorted."""
    from .session import default_session

    return default_session().discover(root)


def compare(runs: list[Run | Path | str], tags: tuple[str, ...] | list[str] = (), policy: str = "newest",
            attempts: tuple[int, ...] | list[int] = ()) -> SidesComparison:
    """``compare RUN RUN...``: per tag every run (or each of its ``attempts``) logged, the values side by side over
    the shared steps, exactly as logged, with each step's difference and relative difference."""
    from .session import default_session

    return default_session().compare(runs, tags, policy, attempts)


def compare_attempts(run: Run | Path | str, tags: tuple[str, ...] | list[str] = ()) -> AttemptsComparison:
    """``compare RUN --attempts``: per replayed range of the run, every copy of each step side by side."""
    from .session import default_session

    return default_session().compare_attempts(run, tags)


def scalars(root_or_runs: RunsArg, tags: tuple[str, ...] | list[str] | str = (), policy: str = "all",
            all_sources: bool = False) -> pd.DataFrame:
    """The scalar rows of many runs as one tidy DataFrame, the columns of the Parquet dataset's ``scalars`` table:
    ``run_id``, ``tag``, ``step``, ``value``, ``wall_time``, ``attempt``, ``source``, ``source_kind``, ``seq``.

    ``root_or_runs``: a ROOT (every run under it; ``run_id`` is the path relative to ROOT, ``.`` for ROOT itself),
    or run directories and :class:`Run` objects (``run_id`` relative to the working directory). ``tags``: globs;
    ``policy``: ``all`` (every record as written), ``newest`` or ``oldest`` (one row per tag and step);
    ``all_sources``: every source's copy, not only each tag's preferred source. The rows of ``Run.scalars()``.
    """
    from .session import default_session

    return default_session().table(root_or_runs, "scalars", tags, policy, all_sources)


def attempts(root_or_runs: RunsArg) -> pd.DataFrame:
    """One row per attempt (process start) of every run given: the Parquet dataset's ``attempts`` table."""
    from .session import default_session

    return default_session().table(root_or_runs, "attempts")


def findings(root_or_runs: RunsArg) -> pd.DataFrame:
    """One row per finding of every run given, worst first within a run: the dataset's ``findings`` table."""
    from .session import default_session

    return default_session().table(root_or_runs, "findings")


def checkpoints(root_or_runs: RunsArg) -> pd.DataFrame:
    """One row per checkpoint of every run given: the dataset's ``checkpoints`` table."""
    from .session import default_session

    return default_session().table(root_or_runs, "checkpoints")


def __getattr__(name: str) -> object:
    """``Run``, ``Finding``, ``Attempt`` and ``NotARunError``, imported when first asked for (``import pimm_inspect``
    stays cheap for the CLI)."""
    if name in ("Run", "Finding", "Attempt"):
        from . import model

        return getattr(model, name)
    if name == "NotARunError":
        from .session import NotARunError

        return NotARunError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
