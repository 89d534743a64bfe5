"""Issue 21, "names that multiply": a file with a million distinct metric names is read in bounded memory.

At most ``MAX_TAGS_PER_FILE`` distinct tags are read from one event file or train.log (the first ones); the rest
are counted in ``file.too-many-tags``, which names the file. The inputs are built byte by byte
(``tests/many_names.py``); the peak is the fresh process's own (``VmHWM``, under the hostile tests' address-space
limit), the timeout only a hang guard.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pimm_inspect.sources._limits import MAX_TAGS_PER_FILE, TagCap
from pimm_inspect.sources.tensorboard.reader import read_event_file
from pimm_inspect.sources.train_log.reader import read_train_log
from tests.hostile_support import run_cli
from tests.many_names import write_event_file, write_train_log

MILLION = 1_000_000
MAX_RSS_MB = 1024
HANG_GUARD_S = 300


def test_the_first_names_are_kept_and_the_rest_counted(tmp_path: Path) -> None:
    extra = 500
    events = read_event_file(write_event_file(tmp_path / "tb", MAX_TAGS_PER_FILE + extra, points_per_name=2), "ev")
    assert len(events.series) == MAX_TAGS_PER_FILE
    assert list(events.series)[:2] == ["m0000000", "m0000001"] and "m0010000" not in events.series
    assert all(len(s) == 2 for s in events.series.values())
    (finding,) = [f for f in events.findings if f.code == "file.too-many-tags"]
    assert finding.paths == ("ev",) and f"{extra:,} distinct tags past the first {MAX_TAGS_PER_FILE:,}" in finding.message
    assert f"({2 * extra:,} points)" in finding.message

    log = read_train_log(write_train_log(tmp_path / "log", MAX_TAGS_PER_FILE + extra), "train.log")
    tags = {s.tag for s in log.series}
    assert len(tags) == MAX_TAGS_PER_FILE and "train_batch/m0000000" in tags and "train_batch/loss" in tags
    (finding,) = [f for f in log.findings if f.code == "file.too-many-tags"]
    # loss, Data and Batch come first on every line: the names past the cap are the last m-names (and their points)
    dropped = MAX_TAGS_PER_FILE + extra + 3 - MAX_TAGS_PER_FILE
    assert finding.paths == ("train.log",) and f"{dropped:,} distinct metric names" in finding.message


def test_a_file_under_the_cap_has_no_finding(tmp_path: Path) -> None:
    events = read_event_file(write_event_file(tmp_path / "tb", 50), "ev")
    assert len(events.series) == 50 and not [f for f in events.findings if f.code == "file.too-many-tags"]


def test_names_are_stored_once() -> None:
    cap = TagCap(limit=2)
    first = cap.admit("".join(["train/", "loss"]))
    assert first is not None and cap.admit("".join(["train/", "loss"])) is first
    assert cap.admit("b") == "b" and cap.admit("c") is None and cap.admit("c") is None
    assert len(cap.dropped) == 1


@pytest.mark.parametrize(("kind", "command"), [("event file", "show"), ("train.log", "ls")])
def test_a_million_names_in_bounded_memory(tmp_path: Path, kind: str, command: str) -> None:
    run = tmp_path / "run"
    if kind == "event file":
        write_event_file(run, MILLION)
    else:
        write_train_log(run, MILLION)
    outcome = run_cli(command, "--json", str(run), timeout=HANG_GUARD_S)
    assert outcome.returncode == 0, outcome.stderr[-2000:]
    assert outcome.max_rss_mb < MAX_RSS_MB, outcome.max_rss_mb
    doc = json.loads(outcome.stdout)["runs"][0]
    if command == "show":
        assert len(doc["scalars"]) == MAX_TAGS_PER_FILE
    else:
        assert doc["last_step"] == MILLION // 100
    assert doc["findings"]["warning"] >= 1


def test_a_growing_event_file_keeps_the_cap_across_refreshes(tmp_path: Path) -> None:
    """Read, then appended to with new names: the refresh gives the whole file's read (the first names kept)."""
    from pimm_inspect.session.store.cache import ReadCache
    from tests.many_names import _frame, _scalar_event

    path = write_event_file(tmp_path / "tb", MAX_TAGS_PER_FILE - 100)
    cache = ReadCache()
    first = cache.event_file(path, "ev").value
    assert first is not None and len(first.series) == MAX_TAGS_PER_FILE - 100
    with open(path, "ab") as out:
        out.write(b"".join(_frame(_scalar_event(1.0, 1, b"late%05d" % i, 0.5)) for i in range(300)))
    grown = cache.event_file(path, "ev").value
    assert grown is not None
    assert len(grown.series) == MAX_TAGS_PER_FILE and "late00099" in grown.series and "late00100" not in grown.series
    (finding,) = [f for f in grown.findings if f.code == "file.too-many-tags"]
    assert "200 distinct tags" in finding.message
