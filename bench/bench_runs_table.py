"""Benchmark: big trees of runs, ``ls --json`` and the UI's runs table on the row cache (issues 20 and 23).

Usage: python bench/bench_runs_table.py [--copies 1000] [--tree DIR] [--repeat 5] [--cold | --cache DIR]
                                       [--results-dir DIR]

The tree is ``make_run_tree.py``'s (``--copies`` copies of ten fixture runs, 11 runs per 10 copies; built once under
``bench/_data/``, or ``--tree DIR`` for one built elsewhere: the 10,000-copy tree is 1.5 GB). Every figure is a whole
process, runs interleaved (the machine is shared), medians of ``--repeat``:

- ``ls --json`` warm: ``python -m pimm_inspect ls --json TREE`` with a persistent cache filled by an untimed run
  (discovery, the cached rows, JSON on stdout), and its peak RSS;
- the runs table warm: a headless Textual app (``InspectApp(TREE)``, 120x40) started as ``pimm-inspect TREE`` starts
  it (``tui/start.py``'s ``begin``: the tree's search and stored rows begun in a child before the UI's modules
  import, ``tui/prefetch.py``), that exits the moment the table's pass posts ``LoadFinished`` and the table is laid
  out, i.e. every run shows its row: the session's cached rows;
- ``--cold``: both again, each on an empty cache (every run read, analysed and stored), once per repeat.

Targets: the table fills in at most 1.5x the time of ``ls --json`` warm (issue 20, the 1,000-copy tree); on the
10,000-copy tree ``ls --json`` warm <= 2 s, cold <= 40 s, peak <= 1 GB, the table's every row warm <= 3 s and cold
no slower than ``ls`` (issue 23).
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
sys.path.insert(0, str(HERE))
from _results import Figure, add_option, save  # noqa: E402
from make_run_tree import make_tree  # noqa: E402

RATIO = 1.5
"""The table may take at most this many times ``ls --json`` warm (issue 20)."""
BIG = 10_000
"""From this many copies the issue-23 absolute targets apply."""

TABLE = """
import sys
from pathlib import Path
from pimm_inspect.session import Session
from pimm_inspect.tui.start import begin

session = Session()
prefetch = begin(session, Path(sys.argv[1]))  # as pimm-inspect TREE does (cli/cmd_ui.py), before the UI imports
import pimm_inspect.tui.app as app_module
from pimm_inspect.tui.app import InspectApp

class Timed(InspectApp):
    CSS_PATH = str(Path(app_module.__file__).with_name("pimm_inspect.tcss"))  # Textual cannot find a -c class's file

    def on_load_finished(self, message):
        super().on_load_finished(message)
        self.call_after_refresh(self.exit)

