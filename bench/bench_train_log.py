"""Benchmark: pimm-inspect's train.log reader against an earlier revision, a per-line regex parser and ``grep -c``.

Usage: python bench/bench_train_log.py [--size-mb 1024] [--repeat 3] [--skip-slow] [--baseline main]
                                       [--append-mb 1]

Generates one pimm train.log into bench/_data/ (once per size; ``write_big_log(mixed=True)``: one
attempt, one ``Train:`` line per step, and what a real run interleaves: the ``Config:`` dump, a Val
block with its per-class table after every epoch, iteration saves, multi-line warnings, Train: lines
with an extra term, a nan loss; all in the line grammar of spec 3.4). Then runs every approach in a
fresh process, side by side, interleaved, ``--repeat`` times, and prints medians of the work time and
CPU time (measured inside the process, a big log's scanning child included), the whole-process time and
the peak RSS (the child's ``VmHWM``; for grep and the CLI, ``ru_maxrss`` via ``os.wait4``, which also
counts this small parent's peak), plus the load average before and after:

- ``grep -c 'Train: \\['``: the floor for finding the lines;
- our ``read_train_log`` (cold: a fresh process) and ``read_train_log_tail``, and the same for the
  revision ``--baseline`` (its ``pimm_inspect`` exported with ``git archive`` into bench/_data/);
- a refresh: the log less its last ``--append-mb`` read through a ``ReadCache`` (not timed), the
  rest appended, the refresh timed; "bytes read" counts what the reader's block loop read;
- the reference approach of spec 3.4 D: a Python loop over lines, the spec's regex per
  line, ``float`` per term, lists turned into numpy at the end;
- the reader before the streaming rewrite (``tests/train_log_reference``);
- ``python -m pimm_inspect show RUN --json`` and ``check RUN --json`` on a run folder holding the log, disk
  cache off, for this branch and for ``--baseline`` (whole process: start-up, read, checks, report).

The file is in the page cache for every run ("cold" means a fresh process, not a cold disk).
Exits 1 if the readers disagree on the number of Train: lines.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from _results import Figure, add_option, save  # noqa: E402

FULL = """
    from pimm_inspect.sources.train_log.reader import read_train_log
    t, c = time.perf_counter(), cpu_now()
    r = read_train_log(PATH, "train.log")
    work, cpu = time.perf_counter() - t, cpu_now() - c
    out = {"work": work, "cpu": cpu, "lines": sum(s.train_lines for s in r.segments)}
"""
TAIL = """
    from pimm_inspect.sources.train_log.reader import read_train_log_tail
    t, c = time.perf_counter(), cpu_now()
    r = read_train_log_tail(PATH)
    work, cpu = time.perf_counter() - t, cpu_now() - c
    out = {"work": work, "cpu": cpu, "last_step": r.last_step}
"""
REFRESH = """
    try:
        import pimm_inspect.sources.train_log._ahead as R  # where the reader's block loop reads (its blocks())
    except ImportError:  # a baseline from before the scanning child: the reader's own blocks()
        import pimm_inspect.sources.train_log.reader as R
    from pimm_inspect.session.store.cache import ReadCache
    GROW = Path(GROW_PATH)
    cut = PATH.stat().st_size - APPEND_BYTES
    with open(GROW, "r+b") as fh:
        fh.truncate(cut)
    cache = ReadCache(disk=None)
    first = cache.train_log(GROW, "train.log").value
    with open(PATH, "rb") as src, open(GROW, "ab") as fh:
        src.seek(cut)
        fh.write(src.read())
    read = []
    real = R.blocks
    def spy(fh, start, size, *args):
        read.append(size - start)
        return real(fh, start, size, *args)
    R.blocks = spy
    t, c = time.perf_counter(), cpu_now()
    r = cache.train_log(GROW, "train.log").value
    work, cpu = time.perf_counter() - t, cpu_now() - c
    out = {"work": work, "cpu": cpu, "bytes_read": sum(read), "lines": sum(s.train_lines for s in r.segments),
           "incremental": cache.incremental_reads}
