"""``show --json`` documents of runs: from the disk cache while still valid, else loaded, analysed and stored.

The document of an unchanged run is served from its stored entry (``store.doc_cache``: only stats, listings and one
small entry read); otherwise the run is loaded (through the per-file cache, so a grown log decodes only what was
appended) and analysed while its read is recorded (``load.read_record``: the one rule of "has this run changed"),
and the document is stored with that record when the read may be reused (not live, failed or racy).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..load import read_record
from ..report.json_text import clean, root_path
from .store.disk_cache import DiskCache
from .store.doc_cache import store_show, stored_show

if TYPE_CHECKING:
    from .store.cache import ReadCache


def build_show(root: Path, cache: ReadCache | None = None) -> tuple[dict[str, Any], bool]:
    """Load and analyse the run at ``root``: its document without ``path`` (``clean``), and whether it may be
    stored. (Loading, analysis and the document's code are imported here: a cached document needs none of them.)"""
    from ..analysis import analyze
    from ..load.safe import load_reusable
    from ..report.json_doc import show_body

    run, reusable = load_reusable(root, cache)
    body = clean(show_body(analyze(run)))
    if not isinstance(body, dict):
        raise TypeError("a show document is a JSON object")
    return body, reusable


def show_document(path: Path, base: Path, disk: DiskCache | None,
                  make_cache: Callable[[], ReadCache | None] = lambda: None, min_store_s: float = 0.0
                  ) -> dict[str, Any]:
    """The ``show --json`` document of the run at ``path`` (``report.json_doc.show_run``), its ``path`` relative to
    ``base``: from ``disk`` while nothing the run was read from changed, else built now through the per-file cache
    ``make_cache()`` gives (asked for only then), and stored when that took at least ``min_store_s`` CPU seconds
    (``Settings.cache_min_decode_s``: a small run is as quick to read again)."""
    root = Path(path).absolute()
    usable = disk is not None and disk.usable_for(root)
    stored = stored_show(disk, root) if disk is not None and usable else None
    if stored is not None:
        body = stored
    elif disk is None or not usable:
        body = build_show(root, make_cache())[0]
    else:
        started = time.process_time()
        cache = make_cache()
        body, record = read_record.record_read(root, lambda: build_show(root, cache), str(disk.directory))
        if time.process_time() - started >= min_store_s:
            store_show(disk, root, record, body)
    return {"path": root_path(root, base), **body}
