"""A small train.log is opened once: the Config: dump reader takes the bytes the log reader just read."""

from __future__ import annotations

import shutil
from pathlib import Path

from pimm_inspect.sources.train_log import _handoff, config_dump
from pimm_inspect.sources.train_log.config_dump import read_config_dumps
from pimm_inspect.sources.train_log.reader import read_train_log

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def _opens(monkeypatch) -> list[str]:
    opened: list[str] = []
    real = config_dump.open_regular

    def counting(path, rel_path, *args):
        opened.append(rel_path)
        return real(path, rel_path, *args)

    monkeypatch.setattr(config_dump, "open_regular", counting)
    return opened


def test_the_dumps_come_from_the_bytes_just_read_and_equal_a_fresh_read(monkeypatch, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    shutil.copyfile(RUNS / "e2_requeued_twice" / "train.log", log)
    opened = _opens(monkeypatch)
    result = read_train_log(log, "train.log")
    handed = read_config_dumps(log, "train.log", result.segments)
    assert opened == []  # taken from the reader
    again = read_config_dumps(log, "train.log", result.segments)  # taken once: now the file is opened
    assert opened == ["train.log"]
    assert repr(handed) == repr(again) and len(handed[0]) == 3 and handed[0][2].data["save_path"]


def test_other_segments_or_another_path_open_the_file(monkeypatch, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    shutil.copyfile(RUNS / "e2_clean" / "train.log", log)
    other = tmp_path / "other.log"
    shutil.copyfile(log, other)
    opened = _opens(monkeypatch)
    result = read_train_log(log, "train.log")
    read_config_dumps(other, "other.log", result.segments)  # same segments, another file
    read_config_dumps(log, "train.log", list(result.segments))  # equal segments, not these
    assert opened == ["other.log", "train.log"]
    assert read_config_dumps(log, "train.log", result.segments)[0]  # still left for its own reader
    assert opened == ["other.log", "train.log"]


def test_a_log_bigger_than_the_handoff_is_not_kept(monkeypatch, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    shutil.copyfile(RUNS / "e2_clean" / "train.log", log)
    monkeypatch.setattr("pimm_inspect.sources.train_log.reader.HANDOFF_BYTES", 100)
    opened = _opens(monkeypatch)
    result = read_train_log(log, "train.log")
    assert _handoff.take(result.segments, log) is None
    assert read_config_dumps(log, "train.log", result.segments)[0] and opened == ["train.log"]
