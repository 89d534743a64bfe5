"""Every benchmark turns its medians into well-formed figures that bench/report.py renders (issue 10: the README's
table comes from the benchmarks' own results). Fast: the figure-building functions get made-up medians, nothing is
timed, and the figures go to a temporary results folder."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch):
    """Import a module of bench/ by name (bench/ first on sys.path, as when a script runs)."""
    monkeypatch.syspath_prepend(str(BENCH))

    def load(name: str):
        return importlib.import_module(name)
    return load


def rendered(bench, tmp_path: Path, name: str, title: str, figures: list) -> list[list[str]]:
    """Save ``figures`` as benchmark ``name`` into ``tmp_path``; the README table's rows for it, split into cells."""
    results = bench("_results")
    report = bench("report")
    path = results.save(name, title, figures, f"python bench/{name}.py --x", tmp_path)
    assert path == tmp_path / f"{name}.json"
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text
    doc = json.loads(text)
    assert {"bench", "title", "command", "commit", "measured_at", "load_average_1m", "cpus"} <= set(doc)
    assert doc["bench"] == name and doc["command"] == f"python bench/{name}.py --x" and doc["cpus"] >= 1
    assert len(doc["figures"]) == len(figures) > 0
    table = report.table(report.load(tmp_path))
    rows = [line.split(" | ") for line in table.splitlines() if line.startswith(f"| {title} |")]
    assert len(rows) == len(figures)
    assert all(len(cells) == 8 for cells in rows), rows
    assert f"`python bench/{name}.py --x`" in table
    return rows


def test_train_log_figures(bench, tmp_path: Path) -> None:
    mod = bench("bench_train_log")
    medians = {
        "this branch: `read_train_log`": {"wall": 11.0, "work": 10.0, "cpu": 8.0, "rss": 700.0, "bytes_read": None},
        "this branch: `read_train_log_tail`": {"wall": 0.5, "work": 0.05, "cpu": 0.02, "rss": 30.0, "bytes_read": None},
        "this branch: refresh after +1 MB": {"wall": 19.0, "work": 0.09, "cpu": 0.04, "rss": 700.0,
                                             "bytes_read": 1_048_792},
        "per-line regex (spec 3.4 D), `float` per term": {"wall": 85.0, "work": 84.0, "cpu": 40.0, "rss": 2200.0,
                                                           "bytes_read": None},
    }
    cold, tail, refresh = mod.figures(medians, 1094.0, 5_041_041, 1 << 20)
    assert cold.row == "1,094 MB pimm log, one attempt, 5,041,041 Train: lines, cold read"
    assert (cold.reference, cold.ref_s, cold.ref_cpu_s) == ("per-line regex (spec 3.4 D)", 84.0, 40.0)
    assert (cold.met_wall, cold.met_cpu) == (True, True)  # 109 and 137 MB/s, 700 MB
    assert "109 MB/s wall, 137 MB/s CPU; peak RSS 700 MB" in cold.note
    assert tail.reference is None and tail.target == "<= 0.2 s" and (tail.met_wall, tail.met_cpu) == (True, True)
    assert refresh.reference == "full read (ours, cold)" and refresh.ref_s == 10.0
    assert (refresh.met_wall, refresh.met_cpu) == (True, True) and "1,048,792 bytes for 1,048,576" in refresh.note
    rows = rendered(bench, tmp_path, "train_log", "pimm train.log", [cold, tail, refresh])
    assert rows[0][3] == "per-line regex (spec 3.4 D): 84.00 s / 40.00 s" and rows[0][4] == "8.4x / 5.0x"
    assert rows[1][3] == "-" and rows[1][6] == "yes / yes"

    # Too much memory, a whole re-read on refresh, and no reference (--skip-slow): each shows.
    medians["this branch: `read_train_log`"]["rss"] = 900.0
    medians["this branch: refresh after +1 MB"]["bytes_read"] = 1_093_727_153
    del medians["per-line regex (spec 3.4 D), `float` per term"]
    cold, _tail, refresh = mod.figures(medians, 1094.0, 5_041_041, 1 << 20)
    assert (cold.met_wall, cold.met_cpu, cold.reference, cold.ref_s) == (False, False, None, None)
    assert (refresh.met_wall, refresh.met_cpu) == (False, False)
    assert rendered(bench, tmp_path, "train_log", "pimm train.log", [cold])[0][3] == "-"
    medians["this branch: refresh after +1 MB"]["bytes_read"] = None  # the reader's block loop was not counted
    refresh = mod.figures(medians, 1094.0, 5_041_041, 1 << 20)[2]
    assert (refresh.met_wall, refresh.note) == (False, "bytes read not counted")


