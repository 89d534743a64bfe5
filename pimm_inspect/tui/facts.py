"""Pure helpers the screens share: row values, filters, timeline spans, cursor checks (no Textual)."""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TypeVar


from ..analysis.configs import flatten_config
from ..analysis.summary import summary_of
from ..model import Run, Severity



def relative_name(root: Path, base: Path) -> str:
    """A run's path relative to the path the user gave (its own name when it is that path)."""
    try:
        rel = Path(os.path.relpath(Path(root).absolute(), Path(base).absolute())).as_posix()
    except ValueError:
        return Path(root).name
    return Path(root).name if rel == "." else rel


def filter_error(text: str) -> str | None:
    """Why a filter cannot be used as typed (an invalid ``/regex/``), or None when it is fine."""
    body = text.strip().removeprefix("!").strip()
    if len(body) >= 2 and body.startswith("/") and body.endswith("/"):
        try:
            re.compile(body[1:-1])
        except re.error as exc:
            return f"invalid regex /{body[1:-1]}/: {exc}"
    return None


def compile_filter(text: str) -> Callable[[str], bool]:
    """A predicate for the filter syntax: substring, ``!`` negation, ``/regex/`` (case-insensitive)."""
    text = text.strip()
    negate = text.startswith("!")
    if negate:
        text = text[1:].strip()
    if not text:
        return lambda _haystack: True
    if len(text) >= 2 and text.startswith("/") and text.endswith("/"):
        try:
            pattern = re.compile(text[1:-1], re.IGNORECASE)
        except re.error:
            pattern = re.compile(re.escape(text[1:-1]), re.IGNORECASE)
        matches: Callable[[str], bool] = lambda haystack: pattern.search(haystack) is not None
    else:
        needle = text.lower()
        matches = lambda haystack: needle in haystack.lower()
    return (lambda haystack: not matches(haystack)) if negate else matches


_CFG_TERM = re.compile(r"^cfg\.(?P<key>[\w.\-\[\]]+)\s*(?P<op>==|!=|>=|<=|=|>|<|~)\s*(?P<value>.*)$")


def flat_config(data) -> dict:
    """A nested config flattened to ``a.b.c`` keys."""
    return flatten_config(data if isinstance(data, dict) else {})


def main_config(run: Run) -> dict:
    """The run's main config document (nested): resolved config, else W&B config, else Trainer args."""
    for kind in ("resolved_config", "wandb_config", "hf_training_args"):
        doc = run.config(kind)
        if doc is not None and isinstance(doc.data, dict):
            return dict(doc.data)
    return {}


def run_config(run: Run) -> dict:
    """The run's main config flattened to ``a.b.c`` keys."""
    return flatten_config(main_config(run))


_Comparable = TypeVar("_Comparable", float, str)


def _compare(left, op: str, right: str) -> bool:
    try:
        a, b = float(left), float(right)
    except (TypeError, ValueError):
        sa, sb = str(left).lower(), right.strip().strip("'\"").lower()
        if isinstance(left, bool):
            sa = str(left).lower()
        return _apply(sa, op, sb)
    return _apply(a, op, b)


def _apply(a: _Comparable, op: str, b: _Comparable) -> bool:
    if op == "~":
        return str(b) in str(a)
    if op in ("=", "=="):
        return a == b
    if op == "!=":
        return a != b
    try:
        return {">": a > b, "<": a < b, ">=": a >= b, "<=": a <= b}[op]
    except TypeError:
        return False


def compile_run_filter(text: str) -> Callable[[str, Run | None], bool]:
    """The Runs filter: text syntax of ``compile_filter``, or ``cfg.<key> op value`` on the run's config.

    ``op`` is one of ``= == != > < >= <= ~`` (``~`` is substring); numbers compare as numbers.
    A leading ``!`` negates. Runs not loaded yet never match a config filter.
    """
    stripped = text.strip()
    negate = stripped.startswith("!")
    body = stripped[1:].strip() if negate else stripped
    match = _CFG_TERM.match(body)
    if match is None:
        plain = compile_filter(text)
        return lambda haystack, _run: plain(haystack)
    key, op, value = match["key"], match["op"], match["value"]

    def matches(_haystack: str, run: Run | None) -> bool:
        if run is None:
            return False
        config = run_config(run)
        hit = key in config and _compare(config[key], op, value)
        return not hit if negate else hit

    return matches


def light_run(run: Run) -> Run:
    """The run as the runs table needs it: series and events dropped, its summary (table values) kept.

    A tree of thousands of runs stays small in memory; opening or comparing loads the full run again.
    """
    return dataclasses.replace(run, series=(), events=(), summary=summary_of(run), light=True)


def is_light(run: Run | None) -> bool:
    """True for a run made by ``light_run`` (it has no curves or events)."""
    return run is not None and run.light


def best_metric(run: Run) -> str:
    """The best selection metric the run reached, e.g. ``mIoU 0.6123`` ('-' when unknown)."""
    return summary_of(run).best_metric


def last_logged(run: Run) -> float | None:
    """Unix time of the newest point any series logged (the run's own clock, not file mtimes)."""
    return summary_of(run).last_logged_s


def fmt_time(seconds: float | None) -> str:
    """``YYYY-MM-DD HH:MM`` in UTC, or '-'."""
    if seconds is None:
        return "-"
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


def severity_counts(run: Run) -> dict[Severity, int]:
    """Number of findings per severity."""
    counts = {s: 0 for s in Severity}
    for f in run.findings:
        counts[f.severity] += 1
    return counts


def findings_cell(run: Run) -> str:
    """Compact ``E1 W2 I0`` text for a table cell ('-' when clean)."""
    counts = severity_counts(run)
    if not any(counts.values()):
        return "-"
    return " ".join(f"{s.name[0]}{counts[s]}" for s in sorted(Severity, reverse=True) if counts[s])


def last_step(run: Run) -> int | None:
    """Largest step the run reached, by the same rule as ``ls`` (attempts, else non-stale series)."""
    return summary_of(run).last_step


def kind_label(run: Run) -> str:
    """``pimm E2`` style kind/era label."""
    return f"{run.kind} {run.era}" if run.era else run.kind


@dataclass(frozen=True, slots=True)
class Span:
    """An inclusive step range with what it means on the timeline."""

    first: int
    last: int
    what: str
    """replayed (written again by a later attempt) or gap (nothing logged); lost steps come from Attempt.lost_steps."""


def marked_spans(run: Run) -> list[Span]:
    """Replayed and unlogged step ranges from the analysis findings."""
    spans: list[Span] = []
    for f in run.findings:
        if f.steps is None:
            continue
        what = {"steps.replayed": "replayed", "steps.gap": "gap"}.get(f.code)
        if what:
            spans.append(Span(int(f.steps[0]), int(f.steps[1]), what))
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


def fmt_range(first: int | None, last: int | None) -> str:
    """``51-75``; one step is ``55`` (never ``55-55``); '-' for an unknown end."""
    if first is not None and first == last:
        return str(first)
    return f"{fmt_step(first)}-{fmt_step(last)}"


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

    The command names every local W&B folder by absolute path (a resumed offline run has several, and a
    relative path only works from the run directory).
    """
    url = run.wandb.url
    if url:
        return url, None
    if run.wandb.sync_command and run.wandb.local_dirs:
        return None, "wandb sync " + " ".join(shlex.quote((Path(run.root) / d).as_posix()) for d in run.wandb.local_dirs)
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
