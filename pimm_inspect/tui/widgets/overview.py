"""The Overview tab: identity, attempts timeline, provenance, W&B, top findings."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult, RenderResult
from textual.geometry import Size
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

from ...analysis.secrets import mask_text
from ...load.quick import RunGlance
from ...model import Attempt, Provenance, Run, Severity
from ...report.safe_text import clean, data_text, finding_text
from ..facts import Span, fmt_range, fmt_range_short, fmt_step_short, kind_label, marked_spans, relative_name
from ..stages import WAITING, attempts_seen, last_step_seen

SEVERITY_CLASS = {Severity.ERROR: "overview--error", Severity.WARNING: "overview--warning",
                  Severity.INFO: "overview--info"}
BAR_CHARS = {"logged": "█", "replayed": "▓", "lost": "░", "gap": "·"}
"""Each mark has its own character so the strip reads without colour (NO_COLOR)."""
LEGEND = {"logged": "logged", "replayed": "replayed", "lost": "lost: no checkpoint kept it", "gap": "not logged"}


class TimelineStrip(Widget):
    """One row per attempt: its step span on a shared axis, replayed/lost/gap ranges marked."""

    COMPONENT_CLASSES = {"timeline--logged", "timeline--replayed", "timeline--lost", "timeline--gap",
                         "timeline--label", "timeline--dim"}

    def __init__(self) -> None:
        super().__init__()
        self.attempts: tuple[Attempt, ...] = ()
        self.spans: list[Span] = []
        self.text: str | None = None

    def show(self, attempts: tuple[Attempt, ...], spans: list[Span]) -> None:
        """Set the attempts and marked ranges to draw."""
        self.attempts = attempts
        self.spans = spans
        self.text = None
        self.refresh(layout=True)

    def show_text(self, text: str) -> None:
        """A line in place of the strip (the attempts are still being read)."""
        self.attempts, self.spans, self.text = (), [], text
        self.refresh(layout=True)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """As many rows as the strip renders at this width (the legend may take two): nothing is pushed out."""
        return len(self._lines(width))

    def render(self) -> RenderResult:
        """Draw the strip to the widget's current width."""
        return Text("\n").join(self._lines(self.size.width))

    def _lines(self, width: int) -> list[Text]:
        """The strip's rows, none wider than ``width``: one per attempt, the step axis, the legend."""
        dim = self.get_component_rich_style("timeline--dim")
        if self.text is not None:
            return [Text(self.text, style=dim, no_wrap=True, overflow="ellipsis")]
        if not self.attempts:
            return [Text("no attempts found (no train.log segments or event files)", style=dim)]
        steps = [s for a in self.attempts for s in (a.first_step, a.last_step) if s is not None]
        steps += [s for sp in self.spans for s in (sp.first, sp.last)]
        if not steps:  # no axis to invent: say what there is
            return [Text(clean(f"#{a.index} {a.origin}", newlines=False)[:13].ljust(14) + f"no step logged, {a.ended}",
                         dim, no_wrap=True, overflow="ellipsis") for a in self.attempts]
        lo, hi = min(steps), max(steps)
        label_width = 14
        # Each row ends with its span and how it ended; steps of 6-7 digits are abbreviated (938k-1.41M).
        suffixes = [clean(f" {fmt_range_short(a.first_step, a.last_step)} {a.ended}", newlines=False)
                    for a in self.attempts]
        suffix_width = max(len(x) for x in suffixes)
        bar_width = max(width - label_width - suffix_width, 10)
        scale = (hi - lo + 1) / bar_width
        rows: list[Text] = []
        drawn: set[str] = set()
        for attempt, suffix in zip(self.attempts, suffixes):
            row = Text(no_wrap=True, overflow="ellipsis")
            row.append(clean(f"#{attempt.index} {attempt.origin}", newlines=False)[:label_width - 1].ljust(label_width),
                       self.get_component_rich_style("timeline--label"))
            for cell in range(bar_width):
                a, b = lo + int(cell * scale), lo + int((cell + 1) * scale) - 1
                char, style, what = self._cell(attempt, a, max(a, b))
                drawn.add(what)
                row.append(char, style)
            row.append(suffix)
            rows.append(row)
        first, last = fmt_step_short(lo), fmt_step_short(hi)
        rows.append(Text(" " * label_width + first.ljust(max(bar_width - len(last), len(first) + 1)) + last, dim,
                         no_wrap=True, overflow="ellipsis"))
        # The legend names only what is drawn: "lost" appears only where checkpoint evidence put it.
        entries = [f"{BAR_CHARS[k]} {LEGEND[k]}" for k in ("logged", "replayed", "lost", "gap") if k in drawn]
        line = " " * label_width
        for entry in entries:
            if line.strip() and len(line) + 2 + len(entry) > width:
                rows.append(Text(line, dim, no_wrap=True, overflow="ellipsis"))
                line = " " * label_width
            line += ("  " if line.strip() else "") + entry
        rows.append(Text(line, dim, no_wrap=True, overflow="ellipsis"))
        return rows

    def _cell(self, attempt: Attempt, a: int, b: int) -> tuple[str, Style, str]:
        """Character, style and mark for the step range [a, b] of one attempt's row."""
        first, last = attempt.first_step, attempt.last_step
        inside = first is not None and last is not None and a <= last and b >= first
        lost = attempt.lost_steps
        if inside and lost is not None and lost[0] <= b and lost[1] >= a:
            # Only the model's lost_steps (checkpoint evidence: trained, kept by no checkpoint) is drawn as lost.
            return self._mark("lost")
        for span in self.spans:
            if span.first <= b and span.last >= a:
                if span.what == "gap" and not inside:
                    return self._mark("gap")
                if inside and span.what == "replayed" and attempt.index in span.by:
                    return self._mark("replayed")  # this attempt's copy of the range is a replay
        if inside:
            return self._mark("logged")
        return " ", self.get_component_rich_style("timeline--dim"), "none"

    def _mark(self, what: str) -> tuple[str, Style, str]:
        return BAR_CHARS[what], self.get_component_rich_style(f"timeline--{what}"), what