def test_wandb_figures(bench, tmp_path: Path) -> None:
    mod = bench("bench_wandb")
    medians = {mod.SHOW: (2.1, 0.9, None), mod.READER: (1.9, 0.8, 0.55), mod.PER_RECORD: (5.8, 2.5, None),
               mod.WANDB: (7.2, 3.1, None)}
    show, reader = mod.figures(medians, 100_000, 47.7)
    assert show.row == "100,000-row offline .wandb, 3 metrics, 47.7 MB: show --json"
    assert show.reference.startswith("wandb's Record") and (show.ref_s, show.ref_cpu_s) == (7.2, 3.1)
    assert show.target == "<= 1.0 s" and (show.met_wall, show.met_cpu) == (False, True)
    assert reader.ref_s == 5.8 and reader.note == "reader work 0.550 s CPU" and reader.met_wall is None
    rows = rendered(bench, tmp_path, "wandb", "W&B transaction logs", [show, reader])
    assert rows[0][2] == "2.10 s / 0.90 s" and rows[0][6] == "no / yes"
    del medians[mod.WANDB]  # --skip-wandb: our per-record decode is the reference
    show, _reader = mod.figures(medians, 100_000, 47.7)
    assert show.reference == "Record.FromString + json.loads, per record" and show.ref_s == 5.8

    size, cut = 47_700_000, 47_700_000 - (1 << 20)
    refreshes = [{"wall": w, "cpu": c, "first_wall": 1.0, "first_cpu": 0.5, "starts": [cut - 40], "first_end": cut - 40,
                  "size": size, "cut": cut, "incremental": 1} for w, c in ((0.03, 0.02), (0.05, 0.03), (0.04, 0.02))]
    refresh = mod.figures(medians, 100_000, 47.7, refreshes)[2]
    assert refresh.row == "100,000-row offline .wandb, 3 metrics, 47.7 MB: refresh after 1 MiB appended"
    assert (refresh.ours_s, refresh.ours_cpu_s, refresh.reference, refresh.ref_s) == (
        0.04, 0.02, "read of the log before (ours)", 1.0)
    assert (refresh.met_wall, refresh.met_cpu) == (True, True)
    assert refresh.note == "decoded at most 1,048,616 bytes for 1,048,576 appended"
    assert rendered(bench, tmp_path, "wandb", "W&B transaction logs", [refresh])[0][4] == "25.0x / 25.0x"
    refreshes[1] = dict(refreshes[1], starts=[0, cut - 40])  # one refresh framed the log from the start again
    assert mod.figures(medians, 100_000, 47.7, refreshes)[2].met_wall is False
    refreshes[1] = dict(refreshes[1], starts=[0], first_end=0, incremental=0)  # a full read
    assert mod.figures(medians, 100_000, 47.7, refreshes)[2].met_cpu is False


