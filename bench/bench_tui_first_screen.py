"""Benchmark: how soon the terminal UI answers, in a real terminal, on big inputs.

Usage: python bench/bench_tui_first_screen.py [--code DIR ...] [--repeat 3] [--size 120x40]
                                              [--only tb,log,tree] [--cache cold|off|warm]

Starts ``python -m pimm_inspect PATH`` in a tmux pane and polls the screen every 10 ms. Scenarios
(inputs generated once into bench/_data/ by the other benchmarks' generators):

- ``tb``: the 1M-point, 20-tag event file of bench_tb_events.py. "header" is the moment the run's title
  line shows its facts (status and attempts: what the listing and tails give), "tags" the moment the Overview shows its 20
  scalar tags, "curves" the time from pressing 2 until the first tag's plot shows.
- ``log``: a run whose only file is the ~1 GB train.log of bench_train_log.py: "header" and "tags" as above.
- ``tree``: the 1,000-run tree of bench_cache.py: "first rows" is the moment a row shows a run's facts
  (its status), "all" the moment every run is loaded (no "loading" left on screen).

Every ``--code`` checkout (default: this one) is run side by side, interleaved, ``--repeat`` times, and
medians are printed with the load average before and after (the machine is shared). ``--cache cold``
(default) gives each process an empty persistent cache directory; ``off`` turns the cache off; ``warm``
reuses one cache filled by an untimed first run. Needs tmux.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from _results import Figure, add_option, save  # noqa: E402

SESSION = "pimm-bench"
STATUS_WORD = re.compile(r"\b(finished|running|stopped|crashed|unknown)\b")
Probe = Callable[[str], bool]


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False).stdout


def screen() -> str:
    return tmux("capture-pane", "-p", "-t", SESSION)


def wait_for(probe: Probe, started: float, timeout: float) -> float | None:
    """Seconds from ``started`` until ``probe(screen)`` holds, or None after ``timeout``."""
    while time.perf_counter() - started < timeout:
        if probe(screen()):
            return time.perf_counter() - started
        time.sleep(0.01)
    return None


def header_shown(text: str) -> bool:
    """The run screen's title (first line) shows the run's facts: its attempts (and status), not "loading…"."""
    first = text.splitlines()[0] if text else ""
    return "loading…" not in first and "attempt(s)" in first


def tags_shown(count: int | None) -> Probe:
    def probe(text: str) -> bool:
        found = re.search(r"scalar tags\s+(\d+)", text)
        return found is not None and (int(found[1]) == count if count is not None else int(found[1]) > 0)
    return probe


def row_with_facts(text: str) -> bool:
    """A runs-table row shows a run's facts (kind, status ...), not only its name and "loading"."""
    return any("run_0" in line and "loadin" not in line and len(line.split()) >= 3 for line in text.splitlines())


def all_loaded(text: str) -> bool:
    """The status line counts the runs and nothing is loading any more."""
    busy = ("loadin", "reading", "searching", "refreshing")
    return re.search(r"\d+ run\(s\)", text) is not None and not any(word in text for word in busy)


def start(code: Path, path: Path, size: str, cache: str) -> float:
    """Open a fresh tmux pane running the UI of ``code`` on ``path``; the perf_counter time it was started."""
    width, height = size.split("x")
    tmux("kill-session", "-t", SESSION)
    tmux("new-session", "-d", "-s", SESSION, "-x", width, "-y", height, "bash", "--norc", "--noprofile")
    time.sleep(0.3)
    env = f"PYTHONPATH={shlex.quote(str(code))} PIMM_INSPECT_CACHE_DIR={shlex.quote(cache)}"
    # The pane's shell has the tmux server's environment: pass on how this process byte-compiles (run_all.py
    # sets a pycache prefix so no child compiles the package anew each start, as an installed package would not).
    if os.environ.get("PYTHONPYCACHEPREFIX"):
        env += f" PYTHONPYCACHEPREFIX={shlex.quote(os.environ['PYTHONPYCACHEPREFIX'])}"
    unset = "" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "unset PYTHONDONTWRITEBYTECODE; "
    command = (f"{unset}cd {shlex.quote(str(code))} && {env} {shlex.quote(sys.executable)} -m pimm_inspect "
               f"{shlex.quote(str(path))}")
    started = time.perf_counter()
    tmux("send-keys", "-t", SESSION, command, "Enter")
    return started


