"""Property test: no string from a run file reaches the terminal as a control sequence, whatever it holds."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.terminal_oracle import foreign_controls, render_all, run_with

HOSTILE = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40) | st.sampled_from([
    "loss\x1b]52;c;aGVsbG8=\x1b\\", "\x1b]0;title\x07", "\x1b[2J\x1b[H", "\x9b31m", "\x1bP+q\x1b\\", "[/x]",
    "[bold red]x[/]", "[link=https://example.org]x[/link]", "\u202eevil", "a\rb", "\x00\x7f\x85",
])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=HOSTILE)
def test_every_text_view_prints_file_strings_inert(text: str) -> None:
    for color_system in (None, "truecolor"):
        output = render_all(run_with(text), color_system)
        assert not foreign_controls(output, coloured=color_system is not None), (text, color_system)


def test_the_oracle_sees_a_raw_escape() -> None:
    """Guard against an oracle that passes because it finds nothing."""
    assert foreign_controls("ok \x1b]52;c;x\x07", coloured=True)
    assert foreign_controls("\x1b[31mred", coloured=False)
    assert not foreign_controls("\x1b[31mred\x1b[0m", coloured=True)
