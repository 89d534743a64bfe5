"""A modal with one finding's explanation and evidence."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ...analysis.secrets import mask_text
from ...model import Finding
from ...report.safe_text import clean, clean_name, finding_text


class FindingScreen(ModalScreen[str | None]):
    """Code, severity, message, steps, files and the explanation of one finding.

    Dismissed with "curves" or "log" when the user wants to see the finding's step range there.
    """

    BINDINGS = [Binding("escape,enter,q", "dismiss", "Close"), Binding("y", "copy", "Copy"),
                Binding("c", "jump('curves')", "Curves"), Binding("l", "jump('log')", "Log")]
    COMPONENT_CLASSES = {"finding--error", "finding--warning", "finding--info"}

    def __init__(self, finding: Finding) -> None:
        super().__init__()
        self.finding = finding

    def compose(self) -> ComposeResult:
        f = self.finding
        with Vertical(id="finding-dialog"):
            yield Static(id="finding-head")
            with VerticalScroll(id="finding-body"):
                yield Static(clean(mask_text(finding_text(f.message, f.paths))), id="finding-message", markup=False)
                evidence = []
                if f.steps:
                    evidence.append(f"steps   {f.steps[0]}-{f.steps[1]}")
                for path in f.paths:
                    evidence.append(f"file    {clean_name(path)}")
                yield Static(clean("\n".join(evidence)) or "no files or steps attached", id="finding-evidence",
                             markup=False)
                yield Static(clean(mask_text(finding_text(f.explanation, f.paths))) or "(no further explanation)", id="finding-explanation",
                             markup=False)
            keys = "escape close   y copy explanation"
            if f.steps:
                keys += "   c show steps in Curves   l show in Log"
            yield Static(keys, id="finding-keys")

    def on_mount(self) -> None:
        f = self.finding
        head = Text()
        head.append(f" {f.severity.label.upper()} ", self.get_component_rich_style(f"finding--{f.severity.label}"))
        head.append(clean(f"  {f.code}", newlines=False))
        self.query_one("#finding-head", Static).update(head)

    def action_jump(self, target: str) -> None:
        """Close and show the finding's steps in the Curves or Log tab."""
        if not self.finding.steps:
            self.notify("this finding is not about a step range", severity="warning")
            return
        self.dismiss(target)

    def action_copy(self) -> None:
        """Copy message and explanation (OSC 52)."""
        f = self.finding
        self.app.copy_to_clipboard(clean(mask_text(finding_text(f"{f.code}: {f.message}\n{f.explanation}", f.paths))))
        self.notify("copied the finding")
