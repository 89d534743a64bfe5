"""Rich renderables for the text output of ``ls``, ``show`` and ``check``.

Every string that comes from a run file (names, tags, paths, messages, provenance) goes through
``safe_text.data_text``/``clean``: it is shown with its control characters escaped and is never read as markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ..analysis.secrets import mask_text
from ..analysis.summary import restored_by, restored_text, run_row
from ..evidence import RunRow
from ..model import Attempt, Finding, Run, Severity
from .json_doc import run_notes, scalar_summary
from .ls_columns import Column, default_columns, run_label
from .safe_text import clean, data_text, finding_text, name_text, shorten

SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
STATUS_STYLE = {"finished": "green", "running": "bold blue", "crashed": "bold red", "stopped": "yellow",
                "unknown": "dim"}


def _one_line(value: object, style: str = "") -> Text:
    """A table cell or a head field: file-derived, single line, never markup."""
    return data_text(value, style, newlines=False)


def counts_cell(run: Run | RunRow) -> Text:
    """``1E 2W`` (each count in its severity's style), '-' when the run has no finding: the ``ls`` findings cell."""
    row = run if isinstance(run, RunRow) else run_row(run)
    text = Text()
    for n, sev, letter in ((row.errors, Severity.ERROR, "E"), (row.warnings, Severity.WARNING, "W"),
                           (row.infos, Severity.INFO, "I")):
        if n:
            text.append(f"{n}{letter} ", style=SEVERITY_STYLE[sev])
    return text if text.plain else Text("-", style="dim")


def runs_table_row(run: Run | RunRow, base: Path, columns: Sequence[Column] | None = None) -> tuple[Text, ...]:
    """One ``ls`` row, from the run's row (``analysis.summary.run_row``; cached rows are the same): the cells of
    ``columns`` (``ls --columns``; the default table's without)."""
    row = run if isinstance(run, RunRow) else run_row(run)
    cells = []
    for column in columns if columns is not None else default_columns():
        if column.cell is None:  # the findings counts, each in its severity's colour
            cells.append(counts_cell(row))
        elif column.key == "status":
            cells.append(Text(column.cell(row, base), STATUS_STYLE.get(row.status, "")))
        else:
            cells.append(Text(column.cell(row, base)))
    return tuple(cells)


RUNS_COLUMNS = tuple(c.header for c in default_columns())
"""The default table's headers: ``run kind era status attempts last step W&B id findings``."""


def runs_table(rows: list[tuple[Text, ...]], headers: Sequence[str] = RUNS_COLUMNS) -> Table:
    """The ``ls`` table from ``runs_table_row`` rows."""
    table = Table(box=None, header_style="bold", pad_edge=False)
    longest = max((len(row[0]) for row in rows), default=3)
    table.add_column(headers[0], no_wrap=True, min_width=min(longest, 40))
    for column in headers[1:]:
        table.add_column(column, no_wrap=column not in ("W&B id",))
    for row in rows:
        table.add_row(*row)
    return table


def plain_runs_table(rows: list[tuple[Text, ...]], width: int, headers: Sequence[str] = RUNS_COLUMNS) -> str | None:
    """``runs_table`` as uncoloured text, laid out as Rich lays it out when every column gets its natural width
    within ``width`` cells (each cell left-aligned and padded, two spaces between columns); None when Rich must
    shrink or wrap something. Rich's layout costs ~0.4 ms a row: a tree of thousands is printed this way."""
    from rich.cells import cell_len

    if not rows or any(len(row) != len(headers) for row in rows):
        return None
    columns = list(zip(*((cell.plain for cell in row) for row in rows)))
    if any(not text.isprintable() for column in columns for text in column):
        return None  # newlines, tabs, other controls: Rich's own rules
    widths = [max(cell_len(header), *map(cell_len, column)) for header, column in zip(headers, columns)]
    widths[0] = max(widths[0], min(max(len(row[0]) for row in rows), 40))
    if sum(widths) + 2 * (len(widths) - 1) > width:
        return None
    lines = []
    for cells in [tuple(headers), *zip(*columns)]:
        lines.append("  ".join(text + " " * (w - cell_len(text)) for text, w in zip(cells, widths)))
    return "\n".join(lines) + "\n"


def _started(attempt: Attempt) -> str:
    if not attempt.started_at:
        return "-"
    return str(attempt.started_at) + (" UTC" if attempt.started_at_utc else "")


def run_summary(run: Run, base: Path) -> Group:
    """The ``show`` text view of one run."""
    parts: list[RenderableType] = []
    head = Text()
    head.append(run_label(run, base), style="bold")
    head.append(f"  {clean(run.kind, newlines=False)}")
    if run.era:
        head.append(f" {clean(run.era, newlines=False)}")
    head.append("  ")
    head.append(clean(run.status, newlines=False), style=STATUS_STYLE.get(run.status, ""))
    parts.append(head)
    prov = run.provenance
    if prov.source:
        dirty = {True: " (dirty)", False: " (clean)", None: ""}[prov.git_dirty]  # None: not recorded
        parts.append(_one_line(f"git {prov.git_commit[:12] if prov.git_commit else '-'}{dirty}  "
                               f"host {prov.host or '-'}  created {prov.created_at or '-'}  [{prov.source}]",
                               style="dim"))
    if prov.launch_command:
        parts.append(_one_line(f"launch {mask_text(prov.launch_command)}", style="dim"))
    if run.wandb.url:
        parts.append(_one_line(f"W&B {run.wandb.url}"))
    elif run.wandb.run_ids:
        parts.append(_one_line(f"W&B run id {', '.join(run.wandb.run_ids)} (project {run.wandb.project or '?'})"))
    if run.attempts:
        table = Table(title="attempts", title_justify="left", box=None, header_style="bold")
        for column in ("#", "started", "steps", "origin", "ended", "lost", "restored"):
            table.add_column(column)
        for a in run.attempts:
            steps = f"{a.first_step}-{a.last_step}" if a.first_step is not None else "-"
            origin = a.origin + (f" @{a.resume_step}" if a.resume_step is not None else "")
            told = a.end_detail and not a.end_detail.startswith("log stops")  # evidence, not the generic guess
            ended = a.ended + (f": {shorten(mask_text(a.end_detail), 120)}" if told and a.end_detail else "")
            lost = f"{a.lost_steps[0]}-{a.lost_steps[1]}" if a.lost_steps else "-"
            restored = (f"{a.restored_checkpoint} @{a.restore_step}" if a.restored_checkpoint and a.restore_step is not None
                        else a.restored_checkpoint or a.resumed_from or "-")
            table.add_row(*(_one_line(cell) for cell in (a.index, _started(a), steps, origin, ended, lost, restored)))
        parts.append(table)
        parts += attempt_context_lines(run)
    summary = scalar_summary(run)
    if summary:
        table = Table(title=f"scalars ({len(summary)} tags)", title_justify="left", box=None, header_style="bold")
        for column in ("tag", "points", "steps", "source"):
            table.add_column(column)
        for tag, info in list(summary.items())[:30]:
            table.add_row(*(_one_line(cell) for cell in (name_text(tag), info["points"],
                                                         f"{info['first_step']}-{info['last_step']}", info["source"])))
        if len(summary) > 30:
            table.add_row(Text(f"... {len(summary) - 30} more"), "", "", "")
        parts.append(table)
    if run.checkpoints:
        table = Table(title="checkpoints", title_justify="left", box=None, header_style="bold")
        for column in ("path", "format", "complete", "step", "W&B id", "cursor", "resume", "restored by"):
            table.add_column(column)
        restores = restored_by(run)
        for ck in run.checkpoints:
            table.add_row(_one_line(name_text(ck.path)), _one_line(ck.format), Text("yes") if ck.complete else Text("no", style="red"),
                          Text("-" if ck.global_step is None else str(ck.global_step)), _one_line(ck.wandb_run_id or "-"),
                          _one_line("-" if ck.wandb_cursor is None else f"{ck.wandb_cursor_key}={ck.wandb_cursor}"),
                          Text("<- picked" if ck.resume_candidate else ""),
                          _one_line(restored_text(restores[ck.path]) if ck.path in restores else ""))
        parts.append(table)
    if run.resume is not None:
        parts += resume_lines(run)
    for result in run.eval_results:
        what = ", ".join(x for x in (result.split, result.checkpoint) if x)
        values = "  ".join(f"{name} {value:.4g}" for name, value in result.metrics[:8])
        more = f"  (+{len(result.metrics) - 8} more)" if len(result.metrics) > 8 else ""
        parts.append(_one_line(f"eval {result.stamp}" + (f" ({what})" if what else "") + f": {values or '-'}{more}"))
    notes = run_notes(run)
    if notes:
        parts.append(Text("notes", style="bold"))
        for note in notes:
            parts.append(Padding(data_text("- " + note), (0, 0, 0, 1)))
    if run.findings:
        parts.append(Text("findings: ", style="bold") + counts_cell(run) + Text("(run `pimm-inspect check` for details)", style="dim"))
    return Group(*parts)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    whole = int(round(seconds))
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}" if whole >= 60 else f"{seconds:.1f}s"


