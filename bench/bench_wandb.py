"""Benchmark: reading a 100k-row offline W&B transaction log, ours against decoding it record by record.

Usage: python bench/bench_wandb.py [--rows 100000] [--repeat 5] [--baseline CHECKOUT] [--shapes ROWS] [--skip-wandb]
                                   [--append-mb 1] [--results-dir DIR]

Generates one offline run with the installed ``wandb`` (WANDB_MODE=offline, 3 metrics per
``run.log``) into bench/_data/ once per size, then times in one run, interleaved, as medians of
``--repeat`` fresh subprocesses each (started in a neutral directory, cache off):

- ``python -m pimm_inspect show --json RUN`` (the whole process: imports, reading, analysis, JSON),
- our reader alone (``read_wandb_run``, imports included; its work time is printed too),
- with ``--baseline CHECKOUT`` (another revision's source tree, e.g. a worktree of main), the same
  two with that tree's code, side by side,
- a refresh: a private copy of the run whose log is cut ``--append-mb`` MiB short is read through a
  ``ReadCache`` (timed apart, the refresh's reference), the rest appended and the refresh timed; the
  offsets the framing started from show whether only the appended records were decoded,
- the per-record reference: our framing, then ``Record.FromString`` on every record and the
  history items' ``value_json`` decoded with ``json.loads``,
- ``import wandb`` and wandb's own generated ``Record`` class on the same records (wandb 0.31 has
  no Python reader of ``.wandb`` files any more: wandb-core, in Go, reads them).

``--shapes ROWS`` also writes the logs of fixtures/gen_wandb_shapes.py with ROWS rows each (nested
dicts, mixed types, media, step metrics ...) and times our reader on each against our own
per-record path (``BULK_DECODE = False``), checking that both give the same result. CPU is the
child's user + system time; the load average (1 min) is printed with each table. It exits 1 if
the readers disagree on the number of history rows or on a shape's result.
"""

from __future__ import annotations

import argparse
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
sys.path.insert(0, str(HERE))

from _results import Figure, add_option, save  # noqa: E402

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
import sys, time
from pathlib import Path
from pimm_inspect.sources.wandb.reader import read_wandb_run
started = time.process_time()
r = read_wandb_run(Path(sys.argv[1]), ".")
print(f"work {time.process_time() - started:.4f}")
print(len(r.history_steps))
"""

_REFRESH = """
import json, shutil, sys, tempfile, time
from pathlib import Path
import pimm_inspect.sources.wandb._bulk as bulk
from pimm_inspect.session.store.cache import ReadCache
source, append = Path(sys.argv[1]), int(sys.argv[2])
scratch = Path(tempfile.mkdtemp(prefix="pimm-wandb-refresh-"))
try:
    folder = scratch / source.name
    shutil.copytree(source, folder, symlinks=True)  # a private copy: its log is cut, then grows
    log = next(folder.glob("run-*.wandb"))
    data = log.read_bytes()
    cut = len(data) - append
    log.write_bytes(data[:cut])
    cache = ReadCache(disk=None)
    t, c = time.perf_counter(), time.process_time()
    first = cache.wandb_run(folder, ".").value
    first_wall, first_cpu = time.perf_counter() - t, time.process_time() - c
    starts = []
    real = bulk.frame_batches
    def spy(fh, state, start=0):
        starts.append(start)
        return real(fh, state, start)
    bulk.frame_batches = spy
    with open(log, "ab") as fh:
        fh.write(data[cut:])
    t, c = time.perf_counter(), time.process_time()
    grown = cache.wandb_run(folder, ".").value
    wall, cpu = time.perf_counter() - t, time.process_time() - c
finally:
    shutil.rmtree(scratch, ignore_errors=True)
print(f"work {cpu:.4f}")
print("refresh " + json.dumps({"wall": wall, "cpu": cpu, "first_wall": first_wall, "first_cpu": first_cpu,
                               "starts": starts, "first_end": first.end_offset, "size": len(data), "cut": cut,
                               "incremental": cache.incremental_reads}))
print(len(grown.history_steps))
"""

_SHAPE = """
import hashlib, json, sys, time
from pathlib import Path
import pimm_inspect.sources.wandb._bulk as bulk
from pimm_inspect.sources.wandb.reader import read_wandb_run
bulk.BULK_DECODE = sys.argv[2] == "bulk"
started = time.process_time()
r = read_wandb_run(Path(sys.argv[1]), ".")
work = time.process_time() - started
view = [r.history_steps.tolist(), [(s.tag, s.steps.tolist(), s.values.tolist()) for s in r.series],
        json.dumps(r.summary, default=repr), list(r.non_scalar_keys), [f.code for f in r.findings]]
