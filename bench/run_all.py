"""Run every benchmark of issue 10 in turn, each saving its figures, then regenerate the table in bench/README.md
(and README.md's headline figures).

    python bench/run_all.py                    # the full set into bench/results/, then bench/README.md's table
    python bench/run_all.py --only cache,wandb # some of them
    python bench/run_all.py --smoke            # tiny inputs into a temporary folder; prints the table, touches
                                               # neither bench/results/ nor the READMEs
    python bench/run_all.py --dry-run          # print the commands only

Each benchmark runs as its own process (``python bench/bench_*.py ... --results-dir DIR``) with the arguments
below: medians of several fresh processes, each figure side by side with its reference in the same run. A
benchmark exits 1 when a target is missed or readers disagree; that is reported and the others still run. The
run fails (exit 1) only when a benchmark wrote no figures.

Children byte-compile the package once into ``bench/_data/pycache`` (``PYTHONPYCACHEPREFIX``, with
``PYTHONDONTWRITEBYTECODE`` unset), as an installed package is compiled, so no fresh process pays for compiling
``pimm_inspect`` while the references (installed packages) do not; the packages the references import are
compiled there too (one untimed child importing them) before the first timed process. Inputs are generated into bench/_data/ once
(the full set's first run spends most of its time writing them: event files, a 1 GB log, a wandb run, two
checkpoints with torch); needs the fixtures and bench extras (tensorboardX, torch, wandb, pyarrow) and tmux.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

# bench name (the results file and report.py's order) -> script, full-run arguments, smoke-run arguments.
# Repeats fit the whole set in ~25 min on 2 idle cores: the slow references (EventAccumulator, 30-60 s per file;
# the per-line regex on the 1 GB log, ~80 s) run once or twice; train_log's baseline is the revision before the
# issue-10 analysis work (1ffe7a5), so its show/check rows are a real before/after.
BENCHES: dict[str, tuple[str, list[str], list[str]]] = {
    "tb_events": ("bench_tb_events.py", ["--repeat", "3", "--repeat-reference", "1"],
                  ["--events", "2000", "--repeat", "1", "--repeat-reference", "1"]),
    "train_log": ("bench_train_log.py", ["--repeat", "2", "--baseline", "1ffe7a5"],
                  ["--size-mb", "2", "--repeat", "1", "--append-mb", "0.25"]),
    "wandb": ("bench_wandb.py", ["--repeat", "3"], ["--rows", "300", "--repeat", "1"]),
    "cache": ("bench_cache.py", ["--repeat", "3"], ["--runs", "4", "--repeat", "1", "--skip-show"]),
    "tui_first_screen": ("bench_tui_first_screen.py", ["--repeat", "2"],
                         ["--events", "2000", "--runs", "4", "--log-mb", "2", "--repeat", "1", "--timeout", "30",
                          "--all-timeout", "60"]),
    "checkpoint": ("bench_checkpoint.py", ["--repeat", "3"], ["--sizes-mb", "3", "--repeat", "1"]),
    "export": ("bench_dataset.py", ["--repeat", "2"], ["--runs", "4", "--repeat", "1", "--skip-big"]),
    "report": ("bench_report.py", ["--repeat", "3"], ["--runs", "4", "--repeat", "1", "--skip-big"]),
    "runs_table": ("bench_runs_table.py", ["--repeat", "3", "--cold"], ["--copies", "20", "--repeat", "1"]),
}


def commands(names: list[str], smoke: bool, results: Path) -> list[tuple[str, list[str]]]:
    """(bench name, argv) of each benchmark to run, writing into ``results`` (named only when not the default, so
    the command each results file records, and the README quotes, is the one to type)."""
    where = [] if results == (HERE / "results").resolve() else ["--results-dir", str(results)]
    out = []
    for name in names:
        script, full, small = BENCHES[name]
        out.append((name, [sys.executable, str(HERE / script), *(small if smoke else full), *where]))
    return out


def child_env(pycache: Path) -> dict[str, str]:
    """The benchmarks' environment: this checkout's package, byte-compiled once under ``pycache``."""
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONPYCACHEPREFIX=str(pycache))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


WARM_UP = """
import importlib
for name in ("numpy", "pandas", "pyarrow.parquet", "google.protobuf", "crc32c", "click", "rich", "textual",
             "tensorboard.backend.event_processing.event_accumulator", "tensorboard.util.tensor_util",
             "wandb", "wandb.proto.wandb_internal_pb2", "tensorboardX", "torch", "pimm_inspect.cli", "pimm_inspect.tui"):
    try:
        importlib.import_module(name)
    except Exception:
        pass
