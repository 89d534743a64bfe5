"""The README's speed table is generated from bench/results/*.json, never edited by hand."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _report():
    spec = importlib.util.spec_from_file_location("bench_report", ROOT / "bench" / "report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_table_is_what_the_results_give() -> None:
    report = _report()
    text = (ROOT / "README.md").read_text()
    start, end = text.index(report.START), text.index(report.END)
    assert text[start + len(report.START):end].strip() == report.table(report.load()).strip(), \
        "run `python bench/report.py` after a benchmark run"


def test_every_figure_becomes_one_row_with_its_reference_and_ratio(tmp_path: Path) -> None:
    report = _report()
    doc = {"title": "TensorBoard event files", "command": "python bench/bench_tb_events.py", "commit": "abc1234",
           "measured_at": "2026-12-01 12:00 UTC", "load_average_1m": 1.5, "cpus": 2,
           "figures": [{"row": "mixed tags, 1,000,000 points", "what": "whole process", "ours_s": 0.8, "ours_cpu_s": 0.6,
                        "reference": "EventAccumulator", "ref_s": 24.0, "ref_cpu_s": 18.0, "target": "<= 1 s, >= 25x",
                        "met_wall": True, "met_cpu": True, "note": "", "ratio": 30.0, "cpu_ratio": 30.0}]}
    rows = [line for line in report.table([doc]).splitlines() if line.startswith("| TensorBoard")]
    assert rows == ["| TensorBoard event files | mixed tags, 1,000,000 points (whole process) | 0.80 s / 0.60 s | "
                    "EventAccumulator: 24.00 s / 18.00 s | 30.0x / 30.0x | <= 1 s, >= 25x | yes / yes | - |"]
    assert all(json.loads(p.read_text())["figures"] for p in (ROOT / "bench" / "results").glob("*.json"))