print(f"work {work:.4f}")
print(hashlib.sha256(repr(view).encode()).hexdigest())
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
    # A neutral working directory: ``python -m`` would import a package from the current one first.
    done = subprocess.run(argv, env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{argv[:4]} failed ({done.returncode}): {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def _work(out: str) -> float | None:
    """The ``work <seconds>`` line a child printed (reader work, imports excluded), if any."""
    for line in out.splitlines():
        if line.startswith("work "):
            return float(line.split()[1])
    return None


def _table(title: str, cases: list[tuple[str, list[str], dict[str, str]]], repeat: int, base: str | None = None,
           every: dict[str, list[str]] | None = None) -> tuple[dict[str, tuple[float, float, float | None]], dict[str, str]]:
    """Time every case ``repeat`` times, interleaved; print a table of medians; return them and each case's last output
    (every output, in order, is appended to ``every`` when given)."""
    results: dict[str, list[tuple[float, float, float | None]]] = {name: [] for name, _a, _e in cases}
    outputs: dict[str, str] = {}
    load_before = os.getloadavg()[0]
    for _ in range(repeat):  # interleaved, so drift on a shared machine hits every case alike
        for name, argv, env in cases:
            wall, cpu, out = timed(argv, env)
            results[name].append((wall, cpu, _work(out)))
            outputs[name] = out
            if every is not None:
                every.setdefault(name, []).append(out)
    load_after = os.getloadavg()[0]
    medians = {}
    for name, runs in results.items():
        works = [w for _wall, _cpu, w in runs if w is not None]
        medians[name] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs),
                         statistics.median(works) if works else None)
    base_cpu = medians[base or cases[0][0]][1]
    print(f"\n{title} (median of {repeat}; load average {load_before:.1f} before, {load_after:.1f} after)\n")
    print("| case | wall s | CPU s | work CPU s | CPU x first row |")
    print("|---|---|---|---|---|")
    for name, (wall, cpu, work) in medians.items():
        print(f"| {name} | {wall:.2f} | {cpu:.2f} | {'' if work is None else f'{work:.3f}'} | {cpu / base_cpu:.2f} |")
    return medians, outputs


def _rows(out: str) -> str:
    lines = [line for line in out.strip().splitlines() if not line.startswith(("work ", "refresh "))]
    return lines[-1] if lines and not out.lstrip().startswith("{") else ""


def _shapes(rows: int, repeat: int, env: dict[str, str]) -> bool:
    """Time our reader on wandb-written logs of every shape (bulk vs per record); True when results agree."""
    sys.path.insert(0, str(REPO / "fixtures"))
    import gen_wandb_shapes  # noqa: E402 - the fixtures' generator

    directory = HERE / "_data" / f"wandb_shapes_{rows}"
    folders = sorted(directory.glob("*/offline-run-*"))
    if not folders:
        print(f"generating the shapes with {rows:,} rows each in {directory} ...", file=sys.stderr)
        folders = gen_wandb_shapes.generate(directory, rows)
    py = sys.executable
    cases = []
    for folder in folders:
        label = f"{folder.parent.name}/{folder.name[-8:]}"
        size = sum(f.stat().st_size for f in folder.glob("run-*.wandb")) / 1e6
        cases.append((f"{label} ({size:.1f} MB), bulk", [py, "-c", _SHAPE, str(folder), "bulk"], env))
        cases.append((f"{label} ({size:.1f} MB), per record", [py, "-c", _SHAPE, str(folder), "per-record"], env))
    _medians, outputs = _table(f"Our reader on the wandb-written shapes, {rows:,} rows each: bulk vs per-record path",
                               cases, repeat)
    same = True
    for i in range(0, len(cases), 2):
        if _rows(outputs[cases[i][0]]) != _rows(outputs[cases[i + 1][0]]):
            print(f"{cases[i][0]}: bulk and per-record results differ", file=sys.stderr)
            same = False
    print("\nbulk and per-record results: " + ("identical on every shape" if same else "DIFFERENT"))
    return same


