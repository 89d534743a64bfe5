"""The bulk W&B decoder gives exactly what decoding every record with the protobuf parser gives."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest

from pimm_inspect.sources.wandb._proto import record_class
from pimm_inspect.sources.wandb.reader import read_wandb_run
from tests.wandb_support import frame_records

REPO = Path(__file__).resolve().parents[1]
BENCH_RUNS = REPO / "bench" / "_data"


def _reference(payloads: list[bytes]):
    """Per-record decode with ``Record.FromString``: rows, series per key, final summary."""
    cls, _ = record_class()
    steps, stamps, columns, summary = [], [], {}, {}
    for payload in payloads:
        rec = cls.FromString(payload)
        kind = rec.WhichOneof("record_type")
        if kind == "summary":
            for item in rec.summary.update:
                summary[(item.key,) if item.key else tuple(item.nested_key)] = item.value_json
            for item in rec.summary.remove:
                summary.pop((item.key,) if item.key else tuple(item.nested_key), None)
            continue
        if kind != "history":
            continue
        step, ts, row = rec.history.step.num, math.nan, len(steps)
        for item in rec.history.item:
            key = item.key or ".".join(item.nested_key)
            value = json.loads(item.value_json)
            if key == "_step":
                step = int(item.value_json)
            elif key == "_timestamp":
                ts = float(value)
            elif key != "_runtime":
                columns.setdefault(key, []).append((row, value))
        steps.append(step)
        stamps.append(ts)
    return np.array(steps, dtype=np.int64), np.array(stamps), columns, summary


def _write_log(tmp_path: Path, rows: int, seed: int = 7) -> tuple[Path, list[bytes]]:
    """A transaction log of ``rows`` history rows shaped like wandb's (random key order, summaries each row),
    with media values, nested keys, non-ASCII keys, NaN/Infinity, and summary removals mixed in."""
    cls, _ = record_class()
    rng = random.Random(seed)
    payloads: list[bytes] = []
    num = 0

    def record() -> object:
        nonlocal num
        num += 1
        rec = cls()
        rec.num = num
        return rec

    for i in range(rows):
        values = {"train/loss": repr(2.0 / (i + 1)), "train/acc": repr(i / 7), "params/lr": repr(1e-3 * 0.999 ** i),
                  "_timestamp": repr(1.7e9 + i * 0.25), "_runtime": repr(i * 0.25), "_step": str(i)}
        if i % 997 == 0:
            values["val/mIoU"] = "NaN" if i % 2 else "Infinity"
        if i % 5003 == 0:
            values["media"] = json.dumps({"_type": "image-file", "path": f"media/{i}.png"})
        if i % 7919 == 0:
            values["größe"] = "1.5"
        items = list(values.items())
        rng.shuffle(items)  # wandb-core writes a row's keys in map order
        rec = record()
        for key, text in items:
            item = rec.history.item.add()
            if i % 3001 == 0 and key == "train/loss":
                item.key = key  # the other key form
            else:
                item.nested_key.append(key)
            item.value_json = text
        rec.history.step.num = i
        payloads.append(rec.SerializeToString())
        rec = record()
        for key, text in items:
            if key != "_step":
                update = rec.summary.update.add()
                update.nested_key.append(key)
                update.value_json = text
        if i % 20011 == 0:
            gone = rec.summary.remove.add()
            gone.nested_key.append("media")
        payloads.append(rec.SerializeToString())
    rec = record()
    rec.exit.exit_code = 0
    payloads.append(rec.SerializeToString())
    folder = tmp_path / "wandb" / "offline-run-20260101_000000-bulk0001"
    folder.mkdir(parents=True)
    (folder / "run-bulk0001.wandb").write_bytes(frame_records(payloads))
    return folder, payloads


def _compare(result, payloads: list[bytes]) -> None:
    steps, stamps, columns, summary = _reference(payloads)
    assert result.history_steps.tolist() == steps.tolist()
    np.testing.assert_array_equal(result.history_timestamps_s, stamps)
    by_tag = {s.tag: s for s in result.series}
    for key, entries in columns.items():
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for _r, v in entries):
            series = by_tag[key]
            rows = np.array([r for r, _v in entries])
            assert series.steps.tolist() == steps[rows].tolist(), key
            expected = np.array([float(v) for _r, v in entries])
            assert np.array_equal(series.values, expected, equal_nan=True), key
            assert np.array_equal(series.wall_times_s, stamps[rows], equal_nan=True), key
        else:
            assert key in result.non_scalar_keys and key not in by_tag
    assert set(by_tag) | set(result.non_scalar_keys) == set(columns)
    expected_summary: dict = {}
    for path, text in summary.items():
        node = expected_summary
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = json.loads(text)
    assert json.dumps(dict(result.summary), sort_keys=True) == json.dumps(expected_summary, sort_keys=True)


def test_bulk_decode_equals_per_record_decode_on_100k_rows(tmp_path):
    folder, payloads = _write_log(tmp_path, 100_000)
    result = read_wandb_run(folder, "wandb/run")
    assert not [f for f in result.findings if f.code.startswith("file.")]
    assert len(result.history_steps) == 100_000
    _compare(result, payloads)
    loss = next(s for s in result.series if s.tag == "train/loss")
    assert loss.values.tolist() == [2.0 / (i + 1) for i in range(100_000)]


def test_bulk_decode_across_batches_and_a_damaged_block(tmp_path, monkeypatch):
    """Small segments force records across segment ends; a flipped byte hands the rest to the exact loop."""
    import pimm_inspect.sources.wandb._batches as batches

    default = batches.SEGMENT_BLOCKS
    monkeypatch.setattr(batches, "SEGMENT_BLOCKS", 2)
    folder, payloads = _write_log(tmp_path, 3_000, seed=3)
    result = read_wandb_run(folder, "wandb/run")
    _compare(result, payloads)
    log = next(folder.glob("*.wandb"))
    data = bytearray(log.read_bytes())
    data[5 * 32768 + 100] ^= 0xFF
    log.write_bytes(bytes(data))
    damaged = read_wandb_run(folder, "wandb/run")
    assert "file.corrupt" in {f.code for f in damaged.findings}
    monkeypatch.setattr(batches, "SEGMENT_BLOCKS", default)
    assert len(read_wandb_run(folder, "wandb/run").history_steps) == len(damaged.history_steps)


def test_real_wandb_100k_log_matches_per_record_decode():
    """The log wandb itself wrote for bench/bench_wandb.py (generated there; skipped when absent)."""
    logs = sorted(BENCH_RUNS.glob("wandb_*/wandb/offline-run-*/run-*.wandb"))
    if not logs:
        pytest.skip("run bench/bench_wandb.py once to generate the wandb-written log")
    from pimm_inspect.sources.wandb._framing import FramingState, iter_records

    with open(logs[0], "rb") as fh:
        payloads = [p for _o, p in iter_records(fh, FramingState("x"))]
    folder = logs[0].parent
    _compare(read_wandb_run(folder, "run"), payloads)