"""
"""Imports a child makes once, untimed: with a pycache prefix Python looks for every module's byte code there, so
the installed packages the references use are compiled into it too before the first timed process."""


def compile_package(pycache: Path, env: dict[str, str]) -> None:
    """Byte-compile pimm_inspect, the bench helpers and what the references import into ``pycache``, untimed."""
    previous = sys.pycache_prefix
    sys.pycache_prefix = str(pycache)
    try:
        for folder in (REPO / "pimm_inspect", HERE, REPO / "tests" / "train_log_reference"):
            compileall.compile_dir(str(folder), quiet=1)
    finally:
        sys.pycache_prefix = previous
    subprocess.run([sys.executable, "-c", WARM_UP], cwd=tempfile.gettempdir(), env=env, check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", default=",".join(BENCHES), help="comma-separated: " + ", ".join(BENCHES))
    parser.add_argument("--smoke", action="store_true", help="tiny inputs, results in a temporary folder")
    parser.add_argument("--results-dir", type=Path, default=None,
                        help="where the figures go (default: bench/results/; with --smoke a temporary folder)")
    parser.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n]
    unknown = [n for n in names if n not in BENCHES]
    if unknown:
        parser.error(f"unknown benchmark(s) {unknown}; choose from {', '.join(BENCHES)}")
    if args.results_dir is not None:
        results = args.results_dir.resolve()
    elif args.smoke:
        results = Path(tempfile.gettempdir()) / "pimm-bench-smoke" if args.dry_run else Path(
            tempfile.mkdtemp(prefix="pimm-bench-smoke-"))
    else:
        results = (HERE / "results").resolve()
    readme = results == (HERE / "results").resolve()
    if args.smoke and readme:
        parser.error("a smoke run must not write into bench/results/")
    todo = commands(names, args.smoke, results)
    if args.dry_run:
        for _name, argv in todo:
            print(shlex.join(argv))
        return 0
    pycache = HERE / "_data" / "pycache"
    pycache.mkdir(parents=True, exist_ok=True)
    env = child_env(pycache)
    compile_package(pycache, env)
    started_all = time.perf_counter()
    summary = []
    for name, argv in todo:
        print(f"\n=== {name}: {shlex.join(argv[1:])} (load average {os.getloadavg()[0]:.1f})", flush=True)
        started, wall_clock = time.perf_counter(), time.time()
        code = subprocess.run(argv, cwd=REPO, env=env, check=False).returncode
        written = results / f"{name}.json"
        fresh = written.exists() and written.stat().st_mtime >= wall_clock
        summary.append((name, code, fresh, time.perf_counter() - started))
    print(f"\n=== done in {(time.perf_counter() - started_all) / 60:.1f} min; results in {results}")
    for name, code, fresh, seconds in summary:
        state = "figures written" if fresh else "NO FIGURES WRITTEN"
        verdict = "ok" if code == 0 else f"exit {code} (a target missed or a disagreement: see its output)"
        print(f"  {name}: {state}, {verdict}, {seconds / 60:.1f} min")
    report = [sys.executable, str(HERE / "report.py"), "--results-dir", str(results)]
    subprocess.run(report if readme else [*report, "--print"], cwd=REPO, env=env, check=False)
    if readme:
        print("bench/README.md's table and README.md's headline figures regenerated from bench/results/")
    return 0 if all(fresh for _n, _c, fresh, _s in summary) else 1


if __name__ == "__main__":
    sys.exit(main())
