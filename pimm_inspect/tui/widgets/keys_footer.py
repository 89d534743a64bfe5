"""Textual's footer, composed again only when the keys it shows changed, each key mounted in its final style.

Textual's ``Footer`` recomposes (removes every key and mounts each anew) after every binding refresh, and a screen
refreshes its bindings on every focus change whether or not the keys change: at start that composed the same eight
keys three times. And every key starts compact (its own default) only to be told by the footer that it is not: two
style passes over each key as it mounts. Together most of the runs table's first screen after the table itself.
Relies on Textual 8.2.8's ``FooterKey`` (pinned in pyproject).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey


class KeysFooter(Footer):
    """A ``Footer`` that skips a recompose when every binding it reads is what it composed last."""

    _composed: tuple[Any, ...] | None = None

    def _shown(self) -> tuple[Any, ...]:
        """Everything ``Footer.compose`` reads: the screen's active bindings (each key's binding, enabled state,
        tooltip and key display, the command palette's too) and the footer's own switches."""
        app = self.app
        bindings = tuple((key, active.binding, active.enabled, active.tooltip, app.get_key_display(active.binding))
                         for key, active in self.screen.active_bindings.items()) if self._bindings_ready else ()
        return (self._bindings_ready, self.show_command_palette, app.ENABLE_COMMAND_PALETTE,
                app.COMMAND_PALETTE_BINDING, self.combine_groups, bindings)

    def compose(self) -> Iterator[Widget]:
        self._composed = self._shown() if self.is_attached else None
        for widget in super().compose():
            bound = getattr(widget, "_reactive_connect", None) or {}
            if isinstance(widget, FooterKey) and bound.get("compact", (None,))[0] is self:
                # The value its binding to the footer's ``compact`` gives it on mount, set now: no restyle then (the
                # command palette's key is not bound: it keeps its own).
                widget.set_reactive(FooterKey.compact, self.compact)
            yield widget

    async def recompose(self) -> None:
        if self.is_attached and self._composed is not None and self._shown() == self._composed:
            return  # the same keys: nothing to mount again
        await super().recompose()
