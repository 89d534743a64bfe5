"""The tables of the Parquet dataset (``export ROOT --format parquet -o DIR``), one run at a time, as Arrow tables.

Every table has a fixed schema (``SCHEMAS``), the same in every partition, so DuckDB, Spark and Polars read
``DIR/<table>/*/*.parquet`` as one table. Each row starts with ``run_id``, the run's path relative to ROOT (the
``path`` of ``ls --json``; ``.`` when ROOT is the run itself), the key to join on. Strings from run files are
stored as they are (data), names of files and folders (``run_id``, ``run_path``, ``name``, ``file``, ``paths``,
``sources``, ``source``, ``config_path``) by the one name escape (``safe_text.name_text``), with secrets masked as everywhere else.
The columns are documented in the README ("Parquet dataset"). pyarrow is imported only here, when called.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import __version__
from ..analysis.configs import attempt_query_config, flatten_config, query_config
from ..analysis.scalar_rows import NO_ATTEMPT, TagRows, scalar_rows
from ..analysis.secrets import mask_text, mask_value
from ..analysis.summary import restored_by, summary_of
from ..model import ConfigDoc, Run
from .json_text import clean as _clean, safe_str
from .safe_text import name_text
from .run_facts import started_at_iso

if TYPE_CHECKING:
    import pyarrow as pa

DATASET_VERSION = 4
"""Version of the tables' schemas and ids; a dataset written with another version is rewritten whole (2: ``seq``
in the scalars' key, ``restored_checkpoint`` on the attempts, run ids and file names by the one name escape,
``safe_text.name_text``; 3: each attempt's Slurm context, lost compute and config on the attempts, and the
``checkpoints`` table; 4: the checkpoints' ``best_metric_name`` and ``saved_by_attempt``)."""
TABLES = ("runs", "attempts", "findings", "checkpoints", "scalars")


def _schemas() -> dict[str, pa.Schema]:
    import pyarrow as pa  # the Parquet writer: only `export --format parquet` needs it

    text, i64, i32, f64, flag = pa.string(), pa.int64(), pa.int32(), pa.float64(), pa.bool_()
    utc = pa.timestamp("us", tz="UTC")
    return {
        "runs": pa.schema([
            ("run_id", text), ("run_path", text), ("name", text), ("kind", text), ("era", text), ("status", text),
            ("last_step", i64), ("attempts", i32), ("scalar_points", i64), ("tags", i32),
            ("errors", i32), ("warnings", i32), ("infos", i32),
            ("started_at", text), ("last_logged_at", utc),
            ("best_metric_name", text), ("best_metric_value", f64),
            ("wandb_run_ids", pa.list_(text)), ("wandb_url", text), ("wandb_project", text), ("wandb_entity", text),
            ("git_commit", text), ("git_dirty", flag), ("host", text),
            ("config_kind", text), ("config_path", text), ("config_attempt", i32), ("config_json", text),
            ("config_flat", pa.map_(text, text)), ("config_number", pa.map_(text, f64)),
            ("exported_at", utc), ("pimm_inspect_version", text),
        ]),
        "attempts": pa.schema([
            ("run_id", text), ("attempt", i32), ("started_at", text), ("started_at_iso", text),
            ("started_at_utc", flag), ("first_step", i64), ("last_step", i64), ("origin", text), ("ended", text),
            ("end_detail", text), ("resumed_from", text), ("resume_step", i64), ("restore_step", i64),
            ("saved_steps", pa.list_(i64)), ("lost_first_step", i64), ("lost_last_step", i64),
            ("sources", pa.list_(text)), ("restored_checkpoint", text),
            ("job_id", text), ("array_index", i32), ("nodes", pa.list_(text)), ("partition", text), ("gpus", i32),
            ("elapsed_s", f64), ("lost_wall_s", f64), ("lost_gpu_hours", f64), ("context_sources", pa.map_(text, text)),
            ("config_kind", text), ("config_path", text), ("config_json", text),
            ("config_flat", pa.map_(text, text)), ("config_number", pa.map_(text, f64)),
        ]),
        "findings": pa.schema([
            ("run_id", text), ("code", text), ("severity", text), ("severity_rank", pa.int8()), ("message", text),
            ("file", text), ("paths", pa.list_(text)), ("first_step", i64), ("last_step", i64),
            ("attempts", pa.list_(i32)), ("explanation", text), ("views", pa.map_(text, text)),
        ]),
        "checkpoints": pa.schema([
            ("run_id", text), ("path", text), ("format", text), ("role", text), ("complete", flag),
            ("global_step", i64), ("epoch", i64), ("iter_in_epoch", i64), ("best_metric_value", f64),
            ("best_metric_name", text), ("saved_by_attempt", i32), ("wandb_run_id", text), ("wandb_cursor", i64), ("wandb_cursor_key", text), ("world_size", i32),
            ("size_bytes", i64), ("tensor_count", i64), ("tensor_bytes", i64), ("modified_at", utc),
            ("resume_candidate", flag), ("restored_by", pa.list_(i32)), ("unsafe_globals", pa.list_(text)),
        ]),
        "scalars": pa.schema([
            ("run_id", text), ("tag", text), ("step", i64), ("value", f64), ("wall_time", f64), ("attempt", i32),
            ("source", text), ("source_kind", text), ("seq", i32),
        ]),
    }


