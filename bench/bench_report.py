"""Benchmark: ``pimm-inspect report`` of a 1M-point run and of a 1,000-run tree.

Usage: python bench/bench_report.py [--runs 1000] [--repeat 3] [--skip-tree] [--skip-big]

Inputs are generated into bench/_data/ once (the functions of bench_cache.py): the 1M-scalar tensorboardX event file
of bench_tb_events.py (20 tags of 50,000 points), and a tree of ``--runs`` runs copied round-robin from
fixtures/runs. Every figure is a fresh whole process, the median of ``--repeat``, side by side with its reference
(``show --json`` of the same input: it loads the same runs, so the difference is the report's own work):

- 1M-point run, persistent cache off (every point decoded): ``report RUN -o FILE.html`` [<= 3 s, file <= 2 MB]
  and ``-o FILE.md``;
- tree, warm persistent cache (one untimed run fills it first): ``report ROOT -o FILE.html --tag train/loss``
  [<= 10 s] and the Markdown one.
"""

from __future__ import annotations

import argparse
import os
import statistics
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

BIG_TARGET_S = 3.0
BIG_TARGET_BYTES = 2_000_000
TREE_TARGET_S = 10.0


def _median(samples: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(w for w, _ in samples), statistics.median(c for _, c in samples)


def _rows(reference: list[str], cases: dict[str, list[str]], env: dict[str, str], repeat: int,
          outputs: dict[str, Path]) -> tuple[tuple[float, float], dict[str, tuple[float, float, int]]]:
    """The reference's median and each case's median with the size of the file it wrote."""
    got: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    ref: list[tuple[float, float]] = []
    for _ in range(repeat):
        ref.append(timed(reference, env)[:2])
        for name, argv in cases.items():
            got[name].append(timed(argv, env)[:2])
    return _median(ref), {name: (*_median(samples), outputs[name].stat().st_size) for name, samples in got.items()}


def bench_big(repeat: int, scratch: Path) -> list[Figure]:
    run = one_m_run()
    py = sys.executable
    env = dict(os.environ, PYTHONPATH=str(REPO), PIMM_INSPECT_CACHE_DIR="off")
    outputs = {"html": scratch / "big.html", "md": scratch / "big.md"}
    cases = {kind: [py, "-m", "pimm_inspect", "report", str(run), "-o", str(path)] for kind, path in outputs.items()}
    (ref_wall, ref_cpu), got = _rows([py, "-m", "pimm_inspect", "show", "--json", str(run)], cases, env, repeat, outputs)
    figures = []
    for kind, (wall, cpu, size) in got.items():
        target = f"<= {BIG_TARGET_S:g} s, <= 2 MB" if kind == "html" else ""
        met_size = size <= BIG_TARGET_BYTES
        figures.append(Figure(f"1M-point run (20 tags x 50,000): report -o FILE.{kind}", wall, cpu, "show --json",
                              ref_wall, ref_cpu, target, (wall <= BIG_TARGET_S and met_size) if target else None,
                              (cpu <= BIG_TARGET_S and met_size) if target else None, "whole process, cache off",
                              f"file {size / 1e6:.2f} MB"))
    return figures


def bench_tree(runs: int, repeat: int, scratch: Path) -> list[Figure]:
    tree = make_tree(HERE / "_data" / f"tree_{runs}", runs)
    py = sys.executable
    cache = scratch / "cache"
    env = dict(os.environ, PYTHONPATH=str(REPO), PIMM_INSPECT_CACHE_DIR=str(cache))
    outputs = {"html": scratch / "tree.html", "md": scratch / "tree.md"}
    cases = {kind: [py, "-m", "pimm_inspect", "report", str(tree), "-o", str(path), "--tag", "train/loss"]
             for kind, path in outputs.items()}
    timed(cases["html"], env)  # fills the persistent cache: the figures are warm
    (ref_wall, ref_cpu), got = _rows([py, "-m", "pimm_inspect", "show", "--json", str(tree)], cases, env, repeat,
                                     outputs)
    figures = []
    for kind, (wall, cpu, size) in got.items():
        target = f"<= {TREE_TARGET_S:g} s warm" if kind == "html" else ""
        figures.append(Figure(f"{runs:,}-run tree: report -o FILE.{kind} --tag train/loss", wall, cpu, "show --json",
                              ref_wall, ref_cpu, target, wall <= TREE_TARGET_S if target else None,
                              cpu <= TREE_TARGET_S if target else None, "whole process, cache warm",
                              f"file {size / 1e6:.1f} MB"))
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-tree", action="store_true")
    parser.add_argument("--skip-big", action="store_true")
    add_option(parser)
    args = parser.parse_args()
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="pimm-report-bench-") as scratch:
        if not args.skip_big:
            figures += bench_big(args.repeat, Path(scratch))
        if not args.skip_tree:
            figures += bench_tree(args.runs, args.repeat, Path(scratch))
    print(f"\n| command (whole process, median of {args.repeat}) | wall s | CPU s | reference wall / CPU s | target | "
          "met (wall / CPU) | note |")
    print("|---|---|---|---|---|---|---|")
    for f in figures:
        print(f"| {f.row} ({f.what}) | {f.ours_s:.2f} | {f.ours_cpu_s:.2f} | {f.ref_s:.2f} / {f.ref_cpu_s:.2f} | "
              f"{f.target or '-'} | {f.met_wall} / {f.met_cpu} | {f.note} |")
    save("report", "Audit report", figures, "python bench/bench_report.py " + " ".join(sys.argv[1:]), args.results_dir)
    missed = [f.row for f in figures if f.target and not (f.met_wall or f.met_cpu)]
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