def stop() -> None:
    tmux("send-keys", "-t", SESSION, "q")
    time.sleep(0.3)
    tmux("kill-session", "-t", SESSION)


def read_in_full(text: str) -> bool:
    """The run screen shows the analysed run: the Overview counts its findings (not "reading…")."""
    return re.search(r"findings\s+\d+ error", text) is not None


def measure(scenario: str, code: Path, inputs: dict[str, Path], size: str, cache: str,
            timeout: float, all_timeout: float, fill: bool = False) -> dict[str, float | None]:
    """One fresh process: the milestones of ``scenario`` in seconds (None: not reached before ``timeout``). ``fill``:
    the run for a warm cache, which waits for the whole read (tags and curves show before the read is done, and a
    cache entry is written only at its end)."""
    path = inputs[scenario]
    started = start(code, path, size, cache)
    out: dict[str, float | None] = {}
    if scenario in ("tb", "log"):
        out["header"] = wait_for(header_shown, started, timeout)
        out["tags"] = wait_for(tags_shown(20 if scenario == "tb" else None), started, timeout)
        if scenario == "tb" and out["tags"] is not None:
            pressed = time.perf_counter()
            tmux("send-keys", "-t", SESSION, "2")
            out["curves"] = wait_for(lambda text: "metric_00" in text and "│" in text, pressed, timeout)
        if fill:
            tmux("send-keys", "-t", SESSION, "1")  # the Overview, where the findings are counted
            wait_for(read_in_full, started, all_timeout)
    else:
        out["first rows"] = wait_for(row_with_facts, started, timeout)
        out["all"] = wait_for(all_loaded, started, all_timeout)
    stop()
    return out


