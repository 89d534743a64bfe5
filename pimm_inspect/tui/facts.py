"""Pure helpers the screens share: row values, filters, timeline spans, cursor checks (no Textual)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


from ..analysis.configs import flatten_config, query_config
from ..analysis.names import name_text
from ..analysis.run_filter import compile_filter, compile_run_filter, filter_error

__all__ = ["compile_filter", "compile_run_filter", "filter_error"]  # the filter grammar lives below the front ends
from ..evidence import RunRow, RunSummary
from ..model import Run, Severity
from ..report.row_cells import last_logged_text



def relative_name(root: Path, base: Path) -> str:
    """A run's path relative to the path the user gave (its own name when it is that path), by the one name escape
    (``analysis.names.name_text``: the text ``ls`` and ``show`` give it)."""
    try:
        rel = Path(os.path.relpath(Path(root).absolute(), Path(base).absolute())).as_posix()
    except ValueError:
        return name_text(Path(root).name)
    return name_text(Path(root).name if rel == "." else rel)


def flat_config(data: object) -> dict[str, object]:
    """A nested config flattened to ``a.b.c`` keys."""
    return flatten_config(data if isinstance(data, dict) else {})


def main_config(run: Run) -> dict[str, object]:
    """The run's config document (nested) by the one rule every surface uses (``analysis.configs.query_config``)."""
    doc = query_config(run)
    return dict(doc.data) if doc is not None and isinstance(doc.data, Mapping) else {}


def _summary(run: Run | RunRow) -> RunSummary:
    if isinstance(run, RunRow):
        return run.summary
    from ..analysis.summary import summary_of  # a whole Run's (numpy): never for the runs table's rows

    return summary_of(run)


def best_metric(row: RunRow) -> str:
    """The best selection metric the run reached, e.g. ``mIoU 0.6123`` ('-' when unknown): ``RunRow.best_metric``,
    the field ``ls`` prints."""
    best = row.best_metric
    return best.text if best is not None else "-"


def last_logged(row: RunRow) -> float | None:
    """Unix time of the newest point any series logged (the run's own clock): the sort key of the last-log column."""
    return row.summary.last_logged_s


def last_logged_cell(row: RunRow) -> str:
    """``YYYY-MM-DD HH:MM UTC`` of ``RunRow.last_logged_at`` (the field ``ls --json`` gives), or '-': the cell
    ``ls --columns last_logged_at`` prints."""
    return last_logged_text(row)


def severity_counts(run: Run | RunRow) -> dict[Severity, int]:
    """Number of findings per severity (a row's own counts: its findings themselves may still be encoded)."""
    if isinstance(run, RunRow):
        return {Severity.INFO: run.infos, Severity.WARNING: run.warnings, Severity.ERROR: run.errors}
    counts = {s: 0 for s in Severity}
    for f in run.findings:
        counts[f.severity] += 1
    return counts


def findings_cell(run: Run | RunRow) -> str:
    """Compact ``1E 2W`` text for a table cell, as ``ls`` writes it ('-' when clean)."""
    counts = severity_counts(run)
    if not any(counts.values()):
        return "-"
    return " ".join(f"{counts[s]}{s.name[0]}" for s in sorted(Severity, reverse=True) if counts[s])


def last_step(run: Run | RunRow) -> int | None:
    """Largest step the run reached, by the same rule as ``ls`` (attempts, else non-stale series)."""
    return _summary(run).last_step


def kind_label(run: Run | RunRow) -> str:
    """``pimm E2`` style kind/era label."""
    return f"{run.kind} {run.era}" if run.era else run.kind


@dataclass(frozen=True, slots=True)
class Span:
    """An inclusive step range with what it means on the timeline."""

    first: int
    last: int
    what: str
    """replayed (written again by a later attempt) or gap (nothing logged); lost steps come from Attempt.lost_steps."""
    by: tuple[int, ...] = ()
    """For a replayed range: the attempts whose copy is a replay (every writer after the first)."""


