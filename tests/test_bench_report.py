"""The benchmark table (bench/README.md) and the README's headline figures are generated from bench/results/*.json,
never edited by hand."""

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


def _block(path: Path, start: str, end: str) -> str:
    text = path.read_text()
    return text[text.index(start) + len(start):text.index(end)].strip()


def test_bench_readme_table_is_what_the_results_give() -> None:
    report = _report()
    assert _block(ROOT / "bench" / "README.md", report.START, report.END) == report.table(report.load()).strip(), \
        "run `python bench/report.py` after a benchmark run"


def test_readme_keeps_headline_figures_and_links_the_table() -> None:
    report = _report()
    readme = ROOT / "README.md"
    headline = _block(readme, report.HEADLINE_START, report.HEADLINE_END)
    assert headline == report.headlines(report.load()).strip(), "run `python bench/report.py` after a benchmark run"
    assert len(headline.splitlines()) >= 3  # a few headline numbers, each from a results row
    speed = readme.read_text().split("## Speed", 1)[1].split("\n## ", 1)[0]
    assert "](bench/README.md#results)" in speed
    assert report.START not in readme.read_text() and "| benchmark | row |" not in readme.read_text()


def test_check_fails_on_a_stale_block(tmp_path: Path, monkeypatch) -> None:
    report = _report()
    for name in ("README", "BENCH_README"):
        copy = tmp_path / name
        copy.write_text(getattr(report, name).read_text())
        monkeypatch.setattr(report, name, copy)
    monkeypatch.setattr("sys.argv", ["report.py", "--check"])
    assert report.main() == 0
    copy = tmp_path / "BENCH_README"
    copy.write_text(copy.read_text().replace("| TensorBoard event files |", "| TensorBoard events |", 1))
    assert report.main() == 1
    monkeypatch.setattr("sys.argv", ["report.py"])
    assert report.main() == 0
    monkeypatch.setattr("sys.argv", ["report.py", "--check"])
    assert report.main() == 0


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