_CONTEXT_NAMES = {"job_id": "job", "array_index": "array", "nodes": "nodes", "partition": "partition", "gpus": "GPUs",
                  "elapsed_s": "elapsed", "lost_wall_s": "lost time", "lost_gpu_hours": "lost GPU-h"}


def attempt_context_lines(run: Run) -> list[RenderableType]:
    """Per attempt: Slurm job (and array index), nodes, partition, GPUs, elapsed time and the compute its lost
    steps cost, each fact's file in the last column; then the run's lost-compute total. Empty when no file says."""
    if not any(a.context_sources for a in run.attempts):
        return []
    table = Table(title="attempt context", title_justify="left", box=None, header_style="bold")
    for column in ("#", "job", "nodes", "partition", "GPUs", "elapsed", "lost time", "lost GPU-h", "from"):
        table.add_column(column)
    for a in run.attempts:
        job = (a.job_id or "-") + (f"_{a.array_index}" if a.array_index is not None else "")
        files: dict[str, list[str]] = {}
        for name, path in a.context_sources:
            files.setdefault(name_text(path), []).append(_CONTEXT_NAMES.get(name, name))
        origin = "; ".join(f"{path} ({', '.join(names)})" for path, names in files.items())
        table.add_row(*(_one_line(cell) for cell in (
            a.index, job, ",".join(a.nodes) or "-", a.partition or "-", "-" if a.gpus is None else a.gpus,
            _duration(a.elapsed_s), _duration(a.lost_wall_s),
            "-" if a.lost_gpu_hours is None else f"{a.lost_gpu_hours:.4g}", origin or "-")))
    lines: list[RenderableType] = [table]
    summary = run.summary
    if summary is not None and (summary.lost_steps or summary.failed_requeues):
        parts = [f"{summary.lost_steps} step(s)"]
        if summary.lost_steps:
            parts.append(_duration(summary.lost_wall_s) if summary.lost_wall_s is not None else "time unknown")
            if summary.lost_gpu_hours is not None:
                parts.append(f"{summary.lost_gpu_hours:.4g} GPU-h")
        if summary.failed_requeues:
            parts.append(f"{summary.failed_requeues} failed requeue(s) (their time is not recorded)")
        lines.append(Text("lost compute: ", style="bold") + _one_line(", ".join(parts)))
    return lines