_SCHEMA_CACHE: dict[str, pa.Schema] = {}


def schema(table: str) -> pa.Schema:
    """The Arrow schema of one table (the same in every partition)."""
    if not _SCHEMA_CACHE:
        _SCHEMA_CACHE.update(_schemas())
    return _SCHEMA_CACHE[table]


def _text(value: str | None) -> str | None:
    return None if value is None else safe_str(value)


def _name(value: str | None) -> str | None:
    return None if value is None else name_text(value)


def _masked(value: str | None) -> str | None:
    return None if value is None else safe_str(mask_text(value))


def _utc(seconds: float | None) -> datetime | None:
    if seconds is None or not math.isfinite(seconds):
        return None
    try:
        return datetime.fromtimestamp(seconds, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):  # a wall time beyond year 9999 is not a time
        return None


def _json_text(value: Any) -> str:
    """A config leaf as JSON text (lists, numbers, booleans, ``{}``); masked already."""
    return json.dumps(_clean(value), ensure_ascii=False, sort_keys=False, default=str)


def config_columns(run: Run) -> dict[str, Any]:
    """The config columns of the ``runs`` row: which document, its JSON text, and its flat ``a.b.c`` leaves
    (``config_flat``: every leaf, strings as they are and other values as JSON text; ``config_number``: the
    numeric leaves, booleans excluded)."""
    doc = query_config(run)
    return {**doc_columns(doc), "config_attempt": doc.attempt if doc is not None and doc.data is not None else None}


def doc_columns(doc: ConfigDoc | None) -> dict[str, Any]:
    """``config_kind``, ``config_path``, ``config_json``, ``config_flat`` and ``config_number`` of one document
    (masked), all null or empty without one."""
    if doc is None or doc.data is None:
        return {"config_kind": None, "config_path": None, "config_json": None, "config_flat": [], "config_number": []}
    masked = mask_value(dict(doc.data))
    flat: list[tuple[str, str | None]] = []
    numbers: list[tuple[str, float]] = []
    for key, leaf in flatten_config(masked).items():
        name = safe_str(key)
        if isinstance(leaf, str):
            flat.append((name, safe_str(leaf)))
        elif leaf is None:
            flat.append((name, None))
        else:
            flat.append((name, _json_text(leaf)))
        if isinstance(leaf, (int, float)) and not isinstance(leaf, bool):
            try:
                numbers.append((name, float(leaf)))
            except OverflowError:  # an integer beyond a double's range stays in config_flat only
                pass
    return {"config_kind": doc.kind, "config_path": _name(doc.path),
            "config_json": json.dumps(_clean(masked), ensure_ascii=False, default=str),
            "config_flat": flat, "config_number": numbers}


