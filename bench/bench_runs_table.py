"""Benchmark: the UI's runs table on a warm 1,000-run tree against ``ls --json`` warm (issue 20).

Usage: python bench/bench_runs_table.py [--runs 1000] [--repeat 5] [--results-dir DIR]

Both are whole processes on the 1,000-run tree of bench_cache.py (copies of the fixture runs), with one persistent
cache filled by an untimed ``ls --json`` first:

- ``ls --json``: ``python -m pimm_inspect ls --json TREE`` (discovery, the cached rows, JSON on stdout);
- the runs table: a headless Textual app (``make_app(TREE)``, 120x40) that exits the moment the table's pass posts
  ``LoadFinished`` and the table is laid out, i.e. every run shows its row. Its rows are the session's cached
  ``RunRow``s, the very rows of ``ls``.

The target: the table fills in at most 1.5x the time of ``ls --json`` warm. Runs interleave (the machine is shared);
medians of wall and CPU time are printed and saved.
"""

from __future__ import annotations

import argparse
import os
import resource
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
from bench_cache import make_tree  # noqa: E402

TARGET = 1.5
"""The table may take at most this many times ``ls --json`` warm."""

TABLE = """
import sys
from pathlib import Path
import pimm_inspect.tui.app as app_module
from pimm_inspect.tui.app import InspectApp

class Timed(InspectApp):
    CSS_PATH = str(Path(app_module.__file__).with_name("pimm_inspect.tcss"))  # Textual cannot find a -c class's file

    def on_load_finished(self, message):
        super().on_load_finished(message)
        self.call_after_refresh(self.exit)

app = Timed(sys.argv[1], follow_interval_s=0)
app.run(headless=True, size=(120, 40))
shown = app.runs_screen.table.runs
assert len(shown) == len(app.runs) and all(r is not None for r in app.runs.values()), "table not filled"
print(len(shown))
"""


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall, CPU of the child, stdout) of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True, cwd=tempfile.gettempdir())
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    add_option(parser)
    args = parser.parse_args()
    tree = make_tree(HERE / "_data" / f"tree_{args.runs}", args.runs)
    cache = Path(tempfile.mkdtemp(prefix="pimm-bench-table-"))
    env = dict(os.environ, PYTHONPATH=str(REPO), PIMM_INSPECT_CACHE_DIR=str(cache))
    ls = [sys.executable, "-m", "pimm_inspect", "ls", "--json", str(tree)]
    table = [sys.executable, "-c", TABLE, str(tree)]
    import json

    listed = len(json.loads(timed(ls, env)[2])["runs"])  # untimed: fills the cache (some copies hold several runs)
    assert int(timed(table, env)[2]) == listed  # untimed warm-up, and the table really holds every run ls lists
    results: dict[str, list[tuple[float, float]]] = {"ls": [], "table": []}
    for _ in range(args.repeat):
        for name, argv in (("ls", ls), ("table", table)):
            wall, cpu, _out = timed(argv, env)
            results[name].append((wall, cpu))
    med = {name: (statistics.median(w for w, _c in runs), statistics.median(c for _w, c in runs))
           for name, runs in results.items()}
    ratio = med["table"][0] / med["ls"][0]
    print(f"load average {os.getloadavg()[0]:.2f}")
    print(f"ls --json warm:   {med['ls'][0]:.2f} s wall, {med['ls'][1]:.2f} s CPU")
    print(f"runs table warm:  {med['table'][0]:.2f} s wall, {med['table'][1]:.2f} s CPU  ({ratio:.2f}x ls; "
          f"target <= {TARGET}x)")
    figure = Figure(row=f"runs table filled, warm {args.runs}-run tree (whole process, headless 120x40)",
                    ours_s=med["table"][0], ours_cpu_s=med["table"][1], reference="ls --json warm",
                    ref_s=med["ls"][0], ref_cpu_s=med["ls"][1], target=f"<= {TARGET}x ls --json warm",
                    met_wall=ratio <= TARGET, met_cpu=med["table"][1] / med["ls"][1] <= TARGET)
    save("runs_table", "The UI's runs table against ls --json, warm cache", [figure],
         " ".join(["python bench/bench_runs_table.py", f"--runs {args.runs}", f"--repeat {args.repeat}"]),
         args.results_dir)
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