def resume_lines(run: Run) -> list[RenderableType]:
    """``resume with`` line: the exact option (shell-quoted), what its path is relative to, and a warning when
    the resume would go back past a newer incomplete checkpoint."""
    hint = run.resume
    assert hint is not None
    step = f" (step {hint.step})" if hint.step is not None else ""
    lines: list[RenderableType] = [
        Text("resume with: ", style="bold") + _one_line(hint.option),
        _one_line(f"  picks {name_text(hint.checkpoint)}{step}", style="dim"),
        _one_line(f"  path relative to {hint.path_base}", style="dim")]
    if hint.newer_incomplete:
        lines.append(Text("  warning: ", style="yellow") + _one_line(
            f"{name_text(hint.checkpoint)} is older than the incomplete {', '.join(map(name_text, hint.newer_incomplete))}"
            "; the resume goes back to it and retrains the steps after it"))
    return lines


def _shown(run: Run, min_severity: Severity) -> tuple[list[Finding], Text | None]:
    """The findings at or above ``min_severity``, and the line to print when there is none."""
    shown = [f for f in run.findings if f.severity >= min_severity]
    if shown:
        return shown, None
    below = len(run.findings)
    if not below:
        return shown, Text("  no findings", style="green")
    return shown, Text(f"  no findings at {min_severity.label} or above; {below} below", style="green")