def started(attempt: Attempt) -> str:
    """When the attempt started, with its zone: ``UTC`` for a writer's clock, else train.log's local clock,
    which records none."""
    if not attempt.started_at:
        return "?"
    return f"{attempt.started_at} UTC" if attempt.started_at_utc else f"{attempt.started_at} (log clock, no zone)"


class Overview(VerticalScroll):
    """Everything a user checks first about one run."""

    COMPONENT_CLASSES = {"overview--error", "overview--warning", "overview--info", "overview--key",
                         "overview--heading"}

    def __init__(self, base: Path, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.base = base
        self._glance: RunGlance | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="ov-identity")
        yield Static("Attempts", classes="heading")
        yield TimelineStrip()
        yield Static("", id="ov-attempts")
        yield Static("Provenance", classes="heading")
        yield Static("", id="ov-provenance")
        yield Static("Weights & Biases", classes="heading")
        yield Static("", id="ov-wandb")
        yield Static("Top findings", classes="heading")
        yield Static("", id="ov-findings")

    def _rows(self, rows: Sequence[tuple[str, str | Text]]) -> Table:
        """Key/value rows; long values wrap under their value column, not under the key."""
        grid = Table.grid(padding=(0, 1))
        grid.add_column(width=12, no_wrap=True, style=self.get_component_rich_style("overview--key"))
        grid.add_column(ratio=1)
        for key, value in rows:
            grid.add_row(key, value if isinstance(value, Text) else data_text(mask_text(value)))
        return grid

    def set_glance(self, quick: RunGlance) -> None:
        """What the quick stage knows, before the full read: the rest says it is being read."""
        reading = "reading…"
        self._glance = quick
        self._identity_from_glance(quick, reading)
        self.query_one(TimelineStrip).show_text(reading)
        started = f"current attempt started {quick.attempt_started_at} (log clock, no zone)" \
            if quick.attempt_started_at else ""
        self.query_one("#ov-attempts", Static).update(data_text(started, newlines=False))
        if quick.provenance is not None:
            self.query_one("#ov-provenance", Static).update(self._provenance(quick.provenance))
        else:
            self.query_one("#ov-provenance", Static).update(reading)
        self.query_one("#ov-wandb", Static).update(reading)
        self.query_one("#ov-findings", Static).update(reading)

    def _identity_from_glance(self, quick: RunGlance, tags: str) -> None:
        reading = "reading…"
        self.query_one("#ov-identity", Static).update(self._rows([
            ("run", relative_name(quick.root, self.base)),
            ("kind / era", quick.kind),
            ("status", quick.status or WAITING),
            ("attempts", attempts_seen(quick)),
            ("last step", last_step_seen(quick)),
            ("scalar tags", tags),
            ("checkpoints", reading),
            ("findings", reading),
        ]))

    def show_tags_so_far(self, count: int) -> None:
        """While the full read goes on: how many tags the part read so far holds."""
        quick = self._glance
        if quick is not None:
            self._identity_from_glance(quick, f"{count} so far, reading…")

    def set_run(self, run: Run, analysed: bool = True) -> None:
        """Fill every section from the run (``analysed`` False: the checks are still running)."""
        counts = {s: sum(1 for f in run.findings if f.severity == s) for s in Severity}
        checking = "running the checks…"
        self.query_one("#ov-identity", Static).update(self._rows([
            ("run", relative_name(run.root, self.base)),
            ("kind / era", kind_label(run)),
            ("status", run.status),
            ("attempts", str(len(run.attempts))),
            ("scalar tags", str(len(run.tags()))),
            ("checkpoints", str(len(run.checkpoints))),
            ("findings", f"{counts[Severity.ERROR]} error, {counts[Severity.WARNING]} warning, "
                         f"{counts[Severity.INFO]} info" if analysed else checking),
        ]))
        self.query_one(TimelineStrip).show(run.attempts, marked_spans(run))
        self.query_one("#ov-attempts", Static).update(self._attempt_text(run))
        self.query_one("#ov-provenance", Static).update(self._provenance(run.provenance))
        self.query_one("#ov-wandb", Static).update(self._wandb_text(run))
        self.query_one("#ov-findings", Static).update(self._findings_text(run) if analysed else Text(checking))

    def _provenance(self, prov: Provenance) -> Table:
        dirty = {True: " (dirty)", False: " (clean)", None: ""}[prov.git_dirty]
        rows = [("git", f"{prov.git_commit or '-'}{dirty}" + (f" on {prov.git_branch}" if prov.git_branch else "")),
                ("host", prov.host or "-"), ("created", prov.created_at or "-"),
                ("command", prov.command or "-")]
        if prov.launch_command:
            rows.append(("launch", prov.launch_command))
        rows.append(("source", prov.source or "(no provenance file)"))
        return self._rows(rows)

    def _attempt_text(self, run: Run) -> Table:
        rows = []
        for a in run.attempts:
            parts = [f"{a.origin}", f"started {started(a)}", f"steps {fmt_range(a.first_step, a.last_step)}"]
            if a.restored_checkpoint:
                # The checkpoint as the run holds it (run-relative), not the cluster path the log names.
                at = f" at step {a.restore_step}" if a.restore_step is not None else ""
                parts.append(f"restarted from {a.restored_checkpoint}{at}")
            else:
                if a.resume_step is not None:
                    parts.append(f"resumed at step {a.resume_step}")
                if a.resumed_from:
                    parts.append(f"from {a.resumed_from}")
            parts.append(f"ended: {a.ended}" + (f" ({a.end_detail})" if a.end_detail else ""))
            rows.append((f"#{a.index}", ", ".join(parts)))
        return self._rows(rows)

    def _wandb_text(self, run: Run) -> Table | Text:
        info = run.wandb
        if not (info.url or info.sync_command or info.run_ids or info.local_dirs):
            return Text("not used by this run")
        rows = [("run ids", ", ".join(info.run_ids) or "-"),
                ("project", "/".join(p for p in (info.entity, info.project) if p) or "-")]
        if info.url:
            rows.append(("link", f"{info.url}   (o open, y copy)"))
        elif info.sync_command:
            # Shown relative to the run (readable, and the same on every machine); y copies the absolute command.
            shown = info.sync_command.replace(run.root.as_posix() + "/", "./")
            rows.append(("never synced", f"{shown}   (y copies it with absolute paths)"))
        if info.local_dirs:
            rows.append(("local", ", ".join(info.local_dirs)))
        return self._rows(rows)

    def _findings_text(self, run: Run) -> Table | Text:
        """The worst findings, one row each; a long message wraps under its own column, not to column 0."""
        if not run.findings:
            return Text("no findings")
        grid = Table.grid(padding=(0, 1))
        grid.add_column(width=7, no_wrap=True)
        grid.add_column(no_wrap=True, style=self.get_component_rich_style("overview--key"))
        grid.add_column(ratio=1)
        for f in run.findings[:6]:
            grid.add_row(Text(f.severity.label, self.get_component_rich_style(SEVERITY_CLASS[f.severity])),
                         data_text(f.code, newlines=False), data_text(mask_text(finding_text(f.message, f.paths)), newlines=False))
        if len(run.findings) > 6:
            grid.add_row("", "", f"… {len(run.findings) - 6} more in the Findings tab (5)")
        return grid
