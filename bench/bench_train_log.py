"""Benchmark: pimm-inspect's train.log reader against a per-line regex parser and ``grep -c``.

Usage: python bench/bench_train_log.py [--size-mb 1024] [--repeat 3] [--skip-slow]

Generates one pimm train.log into bench/_data/ (once per size: one attempt, one
``Train:`` line per step, plus per-epoch result, evaluation and save records, in the
exact line grammar of spec 3.4), then runs every approach in a fresh process, side by
side, ``--repeat`` times, and prints medians of the work time (measured inside the
process), the whole-process time and the peak RSS (the child's ``VmHWM``; for grep and the CLI,
``ru_maxrss`` via ``os.wait4``, which also counts this small parent's peak):

- ``grep -c 'Train: \\['``: the floor for finding the lines;
- our ``read_train_log`` and ``read_train_log_tail``;
- the reference approach of spec 3.4 D: a Python loop over lines, the spec's regex per
  line, ``float`` per term, lists turned into numpy at the end;
- the reader before the streaming rewrite (``tests/train_log_reference``);
- ``python -m pimm_inspect show RUN --json`` on a run folder holding the log.

The file is in the page cache for every run ("cold" means a fresh process, not a cold
disk). Exits 1 if the readers disagree on the number of Train: lines.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

OURS = """
    from pimm_inspect.sources.train_log.reader import read_train_log
    t = time.perf_counter()
    r = read_train_log(PATH, "train.log")
    work = time.perf_counter() - t
    out = {"work": work, "lines": sum(s.train_lines for s in r.segments), "findings": [f.code for f in r.findings]}
"""
TAIL = """
    from pimm_inspect.sources.train_log.reader import read_train_log_tail
    t = time.perf_counter()
    r = read_train_log_tail(PATH)
    work = time.perf_counter() - t
    out = {"work": work, "last_step": r.last_step}
"""
OLD = """
    from tests.train_log_reference.train_log import read_train_log
    t = time.perf_counter()
    r = read_train_log(PATH, "train.log")
    work = time.perf_counter() - t
    out = {"work": work, "lines": sum(s.train_lines for s in r.segments)}
"""
PER_LINE = r"""
    import re
    import numpy as np
    TRAIN = re.compile(
        rb"Train: \[(?P<epoch>\d+)/(?P<max_epoch>\d+)\]\[(?P<iter>\d+)/(?P<iters>\d+)\] "
        rb"(?:Data (?P<dv>[\d.]+) \((?P<da>[\d.]+)\) Batch (?P<bv>[\d.]+) \((?P<ba>[\d.]+)\) "
        rb"Remain (?P<remain>\d+:\d{2}:\d{2}) )?(?P<terms>(?:[^:\s]+: [-+\w.]+ )*)Lr: (?P<lr>[-+\w.]+)")
    TERMS = re.compile(rb"([^:\s]+): ([-+\w.]+)")
    t = time.perf_counter()
    steps, walls, cols = [], [], {}
    with open(PATH, "rb") as fh:
        for line in fh:
            m = TRAIN.search(line)
            if m is None:
                continue
            steps.append((int(m["epoch"]) - 1) * int(m["iters"]) + int(m["iter"]))
            walls.append(line[1:24])
            for key, value in ((b"Data", m["dv"]), (b"Batch", m["bv"]), (b"Lr", m["lr"])):
                if value is not None:
                    cols.setdefault(key, []).append(float(value))
            for key, value in TERMS.findall(m["terms"]):
                cols.setdefault(key, []).append(float(value))
    arrays = {k: np.asarray(v) for k, v in cols.items()}
    step_array = np.asarray(steps, dtype=np.int64)
    work = time.perf_counter() - t
    out = {"work": work, "lines": len(steps)}
"""
CHILD = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, {repo!r})
PATH = Path({path!r})
{body}
with open("/proc/self/status") as status:  # VmHWM: ru_maxrss would include the forked parent's peak
    out["peak_kib"] = next(int(x.split()[1]) for x in status if x.startswith("VmHWM:"))
print(json.dumps(out))
"""


