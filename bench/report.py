"""Regenerate the README's benchmark table from ``bench/results/*.json`` (the last run of each benchmark).

    python bench/report.py            # rewrite the table between the markers in README.md
    python bench/report.py --check    # exit 1 if README.md is not what the results give
    python bench/report.py --results-dir DIR --print   # print the table of another results folder (a smoke run's)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
README = HERE.parent / "README.md"
START, END = "<!-- bench-table:start -->", "<!-- bench-table:end -->"
ORDER = ["tb_events", "train_log", "wandb", "cache", "tui_first_screen", "checkpoint", "export", "report"]


def _s(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1e3:.0f} ms" if value < 0.1 else f"{value:.2f} s"


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}x"


def _met(wall: bool | None, cpu: bool | None) -> str:
    word = {True: "yes", False: "no", None: "-"}
    return f"{word[wall]} / {word[cpu]}"


def table(results: list[dict]) -> str:
    lines = ["| benchmark | row | ours (wall / CPU) | reference (wall / CPU) | ratio (wall / CPU) | target | met (wall / CPU) "
             "| also measured |",
             "|---|---|---|---|---|---|---|---|"]
    for doc in results:
        for f in doc["figures"]:
            ref = f"{f['reference']}: {_s(f['ref_s'])} / {_s(f['ref_cpu_s'])}" if f["reference"] else "-"
            lines.append(f"| {doc['title']} | {f['row']} ({f['what']}) | {_s(f['ours_s'])} / {_s(f['ours_cpu_s'])} | "
                         f"{ref} | {_x(f['ratio'])} / {_x(f['cpu_ratio'])} | {f['target'] or '-'} | "
                         f"{_met(f['met_wall'], f['met_cpu'])} | {f.get('note') or '-'} |")
    runs = "; ".join(f"{d['title']}: `{d['command']}` at {d['commit']}, {d['measured_at']}, load {d['load_average_1m']} "
                     f"on {d['cpus']} CPUs" for d in results)
    return "\n".join(lines) + f"\n\nMedians of fresh processes, each row side by side with its reference in one run. Runs: {runs}."


def load(directory: Path | None = None) -> list[dict]:
    """Every benchmark's last results in ``directory`` (default bench/results/), in the README's order."""
    docs = {p.stem: json.loads(p.read_text()) for p in sorted((directory or HERE / "results").glob("*.json"))}
    return [docs[k] for k in ORDER if k in docs] + [v for k, v in docs.items() if k not in ORDER]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if README.md's table is out of date")
    parser.add_argument("--results-dir", type=Path, default=None, help="read the results here (default: bench/results/)")
    parser.add_argument("--print", action="store_true", help="print the table instead of writing README.md")
    args = parser.parse_args()
    if args.print:
        print(table(load(args.results_dir)))
        return 0
    text = README.read_text()
    if START not in text or END not in text:
        print(f"README.md has no {START} ... {END} block", file=sys.stderr)
        return 2
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{START}\n{table(load(args.results_dir))}\n{END}{tail}"
    if args.check:
        return 0 if new == text else 1
    README.write_text(new)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
