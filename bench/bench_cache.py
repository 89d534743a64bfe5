"""Benchmark: the persistent cache on a 1,000-run tree (ls) and a 1M-point run (show --json).

Usage: python bench/bench_cache.py [--runs 1000] [--repeat 5] [--skip-show] [--skip-ls] [--baseline DIR]
                                   [--no-pyc]

Inputs are generated into bench/_data/ once: a tree of ``--runs`` runs copied round-robin from fixtures/runs (each
copy under its own name, so every run is read on its own), and the 1M-scalar tensorboardX event file of
bench_tb_events.py. Every figure is a fresh whole process, the median of ``--repeat``, interleaved within each
repeat: no cache (PIMM_INSPECT_CACHE_DIR=off), cold (an empty cache directory, the writes included; ``ls`` with its
worker pool and with PIMM_INSPECT_JOBS=1), warm (what the cold run left), and for ``ls`` warm after one run of the
tree changed (its train.log grew: that run is loaded again, the others come from their rows). ``--baseline DIR``
runs the same commands with the package in DIR (another checkout, e.g. main) in the same repeats, side by side.

Children run as ``python -P -m pimm_inspect`` (the working directory, this checkout, is not put on sys.path,
so PYTHONPATH decides which code runs). CPU is the child's user + system time, its worker processes included;
wall time is inflated by whatever else the machine runs (the load average is printed). Modules are byte-compiled
once into a temporary PYTHONPYCACHEPREFIX, as an installed package is (``--no-pyc`` keeps
PYTHONDONTWRITEBYTECODE as the environment sets it). The script fails if
an output differs between settings or from the baseline's.
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
from _results import Figure, add_option, save  # noqa: E402

TARGETS = {"ls cold": 8.0, "ls warm": 2.0, "show warm": 0.6}
"""Issue 10's targets (wall seconds, whole process)."""


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


def _grown_run(tree: Path) -> Path:
    """The tree's first pimm run with a train.log, whose log the "warm, one run changed" figure appends to."""
    return next(p.parent for p in sorted(tree.glob("*/train.log")))


class Bench:
    """Interleaved fresh-process timings of one command under each cache setting, per code version."""

    def __init__(self, versions: dict[str, Path], pyc: bool) -> None:
        self.versions = versions
        self.samples: dict[tuple[str, str], list[tuple[float, float]]] = {}
        self.outputs: dict[str, set[str]] = {}
        self.pyc_dir = tempfile.mkdtemp(prefix="pimm-bench-pyc-") if pyc else None

    def env(self, code: Path, **extra: str) -> dict[str, str]:
        env = dict(os.environ, PYTHONPATH=str(code), **extra)
        if self.pyc_dir is not None:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(Path(self.pyc_dir) / code.name)
        return env

    def run(self, label: str, setting: str, argv: list[str], code_name: str, **extra: str) -> None:
        wall, cpu, out = timed([sys.executable, "-P", "-m", "pimm_inspect", *argv],
                               self.env(self.versions[code_name], **extra))
        self.samples.setdefault((label, f"{code_name}: {setting}"), []).append((wall, cpu))
        self.outputs.setdefault(label, set()).add(out)

    def median(self, label: str, column: str) -> tuple[float, float] | None:
        got = self.samples.get((label, column))
        if not got:
            return None
        return statistics.median(w for w, _ in got), statistics.median(c for _, c in got)


def bench_ls(bench: Bench, tree: Path, repeat: int) -> None:
    grown = _grown_run(tree) / "train.log"
    original = grown.read_bytes()
    argv = ["ls", str(tree)]
    try:
        for _ in range(repeat):
            for name in bench.versions:
                with tempfile.TemporaryDirectory(prefix="pimm-cache-bench-") as folder:
                    bench.run("ls", "no cache", argv, name, PIMM_INSPECT_CACHE_DIR="off")
                    bench.run("ls", "cold, 1 process", argv, name, PIMM_INSPECT_CACHE_DIR=folder,
                              PIMM_INSPECT_JOBS="1")
                    shutil.rmtree(folder)
                    bench.run("ls", "cold", argv, name, PIMM_INSPECT_CACHE_DIR=folder)
                    bench.run("ls", "warm", argv, name, PIMM_INSPECT_CACHE_DIR=folder)
                    with open(grown, "ab") as fh:  # one run of the tree grew: its row must be rebuilt
                        fh.write(b"[2026-07-15 09:30:00,000 INFO misc.py line 1 4242] one more line\n")
                    wall, cpu, out = timed([sys.executable, "-P", "-m", "pimm_inspect", *argv],
                                           bench.env(bench.versions[name], PIMM_INSPECT_CACHE_DIR=folder))
                    bench.samples.setdefault(("ls", f"{name}: warm, 1 run changed"), []).append((wall, cpu))
                    grown.write_bytes(original)
    finally:
        grown.write_bytes(original)


