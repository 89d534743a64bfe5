"""Benchmark: pimm-inspect's event-file reader against tensorboard's EventAccumulator, shape by shape.

Usage: python bench/bench_tb_events.py [--events 1000000] [--repeat 3] [--rows mixed_tbx,tf2_f32] [--skip-accumulator]
                                      [--data-dir DIR]

Generates one event file per row into bench/_data/ (or ``--data-dir``; once per size) with the writers of
fixtures/gen_tb_shapes.py (tensorboardX, torch SummaryWriter, tensorboard's own writer, the TF2 tf.summary.scalar
layout, TF1-style multi-value events, scalars interleaved with histograms, images, text and a graph), then times
each reader as a whole fresh process, from outside (interpreter start-up, imports and exit included; the file in
the page cache; with a pycache prefix set, as run_all.py sets it, the package is byte-compiled once first,
untimed): ours with CRC checks on (median of --repeat runs) and EventAccumulator(size_guidance={'scalars': 0,
'tensors': 0}) keeping every point (median of --repeat-reference runs). Prints one table: seconds, peak RSS, the
ratio and the issue's target per row, judged on wall time and on CPU time (wall time on a shared machine includes
waiting for a core); exits 1 if point counts or per-tag checksums differ, or a target is missed both ways.
Needs the fixtures extra (tensorboardX, torch) to generate inputs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from _results import Figure, add_option, save

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
_spec = importlib.util.spec_from_file_location("gen_tb_shapes", ROOT / "fixtures" / "gen_tb_shapes.py")
shapes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(shapes)


@dataclass(frozen=True)
class Row:
    """One benchmark input and its target."""

    name: str
    label: str
    write: Callable[[Path, int], Path]
    """(folder, scalar points) -> the event file."""
    min_ratio: float | None
    """Required EventAccumulator / ours ratio (None: no ratio target)."""
    max_seconds: float | None = None
    max_rss_mib: float | None = None
    reference: bool = True
    cache: str | None = None
    """cold or warm: the file opened through the session's read cache with a disk cache (cold: an empty one, the
    entry written; warm: the entry a cold open left), against the same open with the cache off."""
    same_input: str | None = None
    """The row whose generated file this row reads (None: its own)."""
    show: bool = False
    """Time ``pimm-inspect show --json`` of the file's folder (the whole command: read, analysis, JSON) instead of
    the reader alone; with ``cache``, against the same command with ``--no-cache``."""


def _tenfold(directory: Path, events: int) -> Path:
    """Ten copies of the mixed-tag tensorboardX file back to back (each copy a valid record stream)."""
    source = _input(ROWS["mixed_tbx"], events // 10)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / "events.out.tfevents.1700000000.tbx10"
    with open(target, "wb") as out:
        for _ in range(10):
            with open(source, "rb") as chunk:
                shutil.copyfileobj(chunk, out, 1 << 24)
    return target


ROWS: dict[str, Row] = {row.name: row for row in [
    Row("equal_tbx", "tensorboardX, 20 equal-length tags (old row)",
        lambda d, n: shapes.tbx_scalars(d, n // 20, shapes.EQUAL_TAGS), 25),
    Row("mixed_tbx", "tensorboardX, 20 pimm tags of mixed lengths",
        lambda d, n: shapes.tbx_scalars(d, n // 20, shapes.PIMM_TAGS), 35, max_seconds=1.0),  # issue 23: >= 35x
    Row("mixed_torch", "torch SummaryWriter, train/m0..m19",
        lambda d, n: shapes.torch_scalars(d, n // 20, shapes.NUMBERED_TAGS), 25, max_seconds=1.0),
    Row("tf2_f32", "TF2 tf.summary.scalar layout, float32 tensors",
        lambda d, n: shapes.tf2_scalars(d, n // 20), 10),
    Row("tf2_f64", "TF2 tf.summary.write layout, float64 tensors",
        lambda d, n: shapes.tf2_scalars(d, n // 20, dtype="float64"), 10),
    Row("multi_value", "multi-value events (20 values each)",
        lambda d, n: shapes.multi_value(d, n // 20), 25),
    Row("interleaved", "torch, scalars + histograms/images/text/graph",
        lambda d, n: shapes.interleaved(d, n // 20), 25),
    Row("mixed_10x", "10x the mixed tensorboardX points",
        lambda d, n: _tenfold(d, n * 10), None, max_seconds=10.0, max_rss_mib=1536, reference=False),
    Row("mixed_10x_cold", "10x mixed points, first open, default cache",
        lambda d, n: _tenfold(d, n * 10), None, max_seconds=3.0, max_rss_mib=400, cache="cold",
        same_input="mixed_10x"),
    Row("mixed_10x_warm", "10x mixed points, open again, cache warm",
        lambda d, n: _tenfold(d, n * 10), None, cache="warm", same_input="mixed_10x"),
    Row("mixed_10x_show_cold", "10x mixed points, show --json, default cache empty",
        lambda d, n: _tenfold(d, n * 10), None, max_seconds=3.0, max_rss_mib=400, cache="cold",
        same_input="mixed_10x", show=True),
]}


def generate(directory: Path, events: int, tags: int) -> Path:
    """The old input: tensorboardX, ``events`` points over ``tags`` equal-length tags (bench_tui_first_screen uses it)."""
    return shapes.tbx_scalars(directory, events // tags, tuple(f"train/metric_{i:02d}" for i in range(tags)))


DATA = HERE / "_data"
"""Where inputs are generated (``--data-dir``)."""


def _input(row: Row, events: int) -> Path:
    """The row's event file for ``events`` points, generated once into ``DATA``."""
    if row.same_input:
        row = ROWS[row.same_input]
    directory = DATA / f"{row.name}_{events}"
    found = sorted(directory.glob("events.out.tfevents.*")) if directory.is_dir() else []
    if found:
        return found[0]
    print(f"generating {row.name} ({events:,} points) ...", file=sys.stderr)
    started = time.perf_counter()
    partial = directory.with_name(directory.name + ".gen")
    shutil.rmtree(partial, ignore_errors=True)
    # Written by a forked child: the writers' gigabytes must not stay in this process, whose size every timed child
    # inherits at fork (their peak RSS, as wait4 reports it, counted this process's pages: 1.7 GB for a 314 MB run).
    writer = multiprocessing.get_context("fork").Process(target=row.write, args=(partial, events))
    writer.start()
    writer.join()
    found = sorted(partial.glob("events.out.tfevents.*")) if writer.exitcode == 0 else []
    if not found:
        raise SystemExit(f"generating {row.name} failed (exit code {writer.exitcode})")
    shutil.rmtree(directory, ignore_errors=True)
    partial.rename(directory)
    print(f"  done in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return directory / found[0].name


CHILD = r"""
import json, resource, sys, time
reader, path = sys.argv[1], sys.argv[2]
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
started, cpu_started = time.perf_counter(), cpu()
if reader == "ours" and len(sys.argv) > 3:  # through the session's read cache, as `show` opens the file
    from pathlib import Path
    from pimm_inspect.session.store.cache import ReadCache
    from pimm_inspect.session.store.disk_cache import DiskCache
    folder = sys.argv[3]
    cache = ReadCache(disk=None if folder == "off" else DiskCache(Path(folder)))
    result = cache.event_file(Path(path), path.rsplit("/", 1)[-1]).value
    columns = {tag: (s.steps, s.values) for tag, s in result.series.items()}
    findings = [f.code for f in result.findings]
elif reader == "ours":
    from pimm_inspect.sources.tensorboard.reader import read_event_file
    result = read_event_file(path, path.rsplit("/", 1)[-1])
    columns = {tag: (s.steps, s.values) for tag, s in result.series.items()}
    findings = [f.code for f in result.findings]
else:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util
    import numpy as np
    accumulator = EventAccumulator(path, size_guidance={"scalars": 0, "tensors": 0})
    accumulator.Reload()
    columns = {tag: ([e.step for e in accumulator.Scalars(tag)], [e.value for e in accumulator.Scalars(tag)])
               for tag in accumulator.Tags()["scalars"]}
    for tag in accumulator.Tags()["tensors"]:
        if accumulator.SummaryMetadata(tag).plugin_data.plugin_name == "scalars":
            events = accumulator.Tensors(tag)
            columns[tag] = ([e.step for e in events], [float(tensor_util.make_ndarray(e.tensor_proto)) for e in events])
    findings = []
seconds, cpu_seconds = time.perf_counter() - started, cpu() - cpu_started
import numpy as np
checksum = {tag: [len(steps), int(np.sum(np.asarray(steps, dtype=np.int64))),
                  float(np.nansum(np.asarray(values, dtype=np.float64)))] for tag, (steps, values) in columns.items()}
# VmHWM, not ru_maxrss: the latter keeps the parent's peak across fork + exec.
with open("/proc/self/status") as status:
    peak_kib = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(json.dumps({"seconds": seconds, "cpu_seconds": cpu_seconds, "rss_mib": peak_kib / 1024,
                  "points": sum(v[0] for v in checksum.values()), "checksum": checksum, "findings": findings}))
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _run(reader: str, path: Path, cache_dir: str | None = None) -> dict:
    """One reader over one file in a fresh process (ours: through the read cache, ``cache_dir`` or off).

    ``seconds`` and ``cpu_seconds`` are the whole process's (interpreter start-up, imports, the read, exit), wall
    time around it and its own rusage; ``inside_seconds``/``inside_cpu_seconds`` what the child timed itself (from
    its first line, after the interpreter started)."""
    extra = [cache_dir] if cache_dir is not None else []
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-c", CHILD, reader, str(path), *extra], stdout=out, stderr=err,
                                 cwd=ROOT, env=_env())
        _pid, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{reader} failed on {path}:\n{err.read().decode(errors='replace')[-3000:]}")
        got = json.loads(out.read())
    got["inside_seconds"], got["inside_cpu_seconds"] = got["seconds"], got["cpu_seconds"]
    got["seconds"], got["cpu_seconds"] = wall, usage.ru_utime + usage.ru_stime
    return got


def _show(path: Path, cache_dir: str) -> dict:
    """``show --json`` of the file's folder in a fresh process, with the cache in ``cache_dir`` (``off``: --no-cache):
    whole-process seconds and peak RSS, the points it reports per tag."""
    argv = [sys.executable, "-m", "pimm_inspect", *(["--no-cache"] if cache_dir == "off" else []), "show", "--json",
            str(path.parent)]
    env = {**_env(), **({} if cache_dir == "off" else {"PIMM_INSPECT_CACHE_DIR": cache_dir})}
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        child = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, cwd=ROOT, env=env)
        _pid, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"show --json failed on {path.parent}")
        out.seek(0)
        run = json.loads(out.read())["runs"][0]
    points = {tag: [row["points"], 0, 0.0] for tag, row in run["scalars"].items()}
    cpu = usage.ru_utime + usage.ru_stime
    return {"seconds": wall, "cpu_seconds": cpu, "inside_seconds": wall, "inside_cpu_seconds": cpu,
            "rss_mib": usage.ru_maxrss / 1024, "points": sum(v[0] for v in points.values()), "checksum": points,
            "findings": []}


def _warm_imports() -> None:
    """Import what the children import once, untimed (with a pycache prefix set, as ``run_all.py`` does, no timed
    child then compiles ``pimm_inspect``; installed packages are compiled already)."""
    modules = ("numpy, pimm_inspect.sources.tensorboard.reader, pimm_inspect.session.store.cache, "
               "pimm_inspect.session.store.disk_cache, pimm_inspect.cli.main, pimm_inspect.analysis, "
               "tensorboard.backend.event_processing.event_accumulator")
    subprocess.run([sys.executable, "-c", f"import {modules}"], cwd=ROOT, env=_env(), check=False,
                   capture_output=True)


def _cached(path: Path, mode: str, show: bool = False) -> dict:
    """One open through the read cache: cold (an empty cache directory) or warm (the entry a cold open wrote)."""
    run = _show if show else lambda file, folder: _run("ours", file, folder)
    if mode == "off":
        return run(path, "off")
    with tempfile.TemporaryDirectory(prefix="pimm-tb-cache-") as folder:
        if mode == "warm":
            run(path, folder)
        return run(path, folder)


def _median(reader: str, path: Path, repeat: int, cache: str | None = None, show: bool = False) -> dict:
    """Median seconds (and the largest peak RSS) of ``repeat`` fresh-process runs."""
    runs = [_cached(path, cache, show) if cache else _run(reader, path) for _ in range(repeat)]
    out = dict(runs[-1])
    for key in ("seconds", "cpu_seconds", "inside_seconds", "inside_cpu_seconds"):
        out[key] = statistics.median(r[key] for r in runs)
    out["rss_mib"] = max(r["rss_mib"] for r in runs)
    return out


def _agrees(ours: dict, theirs: dict) -> bool:
    """Same tags, counts, step sums and (to rounding of the sums) value sums."""
    if set(ours["checksum"]) != set(theirs["checksum"]):
        return False
    for tag, (count, steps, values) in theirs["checksum"].items():
        mine = ours["checksum"][tag]
        if mine[0] != count or mine[1] != steps or abs(mine[2] - values) > 1e-9 * max(1.0, abs(values)):
            return False
    return True


def figure(row: Row, size: int, ours: dict, theirs: dict | None, targets: list[str], ok: bool, ok_cpu: bool) -> Figure:
    """One README row: our medians against EventAccumulator's (``theirs``; None when not timed), the row's targets;
    a cache row against our own open with the cache off."""
    reference = ("ours, cache off" if row.cache else "EventAccumulator") if theirs else None
    note = f"peak {ours['rss_mib']:.0f} MiB" + (f" (cache off: {theirs['rss_mib']:.0f} MiB)" if row.cache and theirs
                                                 else "")
    if row.show:
        reference = "show --json --no-cache" if theirs else None
    else:
        note += f"; after interpreter start-up: ours {ours['inside_cpu_seconds']:.2f} s CPU"
    if theirs and not row.show:
        note += (f", {reference} {theirs['inside_cpu_seconds']:.2f} s CPU"
                 f" ({theirs['inside_cpu_seconds'] / ours['inside_cpu_seconds']:.1f}x)")
    return Figure(f"{row.label}, {ours['points']:,} points, {size / 1e6:.0f} MB", ours["seconds"], ours["cpu_seconds"],
                  reference, theirs["seconds"] if theirs else None,
                  theirs["cpu_seconds"] if theirs else None, ", ".join(targets), ok, ok_cpu, note=note)


def main() -> int:
    """Generate inputs if needed, time every row, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="scalar points per row (the 10x row: ten times)")
    parser.add_argument("--repeat", type=int, default=3, help="fresh-process runs of our reader (median)")
    parser.add_argument("--repeat-reference", type=int, default=1, help="runs of EventAccumulator (median)")
    parser.add_argument("--rows", default=",".join(ROWS), help="comma-separated rows: " + ", ".join(ROWS))
    parser.add_argument("--skip-accumulator", action="store_true", help="do not time EventAccumulator")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="generate and reuse inputs here (default bench/_data/; e.g. a shared folder outside git)")
    add_option(parser)
    args = parser.parse_args()
    global DATA
    if args.data_dir is not None:
        DATA = args.data_dir

    header = (f"| {'row':46} | {'MB':>6} | {'points':>10} | {'ours s':>7} | {'ours CPU s':>10} | {'ours MiB':>8} | "
              f"{'EventAcc s':>10} | {'EA CPU s':>8} | {'EA MiB':>6} | {'x ours':>6} | {'x CPU':>6} | "
              f"{'target':>22} | ok wall/CPU |")
    lines = [header, "|" + "|".join("-" * len(cell) for cell in header.split("|")[1:-1]) + "|"]
    problems: list[str] = []
    _warm_imports()
    figures: list[Figure] = []
    cache_figures: list[Figure] = []
    for name in args.rows.split(","):
        row = ROWS[name]
        path = _input(row, args.events)
        ours = _median("ours", path, args.repeat, row.cache, row.show)
        theirs = None
        if row.cache:  # the reference: the same open with the cache off
            theirs = _median("ours", path, args.repeat, "off", row.show)
        elif row.reference and not args.skip_accumulator:
            theirs = _median("accumulator", path, args.repeat_reference)
        ratio = theirs["seconds"] / ours["seconds"] if theirs else None
        cpu_ratio = theirs["cpu_seconds"] / ours["cpu_seconds"] if theirs else None
        targets = ([f"<= {row.max_seconds:g} s"] if row.max_seconds is not None else []) + (
            [f"< {row.max_rss_mib / 1024:g} GB" if row.max_rss_mib >= 1024 else f"<= {row.max_rss_mib:g} MiB"] if row.max_rss_mib is not None else []) + (
            [f">= {row.min_ratio:g}x"] if row.min_ratio is not None else [])

        def met(seconds: float, times: float | None) -> bool:
            """The row's targets, judged on wall time or on CPU time (a shared machine inflates wall time)."""
            return ((row.max_seconds is None or seconds <= row.max_seconds)
                    and (row.max_rss_mib is None or ours["rss_mib"] <= row.max_rss_mib)
                    and (row.min_ratio is None or times is None or times >= row.min_ratio))

        ok, ok_cpu = met(ours["seconds"], ratio), met(ours["cpu_seconds"], cpu_ratio)
        if ours["findings"]:
            problems.append(f"{name}: our reader reported {ours['findings']}")
        if theirs and not _agrees(ours, theirs):
            problems.append(f"{name}: points differ (ours {ours['points']:,}, EventAccumulator {theirs['points']:,})")
        if not (ok or ok_cpu):
            problems.append(f"{name}: target missed ({', '.join(targets)})")
        nan = float("nan")
        lines.append(
            f"| {row.label:46} | {path.stat().st_size / 1e6:6.1f} | {ours['points']:>10,} | {ours['seconds']:7.3f} | "
            f"{ours['cpu_seconds']:10.3f} | {ours['rss_mib']:8.0f} | {theirs['seconds'] if theirs else nan:10.2f} | "
            f"{theirs['cpu_seconds'] if theirs else nan:8.2f} | {theirs['rss_mib'] if theirs else nan:6.0f} | "
            f"{ratio or nan:6.1f} | {cpu_ratio or nan:6.1f} | {', '.join(targets):>22} | "
            f"{('yes' if ok else 'no') + ' / ' + ('yes' if ok_cpu else 'no'):>11} |")
        print(lines[-1], file=sys.stderr)
        (cache_figures if row.cache else figures).append(figure(row, path.stat().st_size, ours, theirs, targets, ok,
                                                                ok_cpu))
    print("\n".join(lines))
    words = ["DIR" if prev == "--data-dir" else word for prev, word in zip(["", *sys.argv[1:]], sys.argv[1:])]
    command = "python bench/bench_tb_events.py " + " ".join(words)  # no machine paths in the results
    reader_rows = [name for name in ROWS if not ROWS[name].cache]
    chosen = [name for name in args.rows.split(",") if not ROWS[name].cache]
    if figures and set(reader_rows) <= set(chosen):
        save("tb_events", "TensorBoard event files", figures, command, args.results_dir)
    elif figures:  # some reader rows alone: their own file, so the full run's figures of the other rows stay
        save("tb_events_rows", "TensorBoard event files, rows re-measured alone", figures, command, args.results_dir)
    if cache_figures:  # their own file: a run of only these rows leaves the reader rows' figures alone
        save("tb_events_cache", "TensorBoard event files through the cache", cache_figures, command, args.results_dir)
    for problem in problems:
        print("PROBLEM:", problem)
    if not problems:
        print("all rows agree with EventAccumulator and meet their targets")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