"""
OLD = """
    from tests.train_log_reference.train_log import read_train_log
    t, c = time.perf_counter(), cpu_now()
    r = read_train_log(PATH, "train.log")
    work, cpu = time.perf_counter() - t, cpu_now() - c
    out = {"work": work, "cpu": cpu, "lines": sum(s.train_lines for s in r.segments)}
"""
PER_LINE = r"""
    import re
    import numpy as np
    TRAIN = re.compile(
        rb"Train: \[(?P<epoch>\d+)/(?P<max_epoch>\d+)\]\[(?P<iter>\d+)/(?P<iters>\d+)\] "
        rb"(?:Data (?P<dv>[\d.]+) \((?P<da>[\d.]+)\) Batch (?P<bv>[\d.]+) \((?P<ba>[\d.]+)\) "
        rb"Remain (?P<remain>\d+:\d{2}:\d{2}) )?(?P<terms>(?:[^:\s]+: [-+\w.]+ )*)Lr: (?P<lr>[-+\w.]+)")
    TERMS = re.compile(rb"([^:\s]+): ([-+\w.]+)")
    t, c = time.perf_counter(), cpu_now()
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
    work, cpu = time.perf_counter() - t, cpu_now() - c
    out = {"work": work, "cpu": cpu, "lines": len(steps)}
"""
CHILD = """
import json, resource, sys, time
from pathlib import Path
sys.path.insert(0, {repo!r})
PATH = Path({path!r})


def cpu_now():  # this process's CPU and its waited children's (a big train.log's scanning child)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


{body}
with open("/proc/self/status") as status:  # VmHWM: ru_maxrss would include the forked parent's peak
    out["peak_kib"] = next(int(x.split()[1]) for x in status if x.startswith("VmHWM:"))
print(json.dumps(out))
"""


def generate(size_mb: int) -> Path:
    """The benchmark log (written once per size)."""
    from tests.train_log_support import write_big_log

    path = HERE / "_data" / f"train_{size_mb}M_mixed.log"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        started = time.perf_counter()
        facts = write_big_log(partial, size_mb << 20, mixed=True)
        partial.rename(path)
        print(f"generated {path.name}: {facts['bytes'] / 1e6:.0f} MB, {facts['steps']:,} Train: lines "
              f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return path


def baseline_tree(ref: str) -> tuple[Path, str]:
    """``pimm_inspect`` of revision ``ref``, exported once into bench/_data/ (its path, short hash)."""
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", ref], capture_output=True, text=True,
                         check=True).stdout.strip()
    folder = HERE / "_data" / f"baseline-{sha}"
    if not (folder / "pimm_inspect").exists():
        folder.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", sha, "pimm_inspect"], capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder, sha


def run_dir(log: Path) -> Path:
    """A run folder whose train.log is the benchmark log (a hard link, no copy)."""
    folder = log.parent / f"run_{log.stem}"
    target = folder / "train.log"
    if not target.exists():
        folder.mkdir(exist_ok=True)
        os.link(log, target)
    return folder


def measure(argv: list[str], env_extra: dict[str, str] | None = None) -> tuple[float, float, dict | None]:
    """(whole-process seconds, peak RSS MB, the JSON the child printed or None)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), **(env_extra or {}))
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=REPO)
    assert proc.stdout is not None
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


def python_child(body: str, path: Path, tree: Path = REPO, **names: object) -> list[str]:
    """argv of a fresh Python running ``body`` with ``tree`` first on its path (``names`` replace words in it)."""
    body = textwrap.dedent(body)
    for name, value in names.items():
        body = body.replace(name, repr(value))
    return [sys.executable, "-c", CHILD.format(repo=str(tree), path=str(path), body=body)]


def cli_of(tree: Path, *args: str) -> list[str]:
    """argv of ``python -m pimm_inspect ARGS`` running the ``pimm_inspect`` exported into ``tree``."""
    return [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(tree)!r}); "
            "from pimm_inspect.cli.main import main; main()", *args]