def inputs_for(only: set[str], events: int, tags: int, log_mb: int, runs: int) -> dict[str, Path]:
    """Generate (once) and return the input of each scenario."""
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(REPO))
    found: dict[str, Path] = {}
    if "tb" in only:
        run = HERE / "_data" / f"tb_{events}x{tags}"
        if not run.is_dir():
            from bench_tb_events import generate

            generate(run, events, tags)
        found["tb"] = run
    if "log" in only:
        import bench_train_log

        found["log"] = bench_train_log.run_dir(bench_train_log.generate(log_mb))
    if "tree" in only:
        import bench_cache

        found["tree"] = bench_cache.make_tree(HERE / "_data" / f"tree_{runs}", runs)
    return found


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", action="append", type=Path, help="a checkout to time (repeatable; default: this one)")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--tags", type=int, default=20)
    parser.add_argument("--log-mb", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--size", default="120x40")
    parser.add_argument("--only", default="tb,log,tree")
    parser.add_argument("--cache", choices=("cold", "off", "warm"), default="cold")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for one milestone")
    parser.add_argument("--all-timeout", type=float, default=120.0, help="seconds to wait for a whole tree")
    add_option(parser)
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        print("tmux is needed (apt-get install tmux)", file=sys.stderr)
        return 2
    codes = [c.resolve() for c in (args.code or [REPO])]
    only = set(args.only.split(","))
    inputs = inputs_for(only, args.events, args.tags, args.log_mb, args.runs)
    scenarios = [s for s in ("tb", "log", "tree") if s in inputs]
    load_before = os.getloadavg()
    results: dict[tuple[str, Path], list[dict[str, float | None]]] = {(s, c): [] for s in scenarios for c in codes}
    with tempfile.TemporaryDirectory(prefix="pimm-tui-bench-") as scratch:
        warm = Path(scratch) / "warm"
        for repeat in range(args.repeat):  # interleaved: load changes hit every checkout alike
            for scenario in scenarios:
                for code in codes:
                    if args.cache == "off":
                        cache = "off"
                    elif args.cache == "warm":
                        cache = str(warm / code.name)
                        if repeat == 0:  # fill it, untimed
                            measure(scenario, code, inputs, args.size, cache, args.timeout, args.all_timeout,
                                    fill=True)
                    else:
                        cache = tempfile.mkdtemp(dir=scratch)
                    got = measure(scenario, code, inputs, args.size, cache, args.timeout, args.all_timeout)
                    results[(scenario, code)].append(got)
                    print(f"{scenario} {code}: " + ", ".join(f"{k} {fmt(v)} s" for k, v in got.items()), flush=True)
    load_after = os.getloadavg()
    print(f"\nmedians of {args.repeat} fresh processes per cell, interleaved; {args.size}; cache {args.cache}; "
          f"load average before {load_before[0]:.2f} / {load_before[1]:.2f}, after {load_after[0]:.2f} / "
          f"{load_after[1]:.2f} (1 / 5 min, 2 cores)\n")
    print("| scenario | checkout | milestone | median s | runs |")
    print("|---|---|---|---|---|")
    for (scenario, code), runs in results.items():
        for key in runs[0] if runs else ():
            values = [r.get(key) for r in runs]
            reached = [v for v in values if v is not None]
            median = statistics.median(reached) if len(reached) == len(values) else None
            limit = args.all_timeout if key == "all" else args.timeout
            shown = fmt(median) if median is not None else f"> {limit:.0f} (reached {len(reached)}/{len(values)})"
            print(f"| {scenario} | {code} | {key} | {shown} | {' '.join(fmt(v) for v in values)} |")
    labels = {"tb": f"{args.events:,}-point event file, {args.tags} tags", "tree": f"{args.runs:,}-run tree"}
    if "log" in inputs:
        labels["log"] = f"{(inputs['log'] / 'train.log').stat().st_size / 1e6:,.0f} MB train.log"
    reference = None
    if len(codes) > 1:  # the second checkout, side by side, is the reference
        sha = subprocess.run(["git", "-C", str(codes[1]), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, check=False).stdout.strip()
        reference = f"{codes[1].name}{f' ({sha})' if sha else ''}"
    ours = {s: results[(s, codes[0])] for s in scenarios}
    theirs = {s: results[(s, codes[1])] for s in scenarios} if len(codes) > 1 else {}
    save("tui_first_screen", "Terminal UI, time to screen", figures(ours, theirs, reference, labels, args.timeout,
                                                                    args.all_timeout, args.cache),
         "python bench/bench_tui_first_screen.py " + " ".join(sys.argv[1:]), args.results_dir)
    return 0


TARGETS = {("tb", "header"): 1.0, ("tb", "tags"): 2.5, ("log", "header"): 1.0, ("log", "tags"): 2.5,
           ("tree", "first rows"): 2.0}
"""Issue 10's targets, seconds after launch (the header: for any run size, so the 1 GB log's too); issue 23's for the
1 GB log's tags (those read so far: the run screen shows them while the read goes on)."""
MILESTONES = {"header": "header (status, attempts)", "tags": "scalar tags shown", "curves": "first curve after `2`",
              "first rows": "first rows with facts", "all": "every run read"}


def figures(ours: dict[str, list[dict[str, float | None]]], theirs: dict[str, list[dict[str, float | None]]],
            reference: str | None, labels: dict[str, str], timeout: float, all_timeout: float,
            cache: str) -> list[Figure]:
    """The README rows: one per scenario and milestone, the median of the first checkout's runs (``ours``) against
    the second checkout's (``theirs``, when ``--code`` named two; else no reference), with the issue's target.

    A milestone not reached in every run counts as the timeout (and misses its target); the note says so.
    """
    def median(runs: list[dict[str, float | None]], key: str) -> tuple[float | None, int]:
        reached = [v for r in runs if (v := r.get(key)) is not None]
        return (statistics.median(reached) if reached and len(reached) == len(runs) else None), len(reached)

    out = []
    for scenario, runs in ours.items():
        for key in runs[0] if runs else ():
            limit = all_timeout if key == "all" else timeout
            got, reached = median(runs, key)
            ref, ref_reached = median(theirs.get(scenario, []), key) if reference else (None, 0)
            target = TARGETS.get((scenario, key))
            notes = [] if got is not None else [f"not reached within {limit:.0f} s in {len(runs) - reached} of {len(runs)} runs"]
            if reference and ref is None:
                notes.append(f"reference not reached within {limit:.0f} s")
            seconds = limit if got is None else got
            out.append(Figure(f"{labels[scenario]}: {MILESTONES.get(key, key)}", seconds, None, reference, ref, None,
                              "" if target is None else f"<= {target:g} s",
                              None if target is None else got is not None and seconds <= target, None,
                              what=f"{'after pressing 2' if key == 'curves' else 'after launch'}, tmux, cache {cache}",
                              note="; ".join(notes)))
    return out


if __name__ == "__main__":
    sys.exit(main())