app = Timed(sys.argv[1], follow_interval_s=0, session=session, prefetch=prefetch)
app.run(headless=True, size=(120, 40))
shown = app.runs_screen.table.runs
assert len(shown) == len(app.runs) and all(r is not None for r in app.runs.values()), "table not filled"
print(len(shown))
"""


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, float, str]:
    """(wall s, CPU s, peak RSS MiB, stdout) of one whole process (its own rusage, its worker processes included)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.DEVNULL, cwd=tempfile.gettempdir())
        _pid, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode()
    if child.returncode:
        raise SystemExit(f"{argv} failed with exit code {child.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, text


def median(samples: list[tuple[float, float, float, str]], i: int) -> float:
    return statistics.median(s[i] for s in samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=1000)
    parser.add_argument("--tree", type=Path, default=None, help="the tree (default: bench/_data/run_tree_<copies>)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cold", action="store_true", help="also time both on an empty cache")
    parser.add_argument("--cache", type=Path, default=None,
                        help="a cache directory to use (and keep): one filled before spares the 10,000-run cold fill")
    add_option(parser)
    args = parser.parse_args()
    tree = make_tree(args.tree or HERE / "_data" / f"run_tree_{args.copies}", args.copies)
    cache = args.cache or Path(tempfile.mkdtemp(prefix="pimm-bench-table-"))
    if args.cold and args.cache is not None:
        parser.error("--cold empties the cache: give no --cache")
    env = dict(os.environ, PYTHONPATH=str(REPO), PIMM_INSPECT_CACHE_DIR=str(cache))
    ls = [sys.executable, "-m", "pimm_inspect", "ls", "--json", str(tree)]
    table = [sys.executable, "-c", TABLE, str(tree)]
    runs = len(json.loads(timed(ls, env)[3])["runs"])  # untimed: fills the cache
    assert int(timed(table, env)[3]) == runs  # untimed warm-up: the table holds every run ls lists
    samples: dict[str, list[tuple[float, float, float, str]]] = {"ls": [], "table": [], "ls cold": [], "table cold": []}
    for _ in range(args.repeat):
        for name, argv in (("ls", ls), ("table", table)):
            samples[name].append(timed(argv, env))
        if args.cold:
            for name, argv in (("ls cold", ls), ("table cold", table)):
                shutil.rmtree(cache, ignore_errors=True)
                samples[name].append(timed(argv, env))
    if args.cache is None:
        shutil.rmtree(cache, ignore_errors=True)
    big = args.copies >= BIG
    med = {name: (median(s, 0), median(s, 1), median(s, 2)) for name, s in samples.items() if s}
    print(f"{runs} runs ({args.copies} copies), load average {os.getloadavg()[0]:.2f}")
    for name, (wall, cpu, peak) in med.items():
        print(f"{name:12s} {wall:7.2f} s wall  {cpu:7.2f} s CPU  {peak:7.1f} MiB peak")
    ratio = med["table"][0] / med["ls"][0]
    print(f"table / ls warm: {ratio:.2f}x wall, {med['table'][1] / med['ls'][1]:.2f}x CPU (target <= {RATIO}x)")
    size = f"{args.copies:,}-copy tree, {runs:,} runs"
    figures = [Figure(row=f"runs table filled, warm, {size} (headless 120x40)", ours_s=med["table"][0],
                      ours_cpu_s=med["table"][1], reference="ls --json warm", ref_s=med["ls"][0],
                      ref_cpu_s=med["ls"][1],
                      target=f"<= {RATIO}x ls --json warm" + (", <= 3 s" if big else ""),
                      met_wall=ratio <= RATIO and (not big or med["table"][0] <= 3.0),
                      met_cpu=med["table"][1] / med["ls"][1] <= RATIO and (not big or med["table"][1] <= 3.0)),
               Figure(row=f"ls --json warm, {size}", ours_s=med["ls"][0], ours_cpu_s=med["ls"][1],
                      target="<= 2 s, <= 1 GB" if big else "",
                      met_wall=med["ls"][0] <= 2.0 and med["ls"][2] <= 1024 if big else None,
                      met_cpu=med["ls"][1] <= 2.0 if big else None, note=f"peak {med['ls'][2]:.0f} MiB")]
    if args.cold:
        figures += [Figure(row=f"ls --json cold, {size}", ours_s=med["ls cold"][0], ours_cpu_s=med["ls cold"][1],
                           target="<= 40 s, <= 1 GB" if big else "",
                           met_wall=med["ls cold"][0] <= 40 and med["ls cold"][2] <= 1024 if big else None,
                           note=f"peak {med['ls cold'][2]:.0f} MiB"),
                    Figure(row=f"runs table filled, cold, {size}", ours_s=med["table cold"][0],
                           ours_cpu_s=med["table cold"][1], reference="ls --json cold", ref_s=med["ls cold"][0],
                           ref_cpu_s=med["ls cold"][1], target="no slower than ls --json cold",
                           met_wall=med["table cold"][0] <= med["ls cold"][0])]
    command = " ".join(["python bench/bench_runs_table.py", f"--copies {args.copies}", f"--repeat {args.repeat}",
                        *(["--cold"] if args.cold else [])])
    save("runs_table" if not big else "runs_table_10k", "Big trees: ls --json and the UI's runs table on the row cache",
         figures, command, args.results_dir)
    return 0 if ratio <= RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