def marked_spans(run: Run) -> list[Span]:
    """Replayed ranges (``Run.replayed``: who wrote each copy) and unlogged ranges (``steps.gap`` findings)."""
    spans = [Span(r.first_step, r.last_step, "replayed", r.attempts[1:]) for r in run.replayed]
    for f in run.findings:
        if f.steps is not None and f.code == "steps.gap":
            spans.append(Span(int(f.steps[0]), int(f.steps[1]), "gap"))
    return spans


def human_bytes(size: int) -> str:
    """``1.2 MB`` style size."""
    value = float(size)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1024 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def fmt_step(step: int | None) -> str:
    """A step or '-'."""
    return "-" if step is None else str(step)


def fmt_step_short(step: int | None) -> str:
    """A step in at most 5 cells: ``938k``, ``1.41M``, ``12.3M`` (exact below 100,000); '-' when unknown."""
    if step is None:
        return "-"
    if abs(step) < 100_000:
        return str(step)
    for unit, size in (("k", 1e3), ("M", 1e6), ("G", 1e9)):
        value = step / size
        if abs(value) < 999.5 or unit == "G":  # 999,999 is 1M, not 1e+03k
            return f"{value:.3g}{unit}" if abs(value) < 999.5 else f"{value:.0f}{unit}"
    return str(step)  # pragma: no cover - the loop always returns


def fmt_range(first: int | None, last: int | None) -> str:
    """``51-75``; one step is ``55`` (never ``55-55``); '-' for an unknown end."""
    if first is not None and first == last:
        return str(first)
    return f"{fmt_step(first)}-{fmt_step(last)}"


def fmt_range_short(first: int | None, last: int | None) -> str:
    """``fmt_range`` with each end in at most 5 cells (``938k-1.41M``)."""
    if first is not None and first == last:
        return fmt_step_short(first)
    return f"{fmt_step_short(first)}-{fmt_step_short(last)}"


def attempt_marks(attempts: tuple[int, ...] | list[int]) -> str:
    """``#1 #2 #3``."""
    return " ".join(f"#{a}" for a in attempts)


def replayed_text(run: Run, limit: int = 6) -> str:
    """Per replayed range, how many copies and which attempts wrote them, from ``Run.replayed``:
    ``51-75: 3 copies (#1 #2 #3); 76-90: 2 (#2 #3)`` ('' when no step is held twice)."""
    parts = []
    for i, r in enumerate(run.replayed[:limit]):
        who = attempt_marks(r.attempts) if r.attempts else f"{len(r.paths) or r.copies} files"
        parts.append(f"{fmt_range(r.first_step, r.last_step)}: {r.copies}{' copies' if i == 0 else ''} ({who})")
    if len(run.replayed) > limit:
        parts.append(f"{len(run.replayed) - limit} more ranges (Findings tab)")
    return "; ".join(parts)


def wandb_target(run: Run) -> tuple[str | None, str | None]:
    """(url, sync command): what ``o``/``y`` act on; the command only when there is no URL.

    Both are the loader's vetted ones (the command names every never-synced folder by absolute path,
    shell-quoted); nothing is rebuilt here.
    """
    url = run.wandb.url
    if url:
        return url, None
    return None, run.wandb.sync_command


def no_link_reason(run: Run) -> str:
    """Why ``o`` cannot open a W&B page, and what ``pimm-inspect url`` prints for this run."""
    info = run.wandb
    if info.url:
        return ""
    if info.link_note:  # the loader's own account (online without entity, server rejection, never synced)
        return f"{info.link_note}; `pimm-inspect url` prints " + (
            "the sync command (y copies it)" if info.sync_command else "nothing and exits 1")
    if info.sync_command:
        return "never synced: no W&B page exists yet; `pimm-inspect url` prints the sync command (y copies it)"
    if info.run_ids:
        project = info.project or "<project>"
        return (f"W&B run id {', '.join(info.run_ids)} but no entity recorded, so no link can be formed: "
                f"https://wandb.ai/<entity>/{project}/runs/{info.run_ids[0]}; `pimm-inspect url` prints nothing")
    return "no W&B link: this run did not log to W&B (TensorBoard mode or W&B disabled); `pimm-inspect url` " \
           "prints nothing and exits 1"