def runs_table(run: Run, run_id: str, exported_at: datetime, rows: list[TagRows] | None = None) -> pa.Table:
    """The run's one row of ``runs``; ``rows``: its scalar rows as exported (counted in ``scalar_points``)."""
    import pyarrow as pa  # the Parquet writer: only `export --format parquet` needs it

    summary = summary_of(run)
    counts = {"error": 0, "warning": 0, "info": 0}
    for finding in run.findings:
        counts[finding.severity.label] += 1
    rows = scalar_rows(run) if rows is None else rows
    prov, wandb = run.provenance, run.wandb
    row: dict[str, Any] = {
        "run_id": safe_str(run_id), "run_path": name_text(str(run.root)), "name": name_text(run.name),
        "kind": run.kind, "era": run.era, "status": run.status,
        "last_step": summary.last_step, "attempts": len(run.attempts),
        "scalar_points": sum(len(block) for block in rows), "tags": len({b.tag for b in rows if len(b)}),
        "errors": counts["error"], "warnings": counts["warning"], "infos": counts["info"],
        "started_at": started_at_iso(run.attempts[0]) if run.attempts else None,
        "last_logged_at": _utc(summary.last_logged_s),
        "best_metric_name": _text(summary.best_metric_name), "best_metric_value": summary.best_metric_value,
        "wandb_run_ids": [safe_str(i) for i in wandb.run_ids], "wandb_url": _text(wandb.url),
        "wandb_project": _text(wandb.project), "wandb_entity": _text(wandb.entity),
        "git_commit": _text(prov.git_commit), "git_dirty": prov.git_dirty, "host": _text(prov.host),
        **config_columns(run),
        "exported_at": exported_at, "pimm_inspect_version": __version__,
    }
    return pa.Table.from_pylist([row], schema=schema("runs"))


def attempts_table(run: Run, run_id: str) -> pa.Table:
    """One row per attempt (process start) of the run."""
    import pyarrow as pa  # the Parquet writer: only `export --format parquet` needs it

    rows = [{
        "run_id": safe_str(run_id), "attempt": a.index, "started_at": _text(a.started_at),
        "started_at_iso": started_at_iso(a), "started_at_utc": a.started_at_utc,
        "first_step": a.first_step, "last_step": a.last_step, "origin": a.origin, "ended": a.ended,
        "end_detail": _masked(a.end_detail), "resumed_from": _text(a.resumed_from),
        "resume_step": a.resume_step, "restore_step": a.restore_step, "saved_steps": list(a.saved_steps),
        "lost_first_step": a.lost_steps[0] if a.lost_steps else None,
        "lost_last_step": a.lost_steps[1] if a.lost_steps else None,
        "sources": [name_text(s) for s in a.sources], "restored_checkpoint": _name(a.restored_checkpoint),
        "job_id": _text(a.job_id), "array_index": a.array_index, "nodes": [safe_str(n) for n in a.nodes],
        "partition": _text(a.partition), "gpus": a.gpus, "elapsed_s": a.elapsed_s, "lost_wall_s": a.lost_wall_s,
        "lost_gpu_hours": a.lost_gpu_hours,
        "context_sources": [(name, name_text(path)) for name, path in a.context_sources],
        **doc_columns(attempt_query_config(run, a.index)),
    } for a in run.attempts]
    return pa.Table.from_pylist(rows, schema=schema("attempts"))


def findings_table(run: Run, run_id: str) -> pa.Table:
    """One row per finding of the run (message and explanation masked, as ``check --json``)."""
    import pyarrow as pa  # the Parquet writer: only `export --format parquet` needs it

    rows = [{
        "run_id": safe_str(run_id), "code": f.code, "severity": f.severity.label, "severity_rank": int(f.severity),
        "message": _masked(f.message), "file": name_text(f.paths[0]) if f.paths else None,
        "paths": [name_text(p) for p in f.paths],
        "first_step": f.steps[0] if f.steps else None, "last_step": f.steps[1] if f.steps else None,
        "attempts": list(f.attempts), "explanation": _masked(f.explanation),
        "views": list({safe_str(viewer): _masked(shows) for viewer, shows in f.views}.items()),
    } for f in run.findings]
    return pa.Table.from_pylist(rows, schema=schema("findings"))


