"""Benchmark: the persistent cache on a 1,000-run tree (ls) and a 1M-point run (show --json).

Usage: python bench/bench_cache.py [--runs 1000] [--repeat 5] [--skip-show] [--skip-ls] [--baseline DIR]
                                   [--no-pyc] [--train-log-mb 1024 | --train-log PATH] [--log-repeat 3]

Inputs are generated into bench/_data/ once: a tree of ``--runs`` runs copied round-robin from fixtures/runs (each
copy under its own name, so every run is read on its own), and the 1M-scalar tensorboardX event file of
bench_tb_events.py. Every figure is a fresh whole process, the median of ``--repeat``, interleaved within each
repeat: no cache (PIMM_INSPECT_CACHE_DIR=off), cold (an empty cache directory, the writes included; ``ls`` with its
worker pool and with PIMM_INSPECT_JOBS=1), warm (what the cold run left), and for ``ls`` warm after one run of the
tree changed (its train.log grew: that run is loaded again, the others come from their rows). ``--baseline DIR``
runs the same commands with the package in DIR (another checkout, e.g. main) in the same repeats, side by side.

The train.log rows (issue 23; ``--train-log-mb 0`` skips them): ``show --json`` of a run holding one pimm train.log of
``--train-log-mb`` (bench_train_log.py's generator, written once into bench/_data/; ``--train-log PATH`` uses an
existing log through a hard link) with the cache off, cold (an empty cache directory: the default a user gets on the
first open) and warm, interleaved, ``--log-repeat`` times (with ``--baseline``, the baseline's three too in each
repeat, printed beside); each with wall and CPU seconds and its own peak RSS (``VmHWM`` written at exit, in MB of
10^6 bytes; its largest child process's noted), plus the size of the cache entry against the log's. Targets: cold
<= 1.15x the time and the memory of the cache off; warm <= 0.5 s and <= 300 MB; the entry <= 25% of the log.

Children run as ``python -P -m pimm_inspect`` (the working directory, this checkout, is not put on sys.path,
so PYTHONPATH decides which code runs). CPU is the child's user + system time, its worker processes included;
wall time is inflated by whatever else the machine runs (the load average is printed). Modules are byte-compiled
once into a temporary PYTHONPYCACHEPREFIX, as an installed package is (``--no-pyc`` keeps
PYTHONDONTWRITEBYTECODE as the environment sets it). The script fails if
an output differs between settings or from the baseline's. The rows of a part skipped (``--skip-ls``,
``--skip-show``, ``--train-log-mb 0``) are kept from the previous results file, each noting the commit and time it
was measured at.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
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
LOG_COLD_RATIO = 1.15
"""Issue 23: the first open with the default cache at most this much slower and heavier than with the cache off."""
LOG_WARM_S, LOG_WARM_MB, LOG_ENTRY_FRACTION = 0.5, 300.0, 0.25
PEAK_WRAPPER = (
    "import atexit, os, resource, runpy, sys\n"
    "def _peak():\n"
    "    with open('/proc/self/status') as status, open(os.environ['BENCH_PEAK_FILE'], 'w') as out:\n"
    "        out.write(next(line.split()[1] for line in status if line.startswith('VmHWM:')))\n"
    "        out.write(' %d' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    "atexit.register(_peak)\n"
    "sys.argv = ['pimm_inspect'] + sys.argv[1:]\n"
    "runpy.run_module('pimm_inspect', run_name='__main__', alter_sys=True)\n"
)
"""``python -m pimm_inspect ARGS`` that writes its own peak RSS (KiB) at exit: ``ru_maxrss`` of a child would count
what it shared with this process before ``exec``. Then that of its largest child process (the train.log reader's
scanning child, mostly pages shared with it; 0 without one)."""


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


def bench_train_log_show(bench: Bench, log: Path, repeat: int) -> dict[str, list[tuple[float, ...]]]:
    """(wall s, CPU s, peak MB, largest child's peak MB) per "<code>: <setting>" of ``show --json`` on a run holding
    ``log`` (this checkout and the baseline's, interleaved in each repeat); "<code>: entry" holds the entry's size.
    MB are 10^6 bytes (``VmHWM`` is in KiB)."""
    run = HERE / "_data" / f"run_show_{log.stem}"
    if not (run / "train.log").exists():
        run.mkdir(parents=True, exist_ok=True)
        os.link(log, run / "train.log")
    samples: dict[str, list[tuple[float, ...]]] = {}
    outputs = set()
    with tempfile.TemporaryDirectory(prefix="pimm-bench-peak-") as scratch:
        peak_file = Path(scratch) / "peak"

        def once(name: str, setting: str, cache: str) -> None:
            env = bench.env(bench.versions[name], PIMM_INSPECT_CACHE_DIR=cache, BENCH_PEAK_FILE=str(peak_file))
            wall, cpu, out = timed([sys.executable, "-P", "-c", PEAK_WRAPPER, "show", "--json", str(run)], env)
            own, child = (int(x) * 1024 / 1e6 for x in (peak_file.read_text().split() + ["0"])[:2])
            samples.setdefault(f"{name}: {setting}", []).append((wall, cpu, own, child))
            outputs.add(out)

        for _ in range(repeat):
            for name in bench.versions:
                folder = Path(scratch) / "cache"
                shutil.rmtree(folder, ignore_errors=True)
                once(name, "no cache", "off")
                once(name, "cold", str(folder))
                once(name, "warm", str(folder))
                size = sum(p.stat().st_size for p in folder.glob("*.pimc"))
                samples.setdefault(f"{name}: entry", []).append((size / 1e6, size / log.stat().st_size, 0.0, 0.0))
    if len(outputs) != 1:
        print("train.log show: OUTPUT DIFFERS between cache settings", file=sys.stderr)
        samples["differs"] = []
    return samples


def train_log_figures(samples: dict[str, list[tuple[float, ...]]], log: Path, name: str = "this") -> list[Figure]:
    """The issue-23 rows of one code version: cold and warm ``show --json`` against the cache off, and the entry's
    size."""
    def med(setting: str, i: int) -> float:
        return statistics.median(x[i] for x in samples[f"{name}: {setting}"])

    size_gb = log.stat().st_size / 1e9
    what = f"show --json, {size_gb:.2f} GB pimm train.log"
    off_s, off_cpu, off_mb = med("no cache", 0), med("no cache", 1), med("no cache", 2)
    cold_s, cold_cpu, cold_mb = med("cold", 0), med("cold", 1), med("cold", 2)
    warm_s, warm_cpu, warm_mb = med("warm", 0), med("warm", 1), med("warm", 2)
    entry_mb, fraction = med("entry", 0), med("entry", 1)
    rate = log.stat().st_size / 1e6 / cold_s
    return [
        Figure(f"{what}, cold (empty cache, the default)", cold_s, cold_cpu, "no cache", off_s, off_cpu,
               f"<= {LOG_COLD_RATIO}x time and peak RSS of no cache", cold_s <= LOG_COLD_RATIO * off_s
               and cold_mb <= LOG_COLD_RATIO * off_mb, cold_cpu <= LOG_COLD_RATIO * off_cpu
               and cold_mb <= LOG_COLD_RATIO * off_mb,
               note=f"peak RSS {cold_mb:.0f} MB vs {off_mb:.0f} MB ({cold_mb / off_mb:.2f}x); {rate:.0f} MB/s "
                    "(stretch: >= 200 MB/s, <= 500 MB)" + (f"; its largest child process {med('cold', 3):.0f} MB, "
                                                           "mostly pages shared with it" if med("cold", 3) else "")),
        Figure(f"{what}, warm", warm_s, warm_cpu, "no cache", off_s, off_cpu,
               f"<= {LOG_WARM_S:g} s, <= {LOG_WARM_MB:.0f} MB", warm_s <= LOG_WARM_S and warm_mb <= LOG_WARM_MB,
               warm_cpu <= LOG_WARM_S and warm_mb <= LOG_WARM_MB, note=f"peak RSS {warm_mb:.0f} MB"),
        Figure(f"{what}, cache entry size", cold_s, cold_cpu, target=f"<= {LOG_ENTRY_FRACTION:.0%} of the log",
               met_wall=fraction <= LOG_ENTRY_FRACTION, met_cpu=fraction <= LOG_ENTRY_FRACTION, what="cold run",
               note=f"entry {entry_mb:.1f} MB = {fraction:.1%} of the log, lossless"),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-show", action="store_true")
    parser.add_argument("--skip-ls", action="store_true")
    parser.add_argument("--baseline", type=Path, help="another checkout whose package is timed side by side")
    parser.add_argument("--no-pyc", action="store_true", help="keep the environment's PYTHONDONTWRITEBYTECODE")
    parser.add_argument("--train-log-mb", type=int, default=1024, help="size of the generated train.log (0: skip)")
    parser.add_argument("--train-log", type=Path, help="an existing train.log instead of generating one")
    parser.add_argument("--log-repeat", type=int, default=3)
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
    log_rows: list[Figure] = []
    failed = False
    if args.train_log is not None or args.train_log_mb > 0:
        from bench_train_log import generate

        log = args.train_log.resolve() if args.train_log is not None else generate(args.train_log_mb)
        log_samples = bench_train_log_show(bench, log, args.log_repeat)
        failed = "differs" in log_samples
        log_rows = train_log_figures(log_samples, log)
        for name in versions:  # the baseline's rows are printed only
            for row in log_rows if name == "this" else train_log_figures(log_samples, log, name):
                print(f"{name}: {row.row}: {row.ours_s:.2f} s (CPU {row.ours_cpu_s:.2f}) vs {row.reference or '-'} "
                      f"{row.ref_s or 0:.2f} s; {row.note}; target {row.target}: "
                      f"{'met' if row.met_wall else 'missed'} (wall) / {'met' if row.met_cpu else 'missed'} (CPU)")
    load_after = os.getloadavg()
    print(f"\nload average (1/5/15 min) before: {load_before[0]:.1f} / {load_before[1]:.1f} / {load_before[2]:.1f}, "
          f"after: {load_after[0]:.1f} / {load_after[1]:.1f} / {load_after[2]:.1f}; {os.cpu_count()} processors; "
          f"median of {args.repeat} fresh processes; modules {'not ' if args.no_pyc else ''}byte-compiled")
    print("\n| command | code: cache | wall s | CPU s | wall x no cache | CPU x no cache | target (wall) |")
    print("|---|---|---|---|---|---|---|")
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
    measured = figures(this, args.runs) + log_rows
    skipped = {"ls": args.skip_ls, "show": args.skip_show, "log": not log_rows}
    save("cache", "Persistent cache", measured + kept_rows(args.results_dir, skipped),
         "python bench/bench_cache.py " + " ".join(
             "PATH" if prev in ("--train-log", "--results-dir") else word  # no machine path in the committed figures
             for prev, word in zip(["", *sys.argv[1:]], sys.argv[1:])), args.results_dir)
    return 1 if failed else 0


def _part(row: str) -> str:
    """Which part of this benchmark a saved row belongs to: ``ls``, ``show`` (1M points) or ``log`` (train.log)."""
    return "ls" if row.startswith("ls,") else "log" if "train.log" in row else "show"


def kept_rows(directory: Path | None, skipped: dict[str, bool]) -> list[Figure]:
    """The rows of the parts this run skipped, from the previous results file, each noting the commit and time it
    was measured at (so a run of one part does not drop the others from the README table)."""
    from _results import results_dir

    path = results_dir(directory) / "cache.json"
    try:
        previous = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    names = {f.name for f in dataclasses.fields(Figure)}
    kept = []
    for row in previous.get("figures", []):
        if not skipped.get(_part(str(row.get("row", "")))):
            continue
        figure = Figure(**{k: v for k, v in row.items() if k in names})
        stamp = f"kept from {previous.get('commit', '?')}, {previous.get('measured_at', '?')}"
        if "kept from " not in figure.note:  # kept once already: the stamp of its measurement stays
            figure.note = f"{figure.note}; {stamp}" if figure.note else stamp
        kept.append(figure)
    return kept


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
