"""The compact copy of a Parquet dataset: ``DIR/<table>.parquet``, one file per table (``export --compact``).

A query engine pays for every file it opens: DuckDB spends about 0.2 ms per partition file, so the README's query
over the per-run partitions of 10,000 runs (20,000 files) takes seconds, and over the compact files a fraction of a
second. The compact files are rebuilt from the partitions (every run of the manifest, in partition order, rows
batched into row groups of up to ``ROW_GROUP_ROWS``) at the end of an export that asks for them, each written to a
temporary name and renamed (a reader sees the old file or the new one); an export that changes the partitions
without rebuilding them removes them, so they never show an older state than the partitions. Every file is opened
relative to its folder's descriptor without following links (``dataset_fs``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

from .dataset import TABLES, schema
from .dataset_fs import open_regular, opened_dir, subdir, unlink, write_atomically
from .dataset_store import PART_FILE, PARTITION_KEY, valid_value

if TYPE_CHECKING:
    import pyarrow as pa

ROW_GROUP_ROWS = 1 << 20
"""Rows gathered before a row group is written (partitions are read one at a time, so memory stays bounded)."""


def compact_name(table: str) -> str:
    """``<table>.parquet``: the compact file of one table, beside its partition folder."""
    return f"{table}.parquet"


def _partitions(out: Path, table: str, values: Iterable[str]) -> Iterator[pa.Table]:
    """Each run's partition of ``table`` (those that exist), read without following a link."""
    import pyarrow.parquet as pq

    with opened_dir(out) as out_fd, subdir(out_fd, table, str(out / table)) as table_fd:
        if table_fd is None:
            return
        for value in values:
            if not valid_value(value):
                continue
            folder = f"{PARTITION_KEY}={value}"
            with subdir(table_fd, folder, str(out / table / folder)) as folder_fd:
                if folder_fd is None:
                    continue
                handle = open_regular(folder_fd, PART_FILE, str(out / table / folder / PART_FILE))
                if handle is None:
                    continue
                with handle:
                    part = pq.ParquetFile(handle).read()  # about 2x faster than read_table per small file
                yield part if part.schema.equals(schema(table)) else part.cast(schema(table))


def write_compact(out: Path, values: Iterable[str]) -> None:
    """Rebuild ``DIR/<table>.parquet`` for every table from the partitions of the runs ``values``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    wanted = sorted(values)
    for table in TABLES:
        target = schema(table)

        def write(handle: IO[bytes], table: str = table, target: pa.Schema = target) -> None:
            with pq.ParquetWriter(handle, target, compression="zstd") as writer:
                batch: list[pa.Table] = []
                rows = 0
                for part in _partitions(out, table, wanted):
                    batch.append(part)
                    rows += part.num_rows
                    if rows >= ROW_GROUP_ROWS:
                        writer.write_table(pa.concat_tables(batch), row_group_size=rows)
                        batch, rows = [], 0
                if batch or not wanted:
                    writer.write_table(pa.concat_tables(batch) if batch else target.empty_table(),
                                       row_group_size=max(rows, 1))

        with opened_dir(out, create=True) as out_fd:
            write_atomically(out_fd, compact_name(table), write, str(out / compact_name(table)))


def has_compact(out: Path) -> bool:
    """True when every table's compact file is there (a regular file, not a link)."""
    from .dataset_fs import is_regular

    with opened_dir(out) as out_fd:
        return all(is_regular(out_fd, compact_name(table)) for table in TABLES)


def remove_compact(out: Path) -> None:
    """Remove the compact files (an export changed the partitions without rebuilding them)."""
    if not out.is_dir():
        return
    with opened_dir(out) as out_fd:
        for table in TABLES:
            unlink(out_fd, compact_name(table))