def bench_show(bench: Bench, run: Path, repeat: int) -> None:
    argv = ["show", "--json", str(run)]
    for _ in range(repeat):
        for name in bench.versions:
            with tempfile.TemporaryDirectory(prefix="pimm-cache-bench-") as folder:
                bench.run("show", "no cache", argv, name, PIMM_INSPECT_CACHE_DIR="off")
                bench.run("show", "cold", argv, name, PIMM_INSPECT_CACHE_DIR=folder)
                bench.run("show", "warm", argv, name, PIMM_INSPECT_CACHE_DIR=folder)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-show", action="store_true")
    parser.add_argument("--skip-ls", action="store_true")
    parser.add_argument("--baseline", type=Path, help="another checkout whose package is timed side by side")
    parser.add_argument("--no-pyc", action="store_true", help="keep the environment's PYTHONDONTWRITEBYTECODE")
    add_option(parser)
    args = parser.parse_args()
    versions = {"this": REPO} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    bench = Bench(versions, pyc=not args.no_pyc)
    for name in versions:  # byte-compile every module once, untimed
        timed([sys.executable, "-P", "-m", "pimm_inspect", "check", "--fail-on", "never",
               str(REPO / "fixtures" / "runs")], bench.env(versions[name], PIMM_INSPECT_CACHE_DIR="off"))
    load_before = os.getloadavg()
    if not args.skip_ls:
        tree = make_tree(HERE / "_data" / f"tree_{args.runs}", args.runs)
        bench_ls(bench, tree, args.repeat)
    if not args.skip_show:
        run = one_m_run()
        bench_show(bench, run, args.repeat)
    load_after = os.getloadavg()
    print(f"\nload average (1/5/15 min) before: {load_before[0]:.1f} / {load_before[1]:.1f} / {load_before[2]:.1f}, "
          f"after: {load_after[0]:.1f} / {load_after[1]:.1f} / {load_after[2]:.1f}; {os.cpu_count()} processors; "
          f"median of {args.repeat} fresh processes; modules {'not ' if args.no_pyc else ''}byte-compiled")
    print("\n| command | code: cache | wall s | CPU s | wall x no cache | CPU x no cache | target (wall) |")
    print("|---|---|---|---|---|---|---|")
    failed = False
    for label, what in (("ls", f"ls, {args.runs:,}-run tree"), ("show", "show --json, 1M points")):
        for name in versions:
            reference = bench.median(label, f"{name}: no cache")
            for setting in ("no cache", "cold, 1 process", "cold", "warm", "warm, 1 run changed"):
                got = bench.median(label, f"{name}: {setting}")
                if got is None or reference is None:
                    continue
                target = TARGETS.get(f"{label} {setting}")
                verdict = "" if target is None else f"<= {target:g} s: {'met' if got[0] <= target else 'missed'}"
                print(f"| {what} | {name}: {setting} | {got[0]:.2f} | {got[1]:.2f} | {got[0] / reference[0]:.2f} "
                      f"| {got[1] / reference[1]:.2f} | {verdict} |")
        if len(bench.outputs.get(label, ())) > 1:
            print(f"{what}: OUTPUT DIFFERS between settings or code versions", file=sys.stderr)
            failed = True
    if bench.pyc_dir is not None:
        shutil.rmtree(bench.pyc_dir, ignore_errors=True)
    this = {}  # this code's medians by "<command> <setting>" (the baseline's stay in the printed table only)
    for label, column in bench.samples:
        got = bench.median(label, column)
        if column.startswith("this: ") and got is not None:
            this[f"{label} {column.removeprefix('this: ')}"] = got
    save("cache", "Persistent cache", figures(this, args.runs),
         "python bench/bench_cache.py " + " ".join(sys.argv[1:]), args.results_dir)
    return 1 if failed else 0


def figures(this: dict[str, tuple[float, float]], runs: int) -> list[Figure]:
    """The README rows from this code's medians (``"ls cold"``, ``"show warm"`` ... -> wall s, CPU s).

    Each cached setting against the same command with the cache off (the reference: every run decoded), with the
    issue's target where it sets one (``TARGETS``).
    """
    what = {"ls": f"ls, {runs:,}-run tree", "show": "show --json, 1M-point run"}
    out = []
    for key, (wall, cpu) in this.items():
        label, setting = key.split(" ", 1)
        reference = this.get(f"{label} no cache")
        if setting == "no cache" or reference is None:
            continue
        target = TARGETS.get(key)
        out.append(Figure(f"{what[label]}, {setting}", wall, cpu, "no cache", reference[0], reference[1],
                          "" if target is None else f"<= {target:g} s",
                          None if target is None else wall <= target, None if target is None else cpu <= target,
                          what="whole process"))
    return out


if __name__ == "__main__":
    sys.exit(main())
