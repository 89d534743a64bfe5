"""Regenerate the benchmark table in bench/README.md, and the headline figures in README.md's Speed section, from
``bench/results/*.json`` (the last run of each benchmark).

    python bench/report.py            # rewrite both blocks between their markers
    python bench/report.py --check    # exit 1 if either block is not what the results give
    python bench/report.py --results-dir DIR --print   # print the table of another results folder (a smoke run's)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCH_README = HERE / "README.md"
README = HERE.parent / "README.md"
START, END = "<!-- bench-table:start -->", "<!-- bench-table:end -->"
HEADLINE_START, HEADLINE_END = "<!-- bench-headline:start -->", "<!-- bench-headline:end -->"
# The few rows README.md's Speed section quotes: (results file, row, what); a row no results file has is left out.
HEADLINES = [
    ("tb_events", "tensorboardX, 20 pimm tags of mixed lengths, 1,000,000 points, 51 MB", "whole process"),
    ("train_log", "1,094 MB pimm log, one attempt, 5,041,041 Train: lines, cold read", "reader work, fresh process"),
    ("cache", "ls, 1,000-run tree, warm", "whole process"),
    ("cache", "ls, 1,000-run tree, cold", "whole process"),
    ("checkpoint", "1154 MB pimm checkpoint, metadata", "reader work"),
]
ORDER = ["tb_events", "train_log", "wandb", "cache", "tui_first_screen", "checkpoint", "export", "report", "runs_table"]


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


def headlines(results: list[dict]) -> str:
    """README.md's Speed bullets: each headline row's wall time, and its reference's and the ratio when it has one."""
    by_key = {(d.get("_name"), f["row"], f["what"]): (d, f) for d in results for f in d["figures"]}
    lines = []
    for key in HEADLINES:
        if key not in by_key:
            continue
        doc, f = by_key[key]
        line = f"- {doc['title']}: {f['row']} ({f['what']}): **{_s(f['ours_s'])}**"
        if f["reference"] and f["ratio"] is not None:
            line += f" ({f['reference']}: {_s(f['ref_s'])}, ratio {_x(f['ratio'])})"
        lines.append(line)
    return "\n".join(lines)


def _replace(text: str, start: str, end: str, body: str) -> str | None:
    if start not in text or end not in text:
        return None
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{body}\n{end}{tail}"


def load(directory: Path | None = None) -> list[dict]:
    """Every benchmark's last results in ``directory`` (default bench/results/), in the README's order."""
    docs = {p.stem: {**json.loads(p.read_text()), "_name": p.stem}
            for p in sorted((directory or HERE / "results").glob("*.json"))}
    return [docs[k] for k in ORDER if k in docs] + [v for k, v in docs.items() if k not in ORDER]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the table or the headline figures are out of date")
    parser.add_argument("--results-dir", type=Path, default=None, help="read the results here (default: bench/results/)")
    parser.add_argument("--print", action="store_true", help="print the table instead of writing the READMEs")
    args = parser.parse_args()
    if args.print:
        print(table(load(args.results_dir)))
        return 0
    results = load(args.results_dir)
    changed = False
    for path, start, end, body in ((BENCH_README, START, END, table(results)),
                                   (README, HEADLINE_START, HEADLINE_END, headlines(results))):
        text = path.read_text()
        new = _replace(text, start, end, body)
        if new is None:
            print(f"{path} has no {start} ... {end} block", file=sys.stderr)
            return 2
        if new != text:
            changed = True
            if not args.check:
                path.write_text(new)
    return 1 if args.check and changed else 0

if __name__ == "__main__":
    raise SystemExit(main())