def test_cache_figures(bench, tmp_path: Path) -> None:
    mod = bench("bench_cache")
    this = {"ls no cache": (13.0, 9.0), "ls cold, 1 process": (14.0, 9.5), "ls cold": (9.0, 9.6), "ls warm": (1.0, 0.7),
            "ls warm, 1 run changed": (1.1, 0.8), "show no cache": (1.5, 0.7), "show cold": (1.6, 0.7),
            "show warm": (0.7, 0.4)}
    figures = mod.figures(this, 1000)
    by_row = {f.row: f for f in figures}
    assert set(by_row) == {"ls, 1,000-run tree, cold, 1 process", "ls, 1,000-run tree, cold", "ls, 1,000-run tree, warm",
                           "ls, 1,000-run tree, warm, 1 run changed", "show --json, 1M-point run, cold",
                           "show --json, 1M-point run, warm"}
    assert all(f.reference == "no cache" for f in figures)
    cold, warm, show = by_row["ls, 1,000-run tree, cold"], by_row["ls, 1,000-run tree, warm"], by_row[
        "show --json, 1M-point run, warm"]
    assert (cold.target, cold.met_wall, cold.ref_s) == ("<= 8 s", False, 13.0)
    assert (warm.target, warm.met_wall, warm.met_cpu) == ("<= 2 s", True, True)
    assert (show.target, show.met_wall, show.met_cpu, show.ref_cpu_s) == ("<= 0.6 s", False, True, 0.7)
    assert by_row["ls, 1,000-run tree, cold, 1 process"].met_wall is None
    rows = rendered(bench, tmp_path, "cache", "Persistent cache", figures)
    assert any(r[1] == "ls, 1,000-run tree, warm (whole process)" and r[4] == "13.0x / 12.9x" for r in rows)
    # --skip-show: no show rows, and no row without its no-cache reference
    assert all(f.row.startswith("ls") for f in mod.figures({k: v for k, v in this.items() if k[:2] == "ls"}, 1000))
    assert mod.figures({"ls warm": (1.0, 0.7)}, 1000) == []


def test_cache_train_log_figures_per_code_version(bench, tmp_path: Path) -> None:
    """The train.log rows come from one code version's samples ("this" saved, the baseline's printed); peaks are MB
    of 10^6 bytes, the largest child process's noted when there is one."""
    mod = bench("bench_cache")
    log = tmp_path / "train.log"
    log.write_bytes(b"x" * 1_000_000)
    samples = {f"{name}: {setting}": [(wall, 1.0, mb, child)]
               for name, child in (("this", 57.0), ("baseline", 0.0))
               for setting, wall, mb in (("no cache", 2.0, 480.0), ("cold", 2.2, 470.0), ("warm", 0.1, 20.0))}
    samples |= {"this: entry": [(0.07, 0.07, 0.0, 0.0)], "baseline: entry": [(0.08, 0.08, 0.0, 0.0)]}
    cold, warm, entry = mod.train_log_figures(samples, log)
    assert (cold.ours_s, cold.ref_s, cold.met_wall) == (2.2, 2.0, True)
    assert cold.note.startswith("peak RSS 470 MB vs 480 MB (0.98x); 0 MB/s") and "largest child process 57 MB" in cold.note
    assert entry.note == "entry 0.1 MB = 7.0% of the log, lossless"
    base_cold = mod.train_log_figures(samples, log, "baseline")[0]
    assert "child" not in base_cold.note and base_cold.ours_s == 2.2
    assert "VmHWM" in mod.PEAK_WRAPPER and "RUSAGE_CHILDREN" in mod.PEAK_WRAPPER


def test_cache_rows_of_a_skipped_part_are_kept_with_their_stamp(bench, tmp_path: Path) -> None:
    """``bench_cache.py --skip-ls --skip-show`` (only the train.log rows measured) keeps the other rows of the last
    run, each noting when and at which commit it was measured; a measured part replaces its rows."""
    mod = bench("bench_cache")
    results = bench("_results")
    this = {"ls no cache": (13.0, 9.0), "ls warm": (1.0, 0.7), "show no cache": (1.5, 0.7), "show warm": (0.7, 0.4)}
    log = results.Figure("show --json, 1.09 GB pimm train.log, warm", 0.3, 0.2, "no cache", 9.0, 9.5)
    path = results.save("cache", "Persistent cache", mod.figures(this, 1000) + [log], "x", tmp_path)
    doc = json.loads(path.read_text())
    kept = mod.kept_rows(tmp_path, {"ls": True, "show": False, "log": True})
    assert [f.row for f in kept] == ["ls, 1,000-run tree, warm", log.row]
    stamp = f"kept from {doc['commit']}, {doc['measured_at']}"
    assert all(f.note.endswith(stamp) for f in kept) and kept[0].ours_s == 1.0 and kept[1].ref_cpu_s == 9.5
    results.save("cache", "Persistent cache", kept, "y", tmp_path)  # kept again later: its first stamp stays
    assert [f.note for f in mod.kept_rows(tmp_path, {"ls": True, "log": True})] == [stamp, stamp]
    assert mod.kept_rows(tmp_path / "nothing", {"ls": True}) == []


