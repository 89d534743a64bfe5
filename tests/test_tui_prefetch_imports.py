"""The UI's prefetch child (``tui.prefetch``: the runs and their stored rows, read while the UI starts) imports only
what reading stored rows needs: not ``report.json_doc``, which only writing a tree's row index (``ls``, a cold pass)
uses (~18 ms of imports on the UI's first screen)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("textual")

from tests.test_tui_table_cache import _quiet_tree  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

CHILD = """
import json, sys
from pathlib import Path
from pimm_inspect.session import Session
from pimm_inspect.tui.prefetch import Batch, _produce

frames = []
_produce(Session(), Path(sys.argv[1]).absolute(), frames.append)  # the child's work, run here (no fork)
batches = [f for f in frames if isinstance(f, Batch)]
print(json.dumps({"runs": sum(len(b.paths) for b in batches), "sent": sum(len(b.sent) for b in batches),
                  "index": "pimm_inspect.session.row_index" in sys.modules,
                  "json_doc": "pimm_inspect.report.json_doc" in sys.modules}))
"""


@pytest.mark.parametrize("copies", [6, 36])  # rows from their own entries; from the tree's row index (>= 32 runs)
def test_the_prefetch_child_reads_stored_rows_without_the_json_report(tmp_path: Path, copies: int) -> None:
    tree = _quiet_tree(tmp_path, copies=copies)
    env = dict(os.environ, PYTHONPATH=str(REPO), PIMM_INSPECT_CACHE_DIR=str(tmp_path / "cache"))
    subprocess.run([sys.executable, "-m", "pimm_inspect", "ls", "--json", str(tree)], env=env, capture_output=True,
                   timeout=300, check=True)  # stores every row (and, at 32 runs or more, the tree's index)
    out = subprocess.run([sys.executable, "-c", CHILD, str(tree)], env=env, capture_output=True, text=True,
                         timeout=300, check=True, cwd=tmp_path)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["runs"] == copies and seen["sent"] == copies  # every row came from the cache
    assert seen["index"]  # the module that reads (and writes) the index was used ...
    assert not seen["json_doc"]  # ... without what only writing an index needs
