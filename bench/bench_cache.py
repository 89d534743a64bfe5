"""Benchmark: the persistent cache on a 1M-point run (show --json) and a 1,000-run tree (ls).

Usage: python bench/bench_cache.py [--runs 1000] [--repeat 5] [--skip-show] [--skip-ls]

Inputs are generated into bench/_data/ once: the 1M-scalar tensorboardX event file of
bench_tb_events.py, and a tree of ``--runs`` runs copied round-robin from fixtures/runs (each copy
under its own name, so every run is read on its own). Every figure is a fresh whole process, the
median of ``--repeat``, interleaved: no cache (PIMM_INSPECT_CACHE_DIR=off), cold (an empty cache
directory each time, the writes included) and warm (the cache the cold run left).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

from bench_wandb import timed  # noqa: E402  (same timing helper: wall and child CPU)


def make_tree(directory: Path, runs: int) -> Path:
    """``runs`` copies of the fixture runs (round-robin), once."""
    if directory.is_dir() and len(list(directory.iterdir())) == runs:
        return directory
    partial = directory.with_name(directory.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    import pimm_inspect

    fixtures = pimm_inspect.discover(REPO / "fixtures" / "runs")
    for i in range(runs):
        src = fixtures[i % len(fixtures)]
        shutil.copytree(src, partial / f"run_{i:04d}_{src.name}", symlinks=True)
    shutil.rmtree(directory, ignore_errors=True)
    partial.rename(directory)
    return directory


def one_m_run() -> Path:
    """The folder of bench_tb_events.py's 1M-point event file (generated once)."""
    directory = HERE / "_data" / "tb_1000000x20"
    if not any(directory.glob("events.out.tfevents.*")):
        from bench_tb_events import generate

        print("generating 1M events (tensorboardX) ...", file=sys.stderr)
        generate(directory, 1_000_000, 20)
    return directory


def measure(argv: list[str], repeat: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) for no cache, cold and warm."""
    py_env = dict(os.environ, PYTHONPATH=str(REPO))
    got: dict[str, list[tuple[float, float]]] = {"no cache": [], "cold": [], "warm": []}
    outputs = set()
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="pimm-cache-bench-") as folder:
            for name, setting in (("no cache", "off"), ("cold", folder), ("warm", folder)):
                wall, cpu, out = timed(argv, dict(py_env, PIMM_INSPECT_CACHE_DIR=setting))
                got[name].append((wall, cpu))
                outputs.add(out)
    if len(outputs) != 1:
        raise SystemExit(f"{argv[3:5]}: output differs with and without the cache")
    return {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in got.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-show", action="store_true")
    parser.add_argument("--skip-ls", action="store_true")
    args = parser.parse_args()
    py = sys.executable
    rows = []
    if not args.skip_show:
        run = one_m_run()
        rows.append(("show --json, 1M points", measure([py, "-m", "pimm_inspect", "show", "--json", str(run)],
                                                      args.repeat)))
    if not args.skip_ls:
        tree = make_tree(HERE / "_data" / f"tree_{args.runs}", args.runs)
        rows.append((f"ls, {args.runs:,}-run tree", measure([py, "-m", "pimm_inspect", "ls", str(tree)], args.repeat)))
    print(f"\n| command (whole process, median of {args.repeat}) | no cache wall / CPU s | cold wall / CPU s "
          "| warm wall / CPU s | warm CPU x no cache |")
    print("|---|---|---|---|---|")
    for name, m in rows:
        print(f"| {name} | {m['no cache'][0]:.2f} / {m['no cache'][1]:.2f} | {m['cold'][0]:.2f} / {m['cold'][1]:.2f} "
              f"| {m['warm'][0]:.2f} / {m['warm'][1]:.2f} | {m['warm'][1] / m['no cache'][1]:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