def checkpoints_table(run: Run, run_id: str) -> pa.Table:
    """One row per checkpoint of the run (the fields of ``show --json``'s checkpoints; ``restored_by``: the attempts
    that restarted from it; ``unsafe_globals``: what its pickle references beyond the allow-list, never called)."""
    import pyarrow as pa  # the Parquet writer: only `export --format parquet` needs it

    restores = restored_by(run)
    rows = [{
        "run_id": safe_str(run_id), "path": name_text(ck.path), "format": ck.format, "role": ck.role,
        "complete": ck.complete, "global_step": ck.global_step, "epoch": ck.epoch, "iter_in_epoch": ck.iter_in_epoch,
        "best_metric_value": ck.best_metric_value, "best_metric_name": _text(ck.best_metric_name),
        "saved_by_attempt": ck.saved_by_attempt, "wandb_run_id": _text(ck.wandb_run_id),
        "wandb_cursor": ck.wandb_cursor, "wandb_cursor_key": _text(ck.wandb_cursor_key), "world_size": ck.world_size,
        "size_bytes": ck.size_bytes, "tensor_count": ck.tensor_count, "tensor_bytes": ck.tensor_bytes,
        "modified_at": _utc(ck.mtime_s) if ck.mtime_s else None, "resume_candidate": ck.resume_candidate,
        "restored_by": [attempt for attempt, _step in restores.get(ck.path, ())],
        "unsafe_globals": [safe_str(name) for name in ck.unsafe_globals],
    } for ck in run.checkpoints]
    return pa.Table.from_pylist(rows, schema=schema("checkpoints"))


def _words(pa: Any, indices: np.ndarray, words: list[str]) -> Any:
    """The string column ``words[indices]``, built by Arrow without a Python object per row (a plain string
    column, dictionary-encoded in the file by the Parquet writer: every engine reads it as text)."""
    return pa.DictionaryArray.from_arrays(pa.array(indices, type=pa.int32()),
                                          pa.array(words, type=pa.string())).cast(pa.string())


def scalars_table(run: Run, run_id: str, rows: list[TagRows]) -> pa.Table:
    """The scalar ``rows`` of the run (``scalar_rows``: those of ``export RUN`` and ``Run.scalars()``) as a table;
    a missing wall time or attempt is null."""
    import pyarrow as pa  # the Parquet writer: only `export --format parquet` needs it

    blocks = [block for block in rows if len(block)]
    target = schema("scalars")
    if not blocks:
        return target.empty_table()
    tag_names = [safe_str(b.tag) for b in blocks]
    files: dict[str, int] = {}
    kinds: dict[str, int] = {}
    tag_index, file_index, kind_index = [], [], []
    for i, block in enumerate(blocks):
        local = np.asarray([files.setdefault(name_text(s), len(files)) for s in block.sources], dtype=np.int32)
        tag_index.append(np.full(len(block), i, dtype=np.int32))
        file_index.append(local[block.source_index] if len(local) else np.zeros(len(block), dtype=np.int32))
        kind_index.append(np.full(len(block), kinds.setdefault(block.kind, len(kinds)), dtype=np.int32))
    steps = np.concatenate([b.steps for b in blocks])
    values = np.concatenate([b.values for b in blocks])
    walls = np.concatenate([b.wall_times_s for b in blocks])
    attempts = np.concatenate([b.attempts for b in blocks])
    seq = np.concatenate([b.seq for b in blocks])
    columns = [
        _words(pa, np.zeros(steps.shape[0], dtype=np.int32), [safe_str(run_id)]),
        _words(pa, np.concatenate(tag_index), tag_names),
        pa.array(steps, type=pa.int64()),
        pa.array(values, type=pa.float64()),
        pa.array(walls, type=pa.float64(), mask=~np.isfinite(walls)),
        pa.array(attempts.astype(np.int32), type=pa.int32(), mask=attempts == NO_ATTEMPT),
        _words(pa, np.concatenate(file_index), list(files)),
        _words(pa, np.concatenate(kind_index), list(kinds)),
        pa.array(seq.astype(np.int32), type=pa.int32()),
    ]
    return pa.Table.from_arrays(columns, schema=target)


def run_tables(run: Run, run_id: str, exported_at: datetime, tags: tuple[str, ...] = (), policy: str = "all",
               all_sources: bool = False) -> dict[str, pa.Table]:
    """Every table of one run, by table name; the scalars are keyed (tag, step, attempt, source, seq): every
    record under ``all``, one per step under ``newest``/``oldest``, each tag from its preferred source unless
    ``all_sources`` (the rows of ``export RUN``)."""
    rows = scalar_rows(run, tags, policy, all_sources)
    return {
        "runs": runs_table(run, run_id, exported_at, rows),
        "attempts": attempts_table(run, run_id),
        "findings": findings_table(run, run_id),
        "checkpoints": checkpoints_table(run, run_id),
        "scalars": scalars_table(run, run_id, rows),
    }