def generate(size_mb: int) -> Path:
    """The benchmark log (written once per size)."""
    from tests.train_log_support import write_big_log

    path = HERE / "_data" / f"train_{size_mb}M.log"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        started = time.perf_counter()
        facts = write_big_log(partial, size_mb << 20)
        partial.rename(path)
        print(f"generated {path.name}: {facts['bytes'] / 1e6:.0f} MB, {facts['steps']:,} Train: lines "
              f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return path


def run_dir(log: Path) -> Path:
    """A run folder whose train.log is the benchmark log (a hard link, no copy)."""
    folder = log.parent / f"run_{log.stem}"
    target = folder / "train.log"
    if not target.exists():
        folder.mkdir(exist_ok=True)
        os.link(log, target)
    return folder


def measure(argv: list[str]) -> tuple[float, float, dict | None]:
    """(whole-process seconds, peak RSS MB, the JSON the child printed or None)."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=REPO)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{argv[:3]} failed with status {status}")
    try:
        doc = json.loads(out.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        doc = None
    return wall, usage.ru_maxrss / 1024, doc


def python_child(body: str, path: Path) -> list[str]:
    return [sys.executable, "-c", CHILD.format(repo=str(REPO), path=str(path), body=textwrap.dedent(body))]


def main() -> int:
    """Generate if needed, run every approach side by side, print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-slow", action="store_true", help="skip the per-line regex and the old reader")
    args = parser.parse_args()
    log = generate(args.size_mb)
    size_mb = log.stat().st_size / 1e6
    rows: list[tuple[str, list[str], bool]] = [
        ("`grep -c 'Train: \\['`", ["grep", "-c", "Train: \\[", str(log)], False),
        ("pimm-inspect `read_train_log`", python_child(OURS, log), False),
        ("pimm-inspect `read_train_log_tail`", python_child(TAIL, log), False),
        ("`show RUN --json` (whole CLI)", [sys.executable, "-m", "pimm_inspect", "show", str(run_dir(log)), "--json"],
         False),
        ("per-line regex (spec 3.4 D), `float` per term", python_child(PER_LINE, log), True),
        ("reader before this change (`tests/train_log_reference`)", python_child(OLD, log), True),
    ]
    results: dict[str, list[tuple[float, float, dict | None]]] = {name: [] for name, _, _ in rows}
    for _ in range(args.repeat):  # interleaved, so load changes hit every approach alike
        for name, argv, slow in rows:
            if slow and args.skip_slow:
                continue
            results[name].append(measure(argv))
    ours_work = statistics.median(r[2]["work"] for r in results["pimm-inspect `read_train_log`"])
    print(f"\n{log.name}: {size_mb:.0f} MB; medians of {args.repeat} fresh processes, run side by side\n")
    print("| approach | work s | process s | MB/s (work) | x ours (work) | peak RSS MB |")
    print("|---|---|---|---|---|---|")
    counts = {}
    for name, runs in results.items():
        if not runs:
            continue
        wall = statistics.median(r[0] for r in runs)
        docs = [r[2] for r in runs if isinstance(r[2], dict) and "work" in r[2]]
        rss = statistics.median(d["peak_kib"] / 1024 for d in docs) if docs else statistics.median(r[1] for r in runs)
        work = statistics.median(d["work"] for d in docs) if docs else wall
        lines = next((d.get("lines") for d in docs if d.get("lines") is not None), None)
        if lines is not None:
            counts[name] = lines
        work_text = f"{work:.3f}" if docs else "-"
        print(f"| {name} | {work_text} | {wall:.2f} | {size_mb / work:.0f} | {work / ours_work:.2f} | {rss:.0f} |")
    grep = subprocess.run(["grep", "-c", "Train: \\[", str(log)], capture_output=True, text=True)
    counts["grep"] = int(grep.stdout.strip())
    print(f"\nTrain: lines found: {counts}")
    return 0 if len(set(counts.values())) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
