"""The Python API's tables of many runs (``pimm_inspect.scalars/attempts/findings/checkpoints``) as pandas
DataFrames: the tables of the Parquet dataset, built by its own builders (``report.dataset``), so a column means the
same in a notebook, in DuckDB over ``export --format parquet`` and in the README's table, defined once.

Runs are given as a ROOT (every run under it, ``discover``'s order; ``run_id`` is the path relative to ROOT, ``.``
when ROOT is the run, as in the dataset and ``ls --json``) or as run directories and ``Run`` objects (``run_id``
relative to the working directory, as ``ls`` with several PATHs). Each run is loaded, tabled and dropped before
the next, so memory holds the tables, not the runs. pandas and pyarrow are imported only when a table is asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..analysis import analyze
from ..analysis.curves import POLICIES
from ..analysis.scalar_rows import scalar_rows
from ..model import Run
from .dataset_sync import run_id_of

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from .core import Session

RunsArg = Path | str | Run | Iterable[Path | str | Run]
"""A ROOT (a run or a tree of runs), or run directories and ``Run`` objects."""
Table = Literal["runs", "attempts", "findings", "checkpoints", "scalars"]


def _runs(session: Session, root_or_runs: RunsArg) -> Iterator[tuple[Run, str]]:
    """Each run, analysed, with its ``run_id``."""
    if isinstance(root_or_runs, (str, Path)):
        root = Path(root_or_runs)
        found = session.discover(root)
        if not found:
            if not root.exists():
                raise FileNotFoundError(f"no such file or directory: {root}")
            session.load(root)  # raises the NotARunError that says what the folder is
        for run_dir in found:
            yield session.load(run_dir), run_id_of(run_dir, root)
        return
    items: Iterable[Path | str | Run] = [root_or_runs] if isinstance(root_or_runs, Run) else root_or_runs
    here = Path(".").absolute()
    for item in items:
        run = item if isinstance(item, Run) else session.load(item)
        if run.summary is None:  # a Run built or loaded without analysis: its findings and facts first
            run = analyze(run)
        yield run, run_id_of(Path(run.root).absolute(), here)


def _table(run: Run, run_id: str, table: Table, exported_at: datetime, tags: tuple[str, ...] | list[str] | str,
           policy: str, all_sources: bool) -> pa.Table:
    from ..report import dataset

    if table == "scalars":
        return dataset.scalars_table(run, run_id, scalar_rows(run, tags, policy, all_sources))
    if table == "runs":
        return dataset.runs_table(run, run_id, exported_at)
    builders = {"attempts": dataset.attempts_table, "findings": dataset.findings_table,
                "checkpoints": dataset.checkpoints_table}
    return builders[table](run, run_id)


def table_frame(session: Session, root_or_runs: RunsArg, table: Table, tags: tuple[str, ...] | list[str] | str = (),
                policy: str = "all", all_sources: bool = False) -> pd.DataFrame:
    """One dataset table of every run given, as one DataFrame: the table's columns (``report.dataset.schema``) in
    its order, integers and booleans as pandas' nullable types (a missing value is ``<NA>``), timestamps in UTC."""
    import pyarrow as pa

    from ..report.dataset import TABLES, schema

    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}; choose one of {', '.join(TABLES)}")
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
    exported_at = datetime.now(timezone.utc)
    parts = [_table(run, run_id, table, exported_at, tags, policy, all_sources)
             for run, run_id in _runs(session, root_or_runs)]
    whole = pa.concat_tables(parts) if parts else schema(table).empty_table()
    return _to_pandas(whole)


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    import pandas as pd
    import pyarrow as pa

    nullable = {pa.int8(): pd.Int8Dtype(), pa.int32(): pd.Int32Dtype(), pa.int64(): pd.Int64Dtype(),
                pa.bool_(): pd.BooleanDtype()}
    frame: pd.DataFrame = table.to_pandas(types_mapper=nullable.get)
    return frame