def main() -> int:
    """Generate if needed, run every approach side by side, print a table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-slow", action="store_true", help="skip the per-line regex and the old reader")
    parser.add_argument("--baseline", default="main", help="git revision to compare with (default: main)")
    parser.add_argument("--append-mb", type=float, default=1.0, help="bytes appended before the timed refresh")
    add_option(parser)
    args = parser.parse_args()
    log = generate(args.size_mb)
    size_mb = log.stat().st_size / 1e6
    base, sha = baseline_tree(args.baseline)
    append = int(args.append_mb * (1 << 20))
    grow = HERE / "_data" / "grow.log"
    shutil.copyfile(log, grow)
    refresh_env = {"PIMM_INSPECT_CACHE_DIR": "off"}
    rows: list[tuple[str, list[str], bool, dict[str, str] | None]] = [
        ("`grep -c 'Train: \\['`", ["grep", "-c", "Train: \\[", str(log)], False, None),
        ("this branch: `read_train_log`", python_child(FULL, log), False, None),
        (f"{args.baseline} ({sha}): `read_train_log`", python_child(FULL, log, base), False, None),
        ("this branch: `read_train_log_tail`", python_child(TAIL, log), False, None),
        (f"{args.baseline} ({sha}): `read_train_log_tail`", python_child(TAIL, log, base), False, None),
        (f"this branch: refresh after +{args.append_mb:g} MB", python_child(REFRESH, log, GROW_PATH=str(grow), APPEND_BYTES=append), False, refresh_env),
        (f"{args.baseline} ({sha}): refresh after +{args.append_mb:g} MB",
         python_child(REFRESH, log, base, GROW_PATH=str(grow), APPEND_BYTES=append), False, refresh_env),
        ("`show RUN --json` (whole CLI, disk cache off)",
         [sys.executable, "-m", "pimm_inspect", "show", str(run_dir(log)), "--json"], False, refresh_env),
        (f"{args.baseline} ({sha}): `show RUN --json` (whole CLI, disk cache off)",
         cli_of(base, "show", str(run_dir(log)), "--json"), False, refresh_env),
        ("`check RUN --json` (whole CLI, disk cache off)",
         [sys.executable, "-m", "pimm_inspect", "check", str(run_dir(log)), "--json"], False, refresh_env),
        (f"{args.baseline} ({sha}): `check RUN --json` (whole CLI, disk cache off)",
         cli_of(base, "check", str(run_dir(log)), "--json"), False, refresh_env),
        ("per-line regex (spec 3.4 D), `float` per term", python_child(PER_LINE, log), True, None),
        ("reader before the streaming rewrite (`tests/train_log_reference`)", python_child(OLD, log), True, None),
    ]
    results: dict[str, list[tuple[float, float, dict | None]]] = {name: [] for name, _, _, _ in rows}
    load_before = os.getloadavg()
    for _ in range(args.repeat):  # interleaved, so load changes hit every approach alike
        for name, argv, slow, env in rows:
            if slow and args.skip_slow:
                continue
            results[name].append(measure(argv, env))
    load_after = os.getloadavg()
    grow.unlink()
    ours_cpu = statistics.median(r[2]["cpu"] for r in results["this branch: `read_train_log`"] if r[2])
    print(f"\n{log.name}: {size_mb:.0f} MB; medians of {args.repeat} fresh processes, run side by side; "
          f"load average (1/5/15 min) {load_before[0]:.1f}/{load_before[1]:.1f}/{load_before[2]:.1f} before, "
          f"{load_after[0]:.1f}/{load_after[1]:.1f}/{load_after[2]:.1f} after, {os.cpu_count()} cores\n")
    print("| approach | work s | CPU s | process s | MB/s (work) | MB/s (CPU) | x ours (CPU) | bytes read | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|")
    counts = {}
    medians: dict[str, dict] = {}
    for name, runs in results.items():
        if not runs:
            continue
        wall = statistics.median(r[0] for r in runs)
        docs = [r[2] for r in runs if isinstance(r[2], dict) and "work" in r[2]]
        rss = statistics.median(d["peak_kib"] / 1024 for d in docs) if docs else statistics.median(r[1] for r in runs)
        work = statistics.median(d["work"] for d in docs) if docs else wall
        cpu = statistics.median(d["cpu"] for d in docs) if docs else None
        lines = next((d.get("lines") for d in docs if d.get("lines") is not None), None)
        if lines is not None:
            counts[name] = lines
        read = statistics.median(d["bytes_read"] for d in docs) if docs and "bytes_read" in docs[0] else None
        whole = "refresh" not in name and "tail" not in name
        cells = [f"{work:.3f}" if docs else "-", f"{cpu:.3f}" if cpu is not None else "-", f"{wall:.2f}",
                 f"{size_mb / work:.0f}" if whole else "-",
                 f"{size_mb / cpu:.0f}" if whole and cpu else "-",
                 f"{cpu / ours_cpu:.3g}" if cpu else "-", f"{read:,.0f}" if read is not None else "-", f"{rss:.0f}"]
        print(f"| {name} | " + " | ".join(cells) + " |")
        medians[name] = {"wall": wall, "work": work if docs else None, "cpu": cpu, "rss": rss, "bytes_read": read}
    grep = subprocess.run(["grep", "-c", "Train: \\[", str(log)], capture_output=True, text=True)
    counts["grep"] = int(grep.stdout.strip())
    print(f"\nTrain: lines found: {counts}")
    save("train_log", "pimm train.log", figures(medians, size_mb, counts["grep"], append),
         "python bench/bench_train_log.py " + " ".join(sys.argv[1:]), args.results_dir)
    return 0 if len(set(counts.values())) == 1 else 1


def figures(medians: dict[str, dict], size_mb: float, train_lines: int, append_bytes: int) -> list[Figure]:
    """The README rows of this benchmark from the medians of ``main`` (approach name -> wall, work, cpu, rss, bytes_read).

    Cold read against the per-line regex of spec 3.4 D (the reference approach; absent with --skip-slow), judged
    on MB/s and peak RSS; the tail alone (no reference reader); a refresh after ``append_bytes`` against our own
    full read, judged on the bytes it read.
    """
    ours = medians["this branch: `read_train_log`"]
    ref = medians.get("per-line regex (spec 3.4 D), `float` per term")
    rate, rate_cpu = size_mb / ours["work"], size_mb / ours["cpu"]
    out = [Figure(f"{size_mb:,.0f} MB pimm log, one attempt, {train_lines:,} Train: lines, cold read", ours["work"],
                  ours["cpu"], "per-line regex (spec 3.4 D)" if ref else None, ref["work"] if ref else None,
                  ref["cpu"] if ref else None, ">= 70 MB/s, peak RSS <= 800 MB",
                  rate >= 70 and ours["rss"] <= 800, rate_cpu >= 70 and ours["rss"] <= 800,
                  what="reader work, fresh process",
                  note=f"{rate:.0f} MB/s wall, {rate_cpu:.0f} MB/s CPU; peak RSS {ours['rss']:.0f} MB"
                       + (f" (reference {ref['rss']:.0f} MB)" if ref else ""))]
    tail = medians["this branch: `read_train_log_tail`"]
    out.append(Figure(f"{size_mb:,.0f} MB pimm log: status and last step from the tail", tail["work"], tail["cpu"],
                      target="<= 0.2 s", met_wall=tail["work"] <= 0.2, met_cpu=tail["cpu"] <= 0.2,
                      what="reader work, fresh process", note=f"whole process {tail['wall']:.2f} s"))
    refresh = next(v for k, v in medians.items() if k.startswith("this branch: refresh"))
    only_appended = refresh["bytes_read"] is not None and refresh["bytes_read"] <= append_bytes + (64 << 10)
    out.append(Figure(f"{size_mb:,.0f} MB pimm log: refresh after {append_bytes / (1 << 20):g} MiB appended",
                      refresh["work"], refresh["cpu"], "full read (ours, cold)", ours["work"], ours["cpu"],
                      "reads only appended bytes", only_appended, only_appended, what="reader work",
                      note="bytes read not counted" if refresh["bytes_read"] is None
                      else f"read {refresh['bytes_read']:,.0f} bytes for {append_bytes:,} appended"))
    return out


if __name__ == "__main__":
    sys.exit(main())