def main() -> int:
    """Generate if needed, time every reader (medians), print tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="another source tree (checkout) to time side by side")
    parser.add_argument("--shapes", type=int, default=0, metavar="ROWS", help="also time the wandb-written shapes")
    parser.add_argument("--skip-wandb", action="store_true", help="do not time wandb's own reader")
    parser.add_argument("--append-mb", type=float, default=1.0,
                        help="MiB appended to the log before the timed refresh (at most half the log)")
    add_option(parser)
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
    cases = [("pimm-inspect show --json (whole process, no cache)", [py, "-m", "pimm_inspect", "show", "--json", str(folder)], env),
             ("read_wandb_run (fresh process)", [py, "-c", _OURS, str(folder)], env)]
    if args.baseline:
        old = dict(env, PYTHONPATH=str(args.baseline.resolve()))
        cases += [("baseline: show --json (whole process)", [py, "-m", "pimm_inspect", "show", "--json", str(folder)], old),
                  ("baseline: read_wandb_run (fresh process)", [py, "-c", _OURS, str(folder)], old)]
    append = min(int(args.append_mb * (1 << 20)), log.stat().st_size // 2)
    cases.append((REFRESH, [py, "-c", _REFRESH, str(folder), str(append)], env))
    cases.append(("per record: Record.FromString + json.loads (fresh process)", [py, "-c", _PER_RECORD, str(folder)], env))
    if not args.skip_wandb:
        cases.append(("import wandb + wandb's Record.FromString + json.loads", [py, "-c", _WANDB, str(folder)], env))
    outputs_all: dict[str, list[str]] = {}
    medians, outputs = _table(f"{log.stat().st_size / 1e6:.1f} MB log, {args.rows:,} rows", cases, args.repeat,
                              every=outputs_all)
    counts = {name: _rows(out) for name, out in outputs.items()}
    ok = True
    if len({v for v in counts.values() if v}) > 1:
        print(f"row counts differ: {counts}", file=sys.stderr)
        ok = False
    refreshes = _refreshes(outputs_all)
    save("wandb", "W&B transaction logs", figures(medians, args.rows, log.stat().st_size / 1e6, refreshes),
         "python bench/bench_wandb.py " + " ".join(sys.argv[1:]), args.results_dir)
    if args.shapes:
        ok = _shapes(args.shapes, args.repeat, env) and ok
    return 0 if ok else 1


REFRESH = "refresh after the appended records (ReadCache; process: cut log read first, untimed)"


def _refreshes(outputs: dict[str, list[str]]) -> list[dict]:
    """The ``refresh {...}`` facts each run of the refresh case printed."""
    import json

    return [json.loads(line.split(" ", 1)[1]) for out in outputs.get(REFRESH, []) for line in out.splitlines()
            if line.startswith("refresh ")]


SHOW = "pimm-inspect show --json (whole process, no cache)"
READER = "read_wandb_run (fresh process)"
PER_RECORD = "per record: Record.FromString + json.loads (fresh process)"
WANDB = "import wandb + wandb's Record.FromString + json.loads"


def figures(medians: dict[str, tuple[float, float, float | None]], rows: int, size_mb: float,
            refreshes: list[dict] | None = None) -> list[Figure]:
    """The README rows from the medians of the main table (case -> wall s, CPU s, reader work CPU s).

    ``show --json`` against wandb's own generated ``Record`` class decoding every record (or, with --skip-wandb,
    ours), target <= 1.0 s; our reader alone against the per-record decode (no target); a refresh after appended
    records (medians of ``refreshes``, the facts the refresh child printed) against the read of the log before they
    were appended, met when every refresh framed from the previous result's end and decoded no more than the
    appended bytes (plus the record cut in two).
    """
    show, reader, per_record = medians[SHOW], medians[READER], medians[PER_RECORD]
    ref_name, ref = ("wandb's Record.FromString + json.loads, per record", medians[WANDB]) if WANDB in medians else (
        "Record.FromString + json.loads, per record", per_record)
    what = f"{rows:,}-row offline .wandb, 3 metrics, {size_mb:.1f} MB"
    out = [Figure(f"{what}: show --json", show[0], show[1], ref_name, ref[0], ref[1], "<= 1.0 s",
                  show[0] <= 1.0, show[1] <= 1.0, what="whole process, no cache"),
           Figure(f"{what}: read_wandb_run", reader[0], reader[1], "Record.FromString + json.loads, per record",
                  per_record[0], per_record[1], what="whole process, reader only",
                  note="-" if reader[2] is None else f"reader work {reader[2]:.3f} s CPU")]
    if refreshes:
        appended = statistics.median(r["size"] - r["cut"] for r in refreshes)
        decoded = max(r["size"] - r["first_end"] for r in refreshes)
        only = all(r["starts"] == [r["first_end"]] and r["incremental"] == 1
                   and r["size"] - r["first_end"] <= r["size"] - r["cut"] + (64 << 10) for r in refreshes)
        out.append(Figure(f"{what}: refresh after {appended / (1 << 20):.2g} MiB appended",
                          statistics.median(r["wall"] for r in refreshes), statistics.median(r["cpu"] for r in refreshes),
                          "read of the log before (ours)", statistics.median(r["first_wall"] for r in refreshes),
                          statistics.median(r["first_cpu"] for r in refreshes), "decodes only appended records",
                          only, only, what="reader work, in process",
                          note=f"decoded at most {decoded:,.0f} bytes for {appended:,.0f} appended"))
    return out


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        _worker(Path(sys.argv[2]), int(sys.argv[3]))
        sys.exit(0)
    sys.exit(main())
