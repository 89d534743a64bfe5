"""Benchmark: how long the terminal UI takes to show a run with a million points, in a real terminal.

Usage: python bench/bench_tui_first_screen.py [--events 1000000] [--repeat 3] [--size 120x40]

Uses the event file of bench_tb_events.py (generated there, once, into bench/_data/). Starts
``pimm-inspect RUN`` in a tmux pane and polls the screen every 10 ms: "first screen" is the moment the
run's overview shows its 20 tags (the process started, imported, read 1M points and painted), "curves"
is the moment after pressing 2 when the plot of the first tag shows its axis. Needs tmux.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SESSION = "pimm-bench"


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False).stdout


def wait_for(text: str, started: float, timeout: float = 30.0) -> float:
    """Seconds from ``started`` until ``text`` is on the pane."""
    while time.perf_counter() - started < timeout:
        if text in tmux("capture-pane", "-p", "-t", SESSION):
            return time.perf_counter() - started
        time.sleep(0.01)
    raise TimeoutError(f"{text!r} not on screen after {timeout} s:\n" + tmux("capture-pane", "-p", "-t", SESSION))


def one_run(run: Path, size: str) -> tuple[float, float]:
    """(first screen, curves after pressing 2) in seconds, for one fresh process."""
    width, height = size.split("x")
    tmux("kill-session", "-t", SESSION)
    tmux("new-session", "-d", "-s", SESSION, "-x", width, "-y", height, "bash", "--norc", "--noprofile")
    time.sleep(0.3)
    command = f"{shutil.which('pimm-inspect') or sys.executable + ' -m pimm_inspect'} {run}"
    started = time.perf_counter()
    tmux("send-keys", "-t", SESSION, command, "Enter")
    first = wait_for("scalar tags  20", started)
    pressed = time.perf_counter()
    tmux("send-keys", "-t", SESSION, "2")
    curves = wait_for("metric_00", pressed)
    tmux("send-keys", "-t", SESSION, "q")
    time.sleep(0.3)
    tmux("kill-session", "-t", SESSION)
    return first, curves


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--tags", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--size", default="120x40")
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        print("tmux is needed (apt-get install tmux)", file=sys.stderr)
        return 2
    run = HERE / "_data" / f"tb_{args.events}x{args.tags}"
    if not run.is_dir():
        sys.path.insert(0, str(HERE))
        from bench_tb_events import generate

        generate(run, args.events, args.tags)
    results = [one_run(run, args.size) for _ in range(args.repeat)]
    for i, (first, curves) in enumerate(results, 1):
        print(f"run {i}: first screen {first:.2f} s, curves {curves:.2f} s after pressing 2")
    print(f"median: first screen {statistics.median(r[0] for r in results):.2f} s, "
          f"curves {statistics.median(r[1] for r in results):.2f} s ({args.events:,} points, {args.size})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
