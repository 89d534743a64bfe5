"""The help screen: every key binding, by screen."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

FILTER_SYNTAX = "Filters: text = substring (case-insensitive), !text = does not contain, /regex/ = regular expression."


def _rows(bindings: list[Binding], key_display) -> list[tuple[str, str]]:
    seen: dict[str, list[str]] = {}
    for b in bindings:
        label = b.description or b.action
        if b.tooltip:
            label = f"{label}: {b.tooltip}"
        seen.setdefault(label, []).append(key_display(b))
    return [(" ".join(dict.fromkeys(keys)), label) for label, keys in seen.items()]


class HelpScreen(ModalScreen[None]):
    """Lists the bindings of each screen (the same ones the footer and command palette show)."""

    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]
    COMPONENT_CLASSES = {"help--heading", "help--key"}

    def __init__(self, sections: list[tuple[str, list[Binding]]]) -> None:
        super().__init__()
        self.sections = sections

    def compose(self) -> ComposeResult:
        with Vertical(id="help-dialog"):
            yield Static("Keys", id="help-title")
            with VerticalScroll(id="help-body"):
                yield Static(id="help-text")
            yield Static("escape close   ctrl+p command palette (every action is listed there)", id="help-keys")

    def on_mount(self) -> None:
        heading = self.get_component_rich_style("help--heading")
        key_style = self.get_component_rich_style("help--key")
        text = Text()
        for title, bindings in self.sections:
            text.append(f"{title}\n", heading)
            for keys, label in _rows(bindings, self._key_display):
                text.append(f"  {keys:<12}", key_style)
                text.append(f"{label}\n")
            text.append("\n")
        text.append(FILTER_SYNTAX)
        self.query_one("#help-text", Static).update(text)

    def _key_display(self, binding: Binding) -> str:
        if binding.key_display:
            return binding.key_display
        return ",".join(self.app.get_key_display(Binding(k.strip(), "")) for k in binding.key.split(","))
