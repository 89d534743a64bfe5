"""The Runs screen's preview pane on wide terminals: the highlighted run's attempts and findings."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from ...evidence import RunRow
from ...model import Run
from ...report.safe_text import clean, finding_text
from ..facts import fmt_step, kind_label

MAX_FINDINGS = 8


def top_finding(run: Run | RunRow) -> str:
    """The worst finding's message (first of the worst severity), masked and cleaned; '' when clean."""
    if not run.findings:
        return ""
    from ...analysis.secrets import mask_text  # wide terminals only: its patterns cost the UI's start ~5-10 ms

    worst = max(f.severity for f in run.findings)
    finding = next(f for f in run.findings if f.severity == worst)
    return clean(mask_text(finding_text(finding.message, finding.paths)), newlines=False)


class RunPreview(Static):
    """What the highlighted run is, without opening it (the screen sets it on every highlight)."""

    COMPONENT_CLASSES = {"preview--heading", "preview--error", "preview--warning", "preview--info", "preview--dim"}

    def show_run(self, name: str, run: RunRow | None) -> None:
        """Describe ``run`` (None: still loading)."""
        out = Text(no_wrap=False)
        out.append(clean(name, newlines=False) + "\n", self.get_component_rich_style("preview--heading"))
        if run is None:
            out.append("loading…", self.get_component_rich_style("preview--dim"))
            self.update(out)
            return
        from ...analysis.secrets import mask_text  # the preview shows on wide terminals only (see ``top_finding``)

        out.append(clean(f"{kind_label(run)}  {run.status}  {run.attempts} attempt(s)", newlines=False) + "\n")
        for a in run.attempt_facts:
            line = f"#{a.index} {a.origin}  steps {fmt_step(a.first_step)}-{fmt_step(a.last_step)}  ended {a.ended}"
            out.append(clean(line, newlines=False) + "\n")
        if run.command:
            out.append("\n")
            out.append(clean(mask_text(run.command), newlines=False) + "\n", self.get_component_rich_style("preview--dim"))
        out.append("\n")
        if not run.findings:
            out.append("no findings", self.get_component_rich_style("preview--dim"))
        for f in sorted(run.findings, key=lambda f: -f.severity)[:MAX_FINDINGS]:
            out.append(f"{f.severity.label:<8}", self.get_component_rich_style(f"preview--{f.severity.label}"))
            out.append(clean(f.code, newlines=False) + "\n", self.get_component_rich_style("preview--dim"))
            out.append("  " + clean(mask_text(finding_text(f.message, f.paths)), newlines=False) + "\n")
        if len(run.findings) > MAX_FINDINGS:
            out.append(f"… {len(run.findings) - MAX_FINDINGS} more (enter opens the run)",
                       self.get_component_rich_style("preview--dim"))
        self.update(out)

