"""A whole report's facts: one run, or a tree (a summary table, overlaid curves of chosen tags, each run's section).

Runs are taken one at a time from an iterator: only their display facts (and downsampled curves) are kept, so a
tree of thousands of big runs never sits in memory at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ... import __version__
from ...model import Run
from ..plot import select_tags
from .charts import MAX_OVERLAY_RUNS, MAX_OVERLAY_TAGS, Chart, ChartLine, overlay_chart, overlay_line
from .facts import RunFacts, run_facts, scrubber
from .redact import Redactor, no_redaction

OVERLAY_COLUMNS = 320
"""Pixel columns each run's overlay line keeps its min and max for (half a chart: 24 runs stay small)."""
TREE_CURVES_UP_TO = 20
"""A tree of at most this many runs gets every run's curves; a bigger one only the overlay of ``--tag``."""


@dataclass(frozen=True, slots=True)
class SummaryRow:
    """One run's line of a tree's summary table."""

    anchor: str
    label: str
    status: str
    attempts: int
    last_step: int | None
    best_metric: str
    counts: dict[str, int]


@dataclass(frozen=True, slots=True)
class Report:
    """Everything a report file shows."""

    title: str
    written_at: str
    version: str
    redacted: bool
    policy: str
    tree: bool
    runs: tuple[RunFacts, ...]
    summary: tuple[SummaryRow, ...]
    overlays: tuple[Chart, ...]
    overlay_note: str
    curves_note: str


def build_report(runs: Iterable[Run], base: Path, count: int, tags: tuple[str, ...] = (), policy: str = "all",
                 redact: bool = False, title: str = "") -> Report:
    """The report of ``runs`` (``count`` of them): per-run facts, and for several runs the summary and overlays."""
    tree = count > 1
    draw = count <= TREE_CURVES_UP_TO
    sections: list[RunFacts] = []
    overlay_lines: dict[str, list[ChartLine]] = {}
    overlay_tags: list[str] = []
    overlay_labels: dict[str, str] = {}
    left_out = 0
    for position, run in enumerate(runs):
        redactor = Redactor.for_run(run) if redact else no_redaction
        facts = run_facts(run, base, f"run-{position + 1}", redactor, tags, policy, draw)
        sections.append(facts)
        if tree and tags:
            scrub = scrubber(redactor)
            for tag in select_tags(run, tags):
                if tag not in overlay_lines and len(overlay_tags) >= MAX_OVERLAY_TAGS:
                    continue
                if tag not in overlay_lines:
                    overlay_tags.append(tag)
                    overlay_labels[tag] = scrub(tag)
                lines = overlay_lines.setdefault(tag, [])
                if len(lines) >= MAX_OVERLAY_RUNS:
                    left_out += 1
                    continue
                line = overlay_line(run, tag, position, facts.label, columns=OVERLAY_COLUMNS)
                if line is not None:
                    lines.append(line)
    overlays = []
    for tag in overlay_tags:
        chart = overlay_chart(overlay_labels[tag], overlay_lines[tag])
        if chart is not None:
            overlays.append(chart)
    overlay_note = ""
    if tree and not tags:
        overlay_note = "Name tags with --tag GLOB to overlay their curves across runs."
    elif tree and left_out:
        overlay_note = (f"Each chart draws at most {MAX_OVERLAY_RUNS} runs (the first in the table); "
                        f"{left_out} more curves were left out: give a narrower ROOT.")
    curves_note = "" if draw else (f"Per-run curves are drawn for trees of at most {TREE_CURVES_UP_TO} runs; "
                                   f"this one has {count}: write a run's own report to see its curves.")
    summary = tuple(SummaryRow(f.anchor, f.label, f.status, len(f.attempts), f.last_step, f.best_metric, f.counts)
                    for f in sections)
    return Report(title=title or (sections[0].label if len(sections) == 1 else f"{len(sections)} runs"),
                  written_at=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), version=__version__,
                  redacted=redact, policy=policy, tree=tree, runs=tuple(sections), summary=summary,
                  overlays=tuple(overlays), overlay_note=overlay_note, curves_note=curves_note)
