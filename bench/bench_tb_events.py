"""Benchmark: pimm-inspect's event-file reader against tensorboard's EventAccumulator.

Usage: python bench/bench_tb_events.py [--events 1000000] [--tags 20] [--repeat 3]

Generates one tensorboardX event file into bench/_data/ (once per size), then times in
one run: our reader with and without CRC checks, EventAccumulator keeping every point,
and `cat` as the I/O floor. Needs the fixtures extra (tensorboardX) for generation.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def generate(directory: Path, events: int, tags: int) -> Path:
    """Write ``events`` scalar events cycling over ``tags`` tags with fixed wall times."""
    from tensorboardX import SummaryWriter  # fixtures extra: only needed to create the input

    directory.mkdir(parents=True, exist_ok=True)
    partial = directory.with_name(directory.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    writer = SummaryWriter(str(partial), flush_secs=3600, max_queue=10000)
    names = [f"train/metric_{i:02d}" for i in range(tags)]
    steps = events // tags
    started = time.perf_counter()
    for step in range(steps):
        wall = 1_700_000_000.0 + step * 0.25
        value = 1.0 / (1 + step)
        for i, name in enumerate(names):
            writer.add_scalar(name, value * (i + 1), step, walltime=wall)
        if step and step % 10000 == 0:
            print(f"  generated {step * tags:,} events ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    writer.close()
    shutil.rmtree(directory, ignore_errors=True)
    partial.rename(directory)
    return next(directory.glob("events.out.tfevents.*"))


def best_of(repeat: int, func) -> tuple[float, object]:
    """Smallest wall time of ``repeat`` calls and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = func()
        best = min(best, time.perf_counter() - started)
    return best, result


def main() -> int:
    """Generate if needed, time every reader, print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--tags", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3, help="runs of our reader (best is kept)")
    parser.add_argument("--skip-accumulator", action="store_true", help="do not time EventAccumulator")
    args = parser.parse_args()

    directory = HERE / "_data" / f"tb_{args.events}x{args.tags}"
    files = sorted(directory.glob("events.out.tfevents.*")) if directory.is_dir() else []
    if files:
        path = files[0]
    else:
        print(f"generating {args.events:,} events over {args.tags} tags in {directory} ...", file=sys.stderr)
        path = generate(directory, args.events, args.tags)
    size_mb = path.stat().st_size / 1e6
    print(f"input: {path.relative_to(HERE.parent)} ({size_mb:.1f} MB)")

    from pimm_inspect.sources.tb_events import read_event_file

    rows: list[tuple[str, float, int | None]] = []
    if shutil.which("cat"):
        seconds, _ = best_of(args.repeat, lambda: subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL,
                                                                 check=True))
        rows.append(("cat (I/O floor)", seconds, None))
    seconds, ours = best_of(args.repeat, lambda: read_event_file(path, path.name))
    rows.append(("pimm-inspect, CRC on", seconds, ours.scalar_count))
    seconds, ours_nocrc = best_of(args.repeat, lambda: read_event_file(path, path.name, check_crc=False))
    rows.append(("pimm-inspect, CRC off", seconds, ours_nocrc.scalar_count))
    accumulator_points = None
    if not args.skip_accumulator:
        started = time.perf_counter()
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

        accumulator = EventAccumulator(str(path), size_guidance={"scalars": 0})
        accumulator.Reload()
        accumulator_points = sum(len(accumulator.Scalars(tag)) for tag in accumulator.Tags()["scalars"])
        rows.append(("EventAccumulator (scalars: 0)", time.perf_counter() - started, accumulator_points))

    ours_seconds = rows[1 if rows[0][0].startswith("cat") else 0][1]
    print(f"{'reader':32} {'seconds':>9} {'x ours':>8} {'points':>10}")
    for name, seconds, points in rows:
        print(f"{name:32} {seconds:9.3f} {seconds / ours_seconds:8.2f} {points if points is not None else '':>10}")
    problems = []
    if ours.findings or ours_nocrc.findings:
        problems.append(f"our reader reported findings: {[f.code for f in ours.findings + ours_nocrc.findings]}")
    if ours.scalar_count != ours_nocrc.scalar_count:
        problems.append("CRC on/off point counts differ")
    if accumulator_points is not None and accumulator_points != ours.scalar_count:
        problems.append(f"point counts differ: ours {ours.scalar_count}, EventAccumulator {accumulator_points}")
    for problem in problems:
        print("MISMATCH:", problem)
    if not problems:
        print(f"point counts agree: {ours.scalar_count:,} points over {len(ours.series)} tags")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