def findings_view(run: Run, base: Path, min_severity: Severity = Severity.INFO, explain: bool = True) -> Group:
    """The ``check`` text view: the run's findings, worst first, with explanations."""
    parts: list[RenderableType] = [Text(run_label(run, base), style="bold")]
    shown, empty = _shown(run, min_severity)
    if empty is not None:
        parts.append(empty)
    for f in shown:
        grid = Table.grid(padding=(0, 1))
        grid.add_column(width=1)
        grid.add_column(no_wrap=True)
        grid.add_column(no_wrap=True)
        grid.add_column(ratio=1)
        grid.add_row("", Text(f"{f.severity.label:<7}", style=SEVERITY_STYLE[f.severity]),
                     _one_line(f.code, style="bold"), data_text(mask_text(finding_text(f.message, f.paths)), newlines=False))  # one line
        parts.append(grid)
        if explain and f.explanation:
            parts.append(Padding(data_text(mask_text(finding_text(f.explanation, f.paths)), style="dim"), (0, 0, 0, 6)))
    return Group(*parts)


def findings_brief(run: Run, base: Path, min_severity: Severity = Severity.INFO) -> list[Text]:
    """``check --brief``: one unwrapped, unpadded line per finding (``PATH SEVERITY CODE MESSAGE``), for grep;
    none for a run without findings at ``min_severity`` (``brief_empty_note`` says so, for stderr)."""
    label = run_label(run, base)
    shown, empty = _shown(run, min_severity)
    if empty is not None:
        return []
    return [_finding_line(label, f) for f in shown]


def _finding_line(label: str, f: Finding) -> Text:
    line = Text(label + " ")
    line.append(f.severity.label, style=SEVERITY_STYLE[f.severity])
    line.append(" ")
    line.append(clean(f.code, newlines=False), style="bold")
    line.append(" " + clean(mask_text(finding_text(f.message, f.paths)), newlines=False))
    return line


def finding_line(run: Run, base: Path, f: Finding) -> Text:
    """One ``PATH SEVERITY CODE MESSAGE`` line (``check --brief``, ``check --watch``)."""
    return _finding_line(run_label(run, base), f)


def stalled_line(run: Run, base: Path, detail: str) -> Text:
    """``PATH stalled DETAIL`` (``check --stalled-after``): a run that has not ended logged nothing for too long."""
    line = Text(run_label(run, base) + " ")
    line.append("stalled", style="bold red")
    line.append(" " + clean(detail, newlines=False))
    return line


def brief_empty_note(run: Run, base: Path, min_severity: Severity = Severity.INFO) -> str | None:
    """``PATH no findings`` (or ``... at error or above; N below``) for a run ``findings_brief`` prints nothing of."""
    _shown_findings, empty = _shown(run, min_severity)
    return None if empty is None else f"{run_label(run, base)} {empty.plain.strip()}"
