"""The runs screen's footer (``KeysFooter``): the keys Textual's own footer shows, styled alike, mounted once however
many times the bindings are refreshed with the same keys, and again whenever the keys do change."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from textual.app import App, ComposeResult  # noqa: E402
from textual.binding import Binding  # noqa: E402
from textual.widgets import Footer, Input  # noqa: E402
from textual.widgets._footer import FooterKey  # noqa: E402

from pimm_inspect.tui.app import make_app  # noqa: E402
from pimm_inspect.tui.widgets.keys_footer import KeysFooter  # noqa: E402
from tests.tui_support import RUNS, fixed_loader, settle  # noqa: E402


class Keys(App[None]):
    """Two inputs to move the focus between, a key shown only while ``beta_on``, and the footer under test."""

    BINDINGS = [Binding("f1", "alpha", "Alpha"), Binding("f2", "beta", "Beta"), Binding("f3", "hidden", "Hidden",
                                                                                   show=False)]

    def __init__(self, footer: type[Footer]) -> None:
        super().__init__()
        self.footer = footer
        self.beta_on = False

    def compose(self) -> ComposeResult:
        yield Input(id="one")
        yield Input(id="two")
        yield self.footer()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.beta_on if action == "beta" else True


def _keys(app: App[None]) -> list[tuple[str, str, list[str]]]:
    return [(key.key, key.description, sorted(key.classes)) for key in app.screen.query(FooterKey)]


@pytest.mark.asyncio
async def test_the_footer_shows_and_styles_the_keys_textuals_own_footer_does() -> None:
    shown = {}
    for footer in (Footer, KeysFooter):
        app = Keys(footer)
        async with app.run_test(size=(80, 10)) as pilot:
            await pilot.pause()
            await pilot.pause()
            shown[footer] = _keys(app)
    assert shown[KeysFooter] == shown[Footer]
    assert [key for key, _description, _classes in shown[Footer]] == ["f1", "ctrl+p"]  # beta off, hidden never
    assert "-compact" in shown[Footer][-1][2] and "-compact" not in shown[Footer][0][2]  # as Textual styles them


@pytest.mark.asyncio
async def test_the_same_keys_are_not_mounted_again_and_new_keys_are() -> None:
    app = Keys(KeysFooter)
    async with app.run_test(size=(80, 10)) as pilot:
        await pilot.pause()
        await pilot.pause()
        first = list(app.screen.query(FooterKey))
        for target in ("#two", "#one", "#two"):  # each focus change refreshes the bindings: the same keys
            app.query_one(target).focus()
            await pilot.pause()
            await pilot.pause()
        assert list(app.screen.query(FooterKey)) == first  # the very widgets: nothing mounted again
        app.beta_on = True
        app.refresh_bindings()
        await pilot.pause()
        await pilot.pause()
        got = _keys(app)
    assert [key for key, _description, _classes in got] == ["f1", "f2", "ctrl+p"]
    footer = Keys(Footer)
    async with footer.run_test(size=(80, 10)) as pilot:
        footer.beta_on = True
        footer.refresh_bindings()
        await pilot.pause()
        await pilot.pause()
        expected = _keys(footer)
    assert got == expected


@pytest.mark.asyncio
async def test_the_runs_screen_makes_its_keys_once_at_start(monkeypatch) -> None:
    made: list[str] = []
    real = FooterKey.__init__

    def init(self, key, key_display, description, *args, **kwargs):  # every key widget the footer composes
        made.append(description)
        real(self, key, key_display, description, *args, **kwargs)

    monkeypatch.setattr(FooterKey, "__init__", init)
    app = make_app(RUNS, loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        shown = [key.description for key in app.runs_screen.query(FooterKey)]
    assert {"Filter", "Sort", "Mark", "Compare", "Refresh", "Quit"} <= set(shown)
    assert made == shown  # composed once (Textual's footer made them three times: at every focus change)