def test_tui_figures(bench, tmp_path: Path) -> None:
    mod = bench("bench_tui_first_screen")
    ours = {"tb": [{"header": 0.8, "tags": 1.1, "curves": 0.2}, {"header": 0.9, "tags": 1.3, "curves": 0.1},
                   {"header": 0.7, "tags": 1.2, "curves": 0.3}],
            "tree": [{"first rows": 0.9, "all": 30.0}, {"first rows": 1.0, "all": None}]}
    labels = {"tb": "1,000,000-point event file, 20 tags", "tree": "1,000-run tree"}
    figures = mod.figures(ours, {}, None, labels, 60.0, 120.0, "cold")
    by_row = {f.row: f for f in figures}
    header = by_row["1,000,000-point event file, 20 tags: header (status, attempts)"]
    assert (header.ours_s, header.target, header.met_wall, header.reference) == (0.8, "<= 1 s", True, None)
    assert by_row["1,000,000-point event file, 20 tags: scalar tags shown"].target == "<= 2.5 s"
    assert by_row["1,000-run tree: first rows with facts"].target == "<= 2 s"
    never = by_row["1,000-run tree: every run read"]  # one run timed out: counted as the timeout
    assert never.ours_s == 120.0 and never.note == "not reached within 120 s in 1 of 2 runs"
    rows = rendered(bench, tmp_path, "tui_first_screen", "Terminal UI, time to screen", figures)
    assert len(rows) == 5 and rows[0][2] == "0.80 s / -"

    theirs = {"tb": [{"header": 2.0, "tags": 2.0, "curves": 0.2}], "tree": [{"first rows": None, "all": None}]}
    figures = mod.figures(ours, theirs, "main (84007a7)", labels, 60.0, 120.0, "cold")
    header, first = figures[0], next(f for f in figures if f.row.endswith("first rows with facts"))
    assert (header.reference, header.ref_s, header.ratio) == ("main (84007a7)", 2.0, 2.5)
    assert first.ref_s is None and "reference not reached" in first.note
    rendered(bench, tmp_path, "tui_first_screen", "Terminal UI, time to screen", figures)


def test_checkpoint_figures(bench, tmp_path: Path) -> None:
    mod = bench("bench_checkpoint")
    rows = [("1GB", 1154.0, {"work_s": 0.024, "torch_loaded": False}, 0.26, {"work_s": 1.66}, 3.12, {}, 0.0)]
    work, process = mod.figures(rows)
    assert (work.what, work.ours_s, work.ref_s, work.met_wall) == ("reader work", 0.024, 1.66, True)
    assert (process.what, process.ref_s) == ("whole process", 3.12)
    cells = rendered(bench, tmp_path, "checkpoint", "Checkpoint metadata", [work, process])
    assert cells[0][3] == "torch.load: 1.66 s / -" and cells[0][4] == "69.2x / -"
    rows[0][2]["torch_loaded"] = True
    assert mod.figures(rows)[0].met_wall is False


def test_dataset_figures(bench, tmp_path: Path) -> None:
    mod = bench("bench_dataset")
    rows = [("1,000-run tree: ls (reference: loads every run)", (13.0, 9.2)),
            ("1,000-run tree: export, empty DIR", (24.3, 17.7)),
            ("1,000-run tree: export again, nothing changed", (0.78, 0.52)),
            ("1M-point run: show --json (reference: loads the run)", (1.34, 0.71)),
            ("1M-point run: export -o DIR (dataset)", (1.59, 1.43))]
    figures = mod.figures(rows)
    assert [f.row for f in figures] == [rows[1][0], rows[2][0], rows[4][0]]
    assert [(f.reference, f.ref_s) for f in figures] == [("ls", 13.0), ("ls", 13.0), ("show --json", 1.34)]
    cells = rendered(bench, tmp_path, "export", "Parquet dataset export", figures)
    assert cells[1][4] == "16.7x / 17.7x"


