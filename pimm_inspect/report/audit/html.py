"""The report as one self-contained HTML file: Jinja2 templates with autoescaping, inline SVG, the page's own
style and script allowed by hash in a Content-Security-Policy (``assets``)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from ...analysis.secrets import MASK
from .assets import CSP, SCRIPT, STYLE
from .charts import Chart
from .document import Report
from .facts import RunFacts
from .svg import TIMELINE_ATTEMPTS, chart_svg, swatch, timeline_svg

POLICY_TEXT = {
    "all": "every attempt's copy of a replayed step is drawn, each attempt as its own line.",
    "newest": "one value per step, from the newest writer (what TensorBoard's default loader shows).",
    "oldest": "one value per step, from the oldest writer.",
}
STATUSES = ("finished", "running", "crashed", "stopped", "unknown")


def _counts(counts: dict[str, int]) -> Markup:
    parts = [Markup('<span class="sev sev-{0}">{1} {0}</span>').format(sev, counts[sev])
             for sev in ("error", "warning", "info") if counts.get(sev)]
    return Markup(" ").join(parts) if parts else Markup('<span class="muted">none</span>')


def _steps(first: int | None, last: int | None) -> str:
    if first is None or last is None:
        return "-"
    return str(first) if first == last else f"{first}-{last}"


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The template environment: autoescape on for every template, undefined names are errors."""
    env = Environment(loader=FileSystemLoader(Path(__file__).resolve().parent / "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True),
                      undefined=StrictUndefined, trim_blocks=False, lstrip_blocks=False)
    env.globals.update(
        chart_svg=lambda chart, chart_id: Markup(chart_svg(chart, str(chart_id))),
        timeline_svg=lambda run: Markup(timeline_svg(run)),
        swatch=lambda style, width=34: Markup(swatch(int(style), int(width))),
        counts=_counts, steps=_steps, timeline_attempts=TIMELINE_ATTEMPTS, csp=Markup(CSP), style=Markup(STYLE), script=Markup(SCRIPT), mask=MASK)
    env.filters["statusclass"] = lambda status: status if status in STATUSES else "unknown"
    return env


def render_html(report: Report) -> str:
    """The whole page."""
    template = environment().get_template("page.html.j2")
    return template.render(report=report, policy_text=POLICY_TEXT.get(report.policy, ""))


__all__ = ["render_html", "Chart", "RunFacts"]
