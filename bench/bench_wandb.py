"""Benchmark: reading a 100k-row offline W&B transaction log, ours against decoding it record by record.

Usage: python bench/bench_wandb.py [--rows 100000] [--repeat 5] [--skip-wandb]

Generates one offline run with the installed ``wandb`` (WANDB_MODE=offline, 3 metrics per
``run.log``) into bench/_data/ once per size, then times in one run, as medians of
``--repeat`` fresh subprocesses each:

- ``python -m pimm_inspect show --json RUN`` (whole process, cache off),
- our reader alone (``read_wandb_run``) in a fresh process,
- the per-record reference: our framing, then ``Record.FromString`` on every record and the
  history items' ``value_json`` decoded with ``json.loads`` (what the reader did before),
- ``import wandb`` and wandb's own generated ``Record`` class on the same records (wandb 0.31 has
  no Python reader of ``.wandb`` files any more: wandb-core, in Go, reads them).

It exits 1 if the readers disagree on the number of history rows.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

METRICS = ("train/loss", "train/acc", "params/lr")


def _value(metric: int, row: int) -> float:
    """The value logged for metric ``metric`` at row ``row`` (exactly representable in JSON)."""
    return (metric + 1) / (row + 1)


def _worker(root: Path, rows: int) -> None:
    """Child process: one offline run with ``rows`` history rows of three metrics."""
    import wandb  # only the generator imports wandb

    settings = wandb.Settings(x_disable_stats=True, x_disable_meta=True, x_disable_machine_info=True,
                              disable_git=True, save_code=False, x_save_requirements=False, host="bench-host")
    run = wandb.init(project="pimm-bench", id=f"bench{rows}", name="bench", dir=str(root), settings=settings,
                     config={"lr": 0.001, "rows": rows})
    for i in range(rows):
        run.log({name: _value(m, i) for m, name in enumerate(METRICS)})
    run.finish()


def generate(directory: Path, rows: int) -> Path:
    """Write the run (once), returning its run folder ``.../wandb/offline-run-*``."""
    directory = directory.resolve()
    partial = directory.with_name(directory.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    home = partial / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env.update(HOME=str(home), WANDB_MODE="offline", WANDB_SILENT="true", WANDB_DIR=str(partial),
               WANDB_CONFIG_DIR=str(home / "config"), WANDB_CACHE_DIR=str(home / "cache"),
               WANDB_DATA_DIR=str(home / "data"), WANDB_DISABLE_GIT="true", WANDB_DISABLE_CODE="true")
    started = time.perf_counter()
    subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", str(partial), str(rows)],
                   cwd=partial, env=env, check=True)
    print(f"  generated {rows:,} rows in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(directory, ignore_errors=True)
    partial.rename(directory)
    return run_folder(directory)


def run_folder(directory: Path) -> Path:
    """The generated run folder under ``directory``."""
    return next((directory / "wandb").glob("offline-run-*"))


_OURS = """
import sys
from pathlib import Path
from pimm_inspect.sources.wandb.reader import read_wandb_run
r = read_wandb_run(Path(sys.argv[1]), ".")
print(len(r.history_steps))
"""

_PER_RECORD = """
import json, sys
from pathlib import Path
from pimm_inspect.sources.wandb._framing import FramingState, iter_records
from pimm_inspect.sources.wandb._proto import record_class
cls, _ = record_class()
rows = 0
with open(next(Path(sys.argv[1]).glob("run-*.wandb")), "rb") as fh:
    for _offset, payload in iter_records(fh, FramingState("bench")):
        rec = cls.FromString(payload)
        if rec.WhichOneof("record_type") == "history":
            row = {item.key or ".".join(item.nested_key): json.loads(item.value_json) for item in rec.history.item}
            rows += 1
print(rows)
"""

_WANDB = """
import json, sys
from pathlib import Path
import wandb
from wandb.proto import wandb_internal_pb2
from pimm_inspect.sources.wandb._framing import FramingState, iter_records
rows = 0
with open(next(Path(sys.argv[1]).glob("run-*.wandb")), "rb") as fh:
    for _offset, payload in iter_records(fh, FramingState("bench")):
        rec = wandb_internal_pb2.Record.FromString(payload)
        if rec.WhichOneof("record_type") == "history":
            row = {item.key or ".".join(item.nested_key): json.loads(item.value_json) for item in rec.history.item}
            rows += 1
print(rows)
"""


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the child, its stdout) for one fresh process."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=REPO, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{argv[:4]} failed ({done.returncode}): {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def main() -> int:
    """Generate if needed, time every reader (medians), print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-wandb", action="store_true", help="do not time wandb's own reader")
    args = parser.parse_args()
    directory = HERE / "_data" / f"wandb_{args.rows}"
    if (directory / "wandb").is_dir():
        folder = run_folder(directory)
    else:
        print(f"generating {args.rows:,} rows with wandb (offline) in {directory} ...", file=sys.stderr)
        folder = generate(directory, args.rows)
    log = next(folder.glob("run-*.wandb"))
    print(f"input: {log.relative_to(REPO)} ({log.stat().st_size / 1e6:.1f} MB)")
    env = dict(os.environ, PYTHONPATH=str(REPO), PIMM_INSPECT_CACHE_DIR="off")
    py = sys.executable
    cases = [("pimm-inspect show --json (whole process, no cache)", [py, "-m", "pimm_inspect", "show", "--json", str(folder)]),
             ("read_wandb_run (fresh process)", [py, "-c", _OURS, str(folder)]),
             ("per record: Record.FromString + json.loads (fresh process)", [py, "-c", _PER_RECORD, str(folder)])]
    if not args.skip_wandb:
        cases.append(("import wandb + wandb's Record.FromString + json.loads", [py, "-c", _WANDB, str(folder)]))
    results: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in cases}
    counts: dict[str, str] = {}
    for _ in range(args.repeat):  # interleaved, so drift on a shared machine hits every reader alike
        for name, argv in cases:
            wall, cpu, out = timed(argv, env)
            results[name].append((wall, cpu))
            counts[name] = out.strip().splitlines()[-1] if out.strip() and not out.lstrip().startswith("{") else ""
    base = statistics.median(c for _w, c in results[cases[0][0]])
    print(f"\n| reader | wall s (median of {args.repeat}) | CPU s (median) | CPU x show --json |")
    print("|---|---|---|---|")
    for name, _ in cases:
        wall = statistics.median(w for w, _c in results[name])
        cpu = statistics.median(c for _w, c in results[name])
        print(f"| {name} | {wall:.2f} | {cpu:.2f} | {cpu / base:.2f} |")
    rows = {v for v in counts.values() if v}
    if len(rows) > 1:
        print(f"row counts differ: {counts}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        _worker(Path(sys.argv[2]), int(sys.argv[3]))
        sys.exit(0)
    sys.exit(main())
