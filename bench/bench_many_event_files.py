"""Many tiny event files in one run folder (issue 21, "work that multiplies"): load, analyse and ``show --json``.

Each file holds one point of one tag at step 0, made by TensorBoard's own event writer once and copied under
tensorboardX-style names (no pid), so every file is its own writer process and its own attempt: all of them
wrote step 0, one replayed range with ``count`` copies. Before the per-range grouping, every pair of files was
compared and reported: 1,000 files took 83-99 s and 1.6 GB, 5,000 more than 300 s.

    python bench/bench_many_event_files.py                 # 200,000 files (the issue's big case; minutes)
    python bench/bench_many_event_files.py --count 1000    # the tests' size (target <= 5 s, <= 300 MB)

Inputs go to ``bench/_data/many_event_files_<count>/`` and are reused. Prints wall and CPU seconds and the peak
resident memory of one fresh process (``resource.getrusage`` of the child); not part of ``run_all.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CHILD = """
import json, sys, time
start = time.perf_counter()
import pimm_inspect
from pimm_inspect.analysis.summary import policy_note
from pimm_inspect.report.json_doc import show_run
from pathlib import Path
run = pimm_inspect.load_run(sys.argv[1])
doc = show_run(run, Path(sys.argv[1]).parent)
note = policy_note(run)
print(json.dumps({"seconds": time.perf_counter() - start, "attempts": len(run.attempts),
                  "ranges": len(run.replayed), "copies": max((r.copies for r in run.replayed), default=0),
                  "findings": len(run.findings), "note": note[:120]}))
"""


def make_input(count: int) -> Path:
    """``count`` one-point event files (reused when already made)."""
    folder = HERE / "_data" / f"many_event_files_{count}"
    done = folder / ".complete"
    if done.exists():
        return folder
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        writer = EventFileWriter(tmp)
        writer.add_event(Event(wall_time=1_700_000_000.0, step=0,
                               summary=Summary(value=[Summary.Value(tag="loss", simple_value=0.5)])))
        writer.close()
        (original,) = Path(tmp).iterdir()
        data = original.read_bytes()
    for i in range(count):
        (folder / f"events.out.tfevents.{1_700_000_000 + i}.node{i:06d}").write_bytes(data)
    done.write_text("ok\n")
    return folder


def measure(folder: Path) -> dict:
    """One fresh process: load, analyse, build the show document; wall, CPU and peak RSS of that process."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with tempfile.TemporaryDirectory() as cache:
        env["XDG_CACHE_HOME"] = cache
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", CHILD, str(folder)], capture_output=True, text=True, env=env,
                              check=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    figures = json.loads(done.stdout)
    figures.update(wall_s=round(wall, 2), cpu_s=round((after.ru_utime + after.ru_stime) -
                                                      (before.ru_utime + before.ru_stime), 2),
                   peak_rss_mb=round(after.ru_maxrss / 1024, 1))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=200_000, help="event files (default 200,000)")
    args = parser.parse_args()
    folder = make_input(args.count)
    print(json.dumps({"count": args.count, **measure(folder)}, indent=2))


if __name__ == "__main__":
    main()
