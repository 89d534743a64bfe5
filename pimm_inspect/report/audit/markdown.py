"""The report as Markdown for an issue or a chat: the same facts as tables and text, curves as Unicode sparklines.

Every string from a run is in a code span (or a fenced block), so it is never a link, an image, a mention, an
HTML tag or a table cell boundary: ``![x](http://tracker)``, ``@team`` and ``|`` stay text. No link or image is
ever made from run data; GitHub renders no inline SVG, so curves are sparklines per attempt.
"""

from __future__ import annotations

import re

import numpy as np

from ...analysis.secrets import MASK
from .charts import Chart
from .document import Report
from .facts import RunFacts

SPARK = "▁▂▃▄▅▆▇█"
SPARK_COLUMNS = 48
MAX_FILES = 100
"""Files listed per run in Markdown (a comment has a size limit); the HTML page lists every one."""
_TICKS = re.compile(r"`+")


def code(text: str, table: bool = False) -> str:
    """``text`` as an inline code span that holds it literally (inside a table cell, ``|`` escaped as GFM asks)."""
    text = text.replace("\r", "\\r").replace("\n", "\\n")
    if not text:
        return "-"
    longest = max((len(run) for run in _TICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    if table:
        text = text.replace("|", "\\|")
    return f"{fence}{pad}{text}{pad}{fence}"


def block(text: str, info: str = "text") -> str:
    """``text`` as a fenced code block whose fence no line of it can close."""
    longest = max((len(run) for run in _TICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def table(header: list[str], rows: list[list[str]]) -> str:
    """A GFM table; header cells are this module's own words, body cells already formatted."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _steps(first: int | None, last: int | None) -> str:
    if first is None or last is None:
        return "-"
    return str(first) if first == last else f"{first}-{last}"


def _attempts(indices: tuple[int, ...]) -> str:
    """``attempts 1, 2, 3``: GitHub would link a bare ``#1`` to issue 1 of the repository."""
    if not indices:
        return ""
    return ("attempt " if len(indices) == 1 else "attempts ") + ", ".join(map(str, indices))


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{counts[s]} {s}" for s in ("error", "warning", "info") if counts.get(s)) or "none"


def sparkline(x: np.ndarray, y: np.ndarray, x_range: tuple[float, float], y_range: tuple[float, float],
              columns: int = SPARK_COLUMNS) -> str:
    """One line as ``columns`` block characters on a shared step axis (a space where it has no point)."""
    x0, x1 = x_range
    y0, y1 = y_range
    keep = np.isfinite(y)
    x, y = x[keep], y[keep]
    cells = [" "] * columns
    if not x.size:
        return "".join(cells)
    col = np.clip(((x - x0) / max(x1 - x0, 1e-300) * columns).astype(np.int64), 0, columns - 1)
    total = np.bincount(col, weights=y, minlength=columns)
    count = np.bincount(col, minlength=columns)
    span = (y1 - y0) or 1.0
    for i in np.flatnonzero(count).tolist():
        level = int(round((total[i] / count[i] - y0) / span * (len(SPARK) - 1)))
        cells[i] = SPARK[min(max(level, 0), len(SPARK) - 1)]
    return "".join(cells)


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def chart_block(chart: Chart) -> str:
    """A chart as sparklines, one row per attempt (or run), on a shared step axis; only numbers and marks."""
    labels = [f"#{line.attempt}" if line.attempt is not None else f"{i + 1}" for i, line in enumerate(chart.lines)]
    width = max(len(label) for label in labels)
    lines = [f"{label:>{width}} {sparkline(line.x, line.y, chart.x_range, chart.y_range)}"
             for label, line in zip(labels, chart.lines)]
    x0, x1 = chart.x_range
    axis = f"{int(x0)}".ljust(SPARK_COLUMNS - len(f"{int(x1)}")) + f"{int(x1)}"
    lines.append(" " * (width + 1) + axis)
    finite = [line.y[np.isfinite(line.y)] for line in chart.lines]
    finite = [values for values in finite if values.size]
    if finite:
        low, high = min(float(v.min()) for v in finite), max(float(v.max()) for v in finite)
        lines.append(f"{'':>{width}} y {_fmt(low)} .. {_fmt(high)}")
    return block("\n".join(lines))


def _run(run: RunFacts, report: Report) -> list[str]:
    out = [f"## {code(run.label)} ({code(run.status)})", ""]
    out += [table(["fact", "value"], [[label, code(value, True)] for label, value in run.header]), ""]
    out += [f"Note: {code(note)}" for note in run.notes] + ([""] if run.notes else [])
    out += ["### Attempts", ""]
    if run.attempts:
        rows = [[str(a.index), code(a.started, True), _steps(a.first_step, a.last_step), code(a.origin, True),
                 (f"step {a.restore_step}" if a.restore_step is not None else "")
                 + (f" from {code(a.restored_checkpoint, True)}" if a.restored_checkpoint else "") or "-",
                 code(a.ended + (f": {a.end_detail}" if a.end_detail else ""), True),
                 _steps(*a.lost) if a.lost else "-", ", ".join(map(str, a.saved_steps)) or "-"] for a in run.attempts]
        out += [table(["#", "started", "steps logged", "origin", "restored", "ended", "lost", "saved at"], rows), ""]
    else:
        out += ["No attempt could be told from the files.", ""]
    for band in run.bands:
        who = _attempts(band.attempts)
        files = ", ".join(code(p) for p in band.paths)
        out.append(f"- replayed **{band.first_step}-{band.last_step}**: {band.copies} copies"
                   + (f" ({who})" if who else "") + (f" in {files}" if files else ""))
    out += [f"- gap (never logged): {first}-{last}" for first, last in run.gaps]
    out += [""] if run.bands or run.gaps else []
    if run.charts:
        out += [f"### Curves (overlap policy `{report.policy}`)", "", code(run.policy_note), ""]
        for group in run.charts:
            out += [f"#### {code(group.name)}", ""]
            for chart in group.charts:
                out += [f"{code(chart.tag)} ({chart.points} points"
                        + "".join(f"; replayed {a}-{b} ×{c}" for a, b, c in chart.bands)
                        + "".join(f"; attempt {i} resumes at {s}" for s, i in chart.seams) + ")", chart_block(chart), ""]
    if run.charts_note:
        out += [run.charts_note, ""]
    out += [f"### Findings ({_counts(run.counts)})", ""]
    for f in run.findings:
        where = (f" steps {f.steps[0]}-{f.steps[1]}" if f.steps else "") + (
            " " + _attempts(f.attempts) if f.attempts else "")
        out += [f"**{f.severity}** {code(f.code)}: {code(f.message)}{where}", ""]
        if f.explanation:
            out += [block(f.explanation), ""]
        out += [f"- {viewer}: {code(shows)}" for viewer, shows in f.views] + ([""] if f.views else [])
    if run.checkpoints:
        rows = [[code(ck.path, True), code(ck.format, True), code(ck.role, True), "yes" if ck.complete else "NO",
                 "-" if ck.step is None else str(ck.step), code(ck.wandb_id, True), code(ck.cursor, True),
                 "picked" if ck.picked else "",
                 ", ".join(f"attempt {i}" + (f" (step {step})" if step is not None else "") for i, step in ck.restored_by)]
                for ck in run.checkpoints]
        out += ["### Checkpoints", "", table(["path", "format", "role", "complete", "step", "W&B id", "cursor",
                                              "a resume picks", "attempts restarted from it"], rows), ""]
    out += [f"Attempt {i} restarted from {code(p)}, which this run does not hold." for i, p in run.restored_elsewhere]
    out += ["### Provenance and config per attempt", ""]
    if run.provenance:
        rows = [[str(p.index), code(", ".join(p.hosts), True), code(p.command, True),
                 ", ".join(code(c, True) for c in p.configs) or "-", ", ".join(code(f, True) for f in p.files) or "-"]
                for p in run.provenance]
        out += [table(["#", "host (pid)", "command", "config documents", "written to"], rows), ""]
    for d in run.config_diffs:
        out += [f"Config, attempt {d.left} vs attempt {d.right}:", ""]
        if d.rows:
            out += [table(["key", f"attempt {d.left}", f"attempt {d.right}"],
                          [[code(k, True), code(a, True), code(b, True)] for k, a, b in d.rows]), ""]
            out += [f"{d.more} more differing keys.", ""] if d.more else []
        else:
            out += ["the same config.", ""]
    if run.config_doc:
        out += [f"Config of the run: {code(run.config_doc)} (see `pimm-inspect config`).", ""]
    out += ["### W&B", ""]
    if run.wandb_url:
        out += [f"Run page (copy it): {code(run.wandb_url)}", ""]
    if run.wandb_sync:
        out += ["Never synced; upload it with:", "", block(run.wandb_sync, "sh"), ""]
    if run.wandb:
        out += [table(["W&B", "value"], [[label, code(value, True)] for label, value in run.wandb]), ""]
    elif not run.wandb_url and not run.wandb_sync:
        out += ["Not used by this run.", ""]
    out += [f"### Files read ({len(run.sources)})", "",
            table(["file", "kind", "bytes"], [[code(p, True), code(k, True), str(size)]
                                              for p, k, size in run.sources[:MAX_FILES]]), ""]
    if len(run.sources) > MAX_FILES:
        out += [f"{len(run.sources) - MAX_FILES} more files (the HTML report lists every one).", ""]
    return out


def render_markdown(report: Report) -> str:
    """The whole report as Markdown."""
    out = [f"# Training run audit: {code(report.title)}", "",
           f"_Written by pimm-inspect {report.version} at {report.written_at} from the run files alone. "
           f"Secrets are masked (`{MASK}`)"
           + ("; host names, user names, the Slurm account, e-mail addresses, git remotes and absolute paths are "
              "redacted" if report.redacted else "") + "._", ""]
    if report.tree:
        rows = [[code(r.label, True), code(r.status, True), str(r.attempts), "-" if r.last_step is None else str(r.last_step),
                 code(r.best_metric, True), _counts(r.counts)] for r in report.summary]
        out += [f"## Summary: {len(report.runs)} runs", "",
                table(["run", "status", "attempts", "last step", "best metric", "findings"], rows), ""]
        for chart in report.overlays:
            out += [f"### {code(chart.tag)} across runs (newest copy per step)", "", chart_block(chart), ""]
            out += [f"{i + 1}: {code(line.label)}  " for i, line in enumerate(chart.lines)] + [""]
        out += [note for note in (report.overlay_note, report.curves_note) if note]
        out += [""]
    for run in report.runs:
        out += _run(run, report)
    return "\n".join(out).rstrip("\n") + "\n"
