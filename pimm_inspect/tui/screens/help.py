"""The help screen: every key binding, by screen."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

FILTER_SYNTAX = ("Filters: text = substring (case-insensitive), !text = does not contain, /regex/ = regular expression;"
                 " on the Runs table also cfg.<key> OP value, OP one of = != > < >= <= ~ (~ = contains),"
                 " numbers compared as numbers (e.g. cfg.optimizer.lr>0.001).")


TAB_TITLES = {"overview": "Overview tab", "curves": "Curves tab", "config": "Config tab",
              "checkpoints": "Checkpoints tab", "findings": "Findings tab", "log": "Log tab"}


def as_bindings(bindings: Iterable[BindingType]) -> list[Binding]:
    """A BINDINGS list as Binding objects (a ``(key, action[, description])`` tuple becomes its Binding)."""
    return [b if isinstance(b, Binding) else Binding(*b) for b in bindings]


def label_of(binding: Binding) -> str:
    """One label per action: the tooltip when it already says what the description says, else both."""
    label = binding.description or binding.action
    tip = binding.tooltip
    if not tip:
        return label
    if label.lower().rstrip("+-←→ ") in tip.lower():
        return tip[0].upper() + tip[1:]
    return f"{label}: {tip}"


def _rows(bindings: list[Binding], key_display: Callable[[Binding], str]) -> list[tuple[str, str]]:
    seen: dict[str, list[str]] = {}
    for b in bindings:
        seen.setdefault(label_of(b), []).append(key_display(b))
    return [(" ".join(dict.fromkeys(keys)), label) for label, keys in seen.items()]


def run_screen_sections(bindings: list[Binding], tab_actions: dict[str, tuple[str, ...]],
                        current: str) -> list[tuple[str, list[Binding]]]:
    """The Run screen's keys grouped by tab, the current tab first, then the keys every tab has."""
    def action_name(binding: Binding) -> str:
        return binding.action.split("(")[0]

    by_tab: dict[str, list[Binding]] = {}
    general: list[Binding] = []
    for binding in bindings:
        tabs = tab_actions.get(action_name(binding))
        if tabs is None:
            general.append(binding)
        for tab in tabs or ():
            by_tab.setdefault(tab, []).append(binding)
    order = [current] + [t for t in TAB_TITLES if t != current]
    sections = [(TAB_TITLES[t] + (" (this tab)" if t == current else ""), by_tab[t]) for t in order if t in by_tab]
    if current not in by_tab:  # a tab without keys of its own: the keys that work on it come first
        return [(f"{TAB_TITLES.get(current, current)} (this tab): every tab's keys", general)] + sections
    return sections + [("Every tab", general)]


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
        parts: list[RenderableType] = []
        for title, bindings in self.sections:
            parts.append(Text(title, heading))
            # A long label wraps under the label column, never back to column 0.
            grid = Table.grid(padding=(0, 1), pad_edge=True)
            grid.add_column(width=12, no_wrap=True, style=key_style)
            grid.add_column(ratio=1)
            for keys, label in _rows(bindings, self._key_display):
                grid.add_row(keys, label)
            parts += [grid, Text("")]
        parts.append(Text(FILTER_SYNTAX))
        self.query_one("#help-text", Static).update(Group(*parts))

    def _key_display(self, binding: Binding) -> str:
        if binding.key_display:
            return binding.key_display
        return ",".join(self.app.get_key_display(Binding(k.strip(), "")) for k in binding.key.split(","))