def test_tb_events_figure(bench, tmp_path: Path) -> None:
    mod = bench("bench_tb_events")
    ours = {"seconds": 0.9, "cpu_seconds": 0.6, "rss_mib": 242.0, "points": 1_000_000, "inside_cpu_seconds": 0.45}
    mixed = mod.figure(mod.ROWS["mixed_tbx"], 51_000_000, ours,
                       {"seconds": 45.0, "cpu_seconds": 18.0, "inside_cpu_seconds": 18.0}, ["<= 1 s", ">= 25x"], True,
                       True)
    tenfold = mod.figure(mod.ROWS["mixed_10x"], 510_000_000, dict(ours, points=10_000_000), None,
                         ["<= 10 s", "< 1.5 GB"], True, True)
    assert mixed.row == "tensorboardX, 20 pimm tags of mixed lengths, 1,000,000 points, 51 MB"
    assert (mixed.reference, mixed.ratio) == ("EventAccumulator", 50.0)
    # whole processes in the figures; what each child timed after the interpreter started, in the note
    assert mixed.note == ("peak 242 MiB; after interpreter start-up: ours 0.45 s CPU, EventAccumulator 18.00 s CPU "
                          "(40.0x)")
    assert tenfold.reference is None and tenfold.ref_s is None
    cells = rendered(bench, tmp_path, "tb_events", "TensorBoard event files", [mixed, tenfold])
    assert cells[0][4] == "50.0x / 30.0x" and cells[1][3] == "-"


def test_a_figure_must_have_a_time_and_a_named_reference(bench, tmp_path: Path) -> None:
    results = bench("_results")
    with pytest.raises(ValueError, match="no finite time"):
        results.save("x", "X", [results.Figure("row", float("nan"))], "cmd", tmp_path)
    with pytest.raises(ValueError, match="names no reference"):
        results.save("x", "X", [results.Figure("row", 1.0, ref_s=2.0)], "cmd", tmp_path)
    assert not (tmp_path / "x.json").exists()
    # A reference time not measured (NaN) is written as null and shown as "-".
    path = results.save("x", "X", [results.Figure("row", 1.0, 0.5, "ref", float("nan"), 1.0)], "cmd", tmp_path)
    figure = json.loads(path.read_text())["figures"][0]
    assert figure["ref_s"] is None and figure["ratio"] is None and figure["cpu_ratio"] == 2.0


def test_the_results_folder_is_chosen_by_option_then_environment(bench, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    results = bench("_results")
    monkeypatch.delenv(results.ENV, raising=False)
    assert results.results_dir() == BENCH / "results"
    monkeypatch.setenv(results.ENV, str(tmp_path / "env"))
    assert results.results_dir() == tmp_path / "env"
    assert results.results_dir(tmp_path / "opt") == tmp_path / "opt"
    results.save("y", "Y", [results.Figure("row", 1.0)], "cmd")
    assert (tmp_path / "env" / "y.json").exists() and not (BENCH / "results" / "y.json").exists()


@pytest.mark.parametrize("script", ["bench_tb_events", "bench_train_log", "bench_wandb", "bench_cache",
                                    "bench_tui_first_screen", "bench_checkpoint", "bench_dataset"])
def test_every_bench_takes_a_results_dir(bench, script: str, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    mod = bench(script)
    monkeypatch.setattr(sys, "argv", [script, "--help"])
    with pytest.raises(SystemExit):
        mod.main()
    assert "--results-dir" in capsys.readouterr().out


def test_run_all_runs_every_bench_report_knows(bench, tmp_path: Path) -> None:
    run_all, report = bench("run_all"), bench("report")
    assert list(run_all.BENCHES) == report.ORDER
    for smoke in (True, False):
        for name, argv in run_all.commands(list(run_all.BENCHES), smoke, tmp_path):
            assert Path(argv[1]).is_file() and argv[-2:] == ["--results-dir", str(tmp_path)], (name, argv)
    # The full run writes into bench/results/ by default, so each results file records the command to type.
    default = run_all.commands(["cache"], False, (BENCH / "results").resolve())
    assert "--results-dir" not in default[0][1]
