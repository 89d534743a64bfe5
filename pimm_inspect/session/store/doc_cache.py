"""Finished ``show --json`` documents, kept in the disk cache while nothing the run was read from changed.

A warm ``show --json`` of a big run then neither decodes its series nor runs the analysis again: the document of each
run is served from one small entry after ``read_record.unchanged`` (stats and folder listings, no file read). The
validity rule is the row cache's (``read_record``: every file opened and folder listed by the load and the analysis,
inside the run and outside it, each fingerprinted before it was read; never stored for a live, failed or racy read),
so a grown train.log, a new checkpoint, a changed config or metadata file each make the document be built again.

An entry is ``(made_s, deps, text)``: the record's start time, its dependencies as one ``\\0``-joined string
(``read_record.flat``), and the document without its ``path`` (the one field that depends on the PATH the user
gave) as JSON text of its ``report.json_text.clean`` form, which ``report.json_doc.dumps`` writes byte for byte as
it writes the document made now. Entries of other analysis or report code are ignored (``SHOW_CODE``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...load import read_record
from .disk_cache import DiskCache

SHOW_FORMAT = 1
"""The layout of a stored document entry; bumped when it changes (entries of another layout are then ignored)."""
SHOW_KIND = f"show_doc.{SHOW_FORMAT}"
SHOW_CODE = ("analysis", "report")
"""A document is made by load, analysis and report code: entries of any other version of them are ignored."""


def entry_path(disk: DiskCache, root: Path) -> Path:
    """The file of the run's stored document (whether or not it exists)."""
    return disk.entry_file(SHOW_KIND, root, "", SHOW_CODE)


def stored_show(disk: DiskCache, root: Path) -> dict[str, Any] | None:
    """The stored document (without ``path``) of the run at ``root`` when nothing it was read from changed since;
    None when missing, damaged, foreign or stale."""
    stored = disk.get_value(SHOW_KIND, root, "", SHOW_CODE)
    if not (isinstance(stored, tuple) and len(stored) == 3 and type(stored[0]) is float and type(stored[1]) is str
            and type(stored[2]) is str):
        return None
    made_s, deps, text = stored
    record = read_record.from_flat(made_s, tuple(deps.split("\0")) if deps else ())
    if record is None or not read_record.unchanged(record):  # also None when the clock went back
        return None
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return body if isinstance(body, dict) and "path" not in body else None


def store_show(disk: DiskCache, root: Path, record: read_record.ReadRecord, body: dict[str, Any]) -> None:
    """Store ``body`` (a ``clean`` document without ``path``) of the run at ``root`` with the record of its read."""
    if not record.reusable:
        return
    try:
        text = json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (ValueError, TypeError, RecursionError):
        return  # not storable: simply not cached
    disk.put_value(SHOW_KIND, root, "", (record.started_s, "\0".join(read_record.flat(record)), text), SHOW_CODE)
