"""Benchmark: the Parquet dataset export (``export ROOT --format parquet -o DIR``) of a tree and of a 1M-point run.

Usage: python bench/bench_dataset.py [--runs 1000] [--repeat 3] [--skip-tree] [--skip-big]

Inputs are generated into bench/_data/ once (the functions of bench_cache.py): a tree of ``--runs`` runs copied
round-robin from fixtures/runs, and the 1M-scalar tensorboardX event file of bench_tb_events.py. Every figure is a
fresh whole process with the persistent cache off (PIMM_INSPECT_CACHE_DIR=off, so every run is decoded), the
median of ``--repeat``, the rows of one repeat run back to back:

- tree: ``ls`` (the reference: it loads every run too), a first export into an empty DIR, the same export
  again with nothing changed, and again after one run's event file grew;
- 1M-point run: ``show --json`` (the reference: it loads the run), ``export RUN -o FILE.parquet`` (one table,
  through pandas), and the dataset export of the same run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import struct
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

from bench_cache import make_tree, one_m_run  # noqa: E402  (the same generated inputs)
from bench_wandb import timed  # noqa: E402  (wall and child CPU of one fresh process)
from _results import Figure, add_option, save  # noqa: E402


def grow(event_file: Path, step: int) -> None:
    """Append one scalar event (TensorBoard's own writer's bytes) to ``event_file``."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    with tempfile.TemporaryDirectory() as scratch:
        writer = EventFileWriter(scratch)
        value = summary_pb2.Summary.Value(tag="bench/grown", simple_value=float(step))
        writer.add_event(event_pb2.Event(wall_time=1.8e9 + step, step=step, summary=summary_pb2.Summary(value=[value])))
        writer.close()
        data = next(Path(scratch).glob("events.out.tfevents.*")).read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    with open(event_file, "ab") as fh:
        fh.write(data[8 + 4 + length + 4:])


def _median(samples: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(w for w, _ in samples), statistics.median(c for _, c in samples)


def bench_tree(runs: int, repeat: int) -> list[tuple[str, tuple[float, float]]]:
    """ls vs first export vs unchanged re-export vs re-export after one run grew."""
    source = make_tree(HERE / "_data" / f"tree_{runs}", runs)
    py = sys.executable
    env = dict(os.environ, PYTHONPATH=str(REPO), PIMM_INSPECT_CACHE_DIR="off")
    names = ("ls (reference: loads every run)", "export, empty DIR", "export again, nothing changed",
             "export again, one run grew")
    got: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory(prefix="pimm-dataset-bench-") as scratch:
        tree = Path(scratch) / "tree"
        shutil.copytree(source, tree, symlinks=True)  # a private copy: one of its runs grows
        grown = next(p for p in sorted(tree.rglob("events.out.tfevents.*")) if p.is_file())
        for i in range(repeat):
            out = Path(scratch) / f"ds{i}"
            got[names[0]].append(timed([py, "-m", "pimm_inspect", "ls", str(tree)], env)[:2])
            export = [py, "-m", "pimm_inspect", "export", str(tree), "--format", "parquet", "-o", str(out)]
            got[names[1]].append(timed(export, env)[:2])
            got[names[2]].append(timed(export, env)[:2])
            grow(grown, 10_000 + i)
            got[names[3]].append(timed(export, env)[:2])
        files = sum(1 for _ in (Path(scratch) / "ds0").glob("*/run=*/part-0.parquet"))
        size = sum(p.stat().st_size for p in (Path(scratch) / "ds0").rglob("*") if p.is_file())
    print(f"tree: {runs} runs copied from fixtures/runs; dataset {files} files, {size / 1e6:.1f} MB", file=sys.stderr)
    return [(f"{runs:,}-run tree: {name}", _median(got[name])) for name in names]


def bench_big(repeat: int) -> list[tuple[str, tuple[float, float]]]:
    """One 1M-point run: show --json vs the single-file export vs the dataset export."""
    run = one_m_run()
    py = sys.executable
    env = dict(os.environ, PYTHONPATH=str(REPO), PIMM_INSPECT_CACHE_DIR="off")
    names = ("show --json (reference: loads the run)", "export -o FILE.parquet (pandas)", "export -o DIR (dataset)")
    got: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory(prefix="pimm-dataset-bench-") as scratch:
        for i in range(repeat):
            got[names[0]].append(timed([py, "-m", "pimm_inspect", "show", "--json", str(run)], env)[:2])
            single = [py, "-m", "pimm_inspect", "export", str(run), "--format", "parquet",
                      "-o", str(Path(scratch) / f"one{i}.parquet")]
            got[names[1]].append(timed(single, env)[:2])
            dataset = [py, "-m", "pimm_inspect", "export", str(run), "--format", "parquet",
                       "-o", str(Path(scratch) / f"ds{i}")]
            got[names[2]].append(timed(dataset, env)[:2])
    return [(f"1M-point run: {name}", _median(got[name])) for name in names]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-tree", action="store_true")
    parser.add_argument("--skip-big", action="store_true")
    add_option(parser)
    args = parser.parse_args()
    rows = []
    if not args.skip_tree:
        rows += bench_tree(args.runs, args.repeat)
    if not args.skip_big:
        rows += bench_big(args.repeat)
    print(f"\n| command (whole process, cache off, median of {args.repeat}) | wall s | CPU s | CPU x reference |")
    print("|---|---|---|---|")
    reference: tuple[str, float, float] | None = None
    for name, (wall, cpu) in rows:
        if "reference" in name:
            reference = (name.split(": ", 1)[1].split(" (")[0], wall, cpu)
            print(f"| {name} | {wall:.2f} | {cpu:.2f} | 1.00 |")
            continue
        ratio = f"{cpu / reference[2]:.2f}" if reference else "-"
        print(f"| {name} | {wall:.2f} | {cpu:.2f} | {ratio} |")
    save("export", "Parquet dataset export", figures(rows), "python bench/bench_dataset.py " + " ".join(sys.argv[1:]),
         args.results_dir)
    return 0


def figures(rows: list[tuple[str, tuple[float, float]]]) -> list[Figure]:
    """The README rows: each export against the reference row before it (``ls`` of the tree, ``show --json`` of the
    1M-point run: commands that load the same runs). The issue sets no time target for the export."""
    reference: tuple[str, float, float] | None = None
    out = []
    for name, (wall, cpu) in rows:
        if "reference" in name:
            reference = (name.split(": ", 1)[1].split(" (")[0], wall, cpu)
            continue
        out.append(Figure(name, wall, cpu, reference[0] if reference else None, reference[1] if reference else None,
                          reference[2] if reference else None, what="whole process, cache off"))
    return out


if __name__ == "__main__":
    sys.exit(main())
