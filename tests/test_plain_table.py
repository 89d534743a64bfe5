"""The ``ls`` table printed without Rich's layout is byte for byte what Rich prints."""

from __future__ import annotations

import io
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.text import Text

import pimm_inspect
from pimm_inspect.report.text import plain_runs_table, runs_table, runs_table_row

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def _rich(rows: list[tuple[Text, ...]], width: int) -> str:
    out = io.StringIO()
    Console(file=out, width=width, no_color=None, highlight=False, soft_wrap=False, markup=False,
            emoji=False).print(runs_table(rows))
    return out.getvalue()


def test_every_fixture_table_is_what_rich_prints():
    rows = [runs_table_row(pimm_inspect.load_run(p), RUNS) for p in pimm_inspect.discover(RUNS)]
    for width in (140, 200):
        assert plain_runs_table(rows, width) == _rich(rows, width)
    assert plain_runs_table(rows, 80) is None  # too wide: Rich shrinks and wraps it


_CHARS = list("abcXYZ019-_./ ") + ["é", "日本", "e\u0301", "🙂", "ß"]
_CELL = st.lists(st.sampled_from(_CHARS), max_size=30).map("".join)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(*[_CELL] * 8), min_size=1, max_size=6), st.integers(40, 220))
def test_plain_table_matches_rich_or_steps_aside(cells, width):
    rows = [tuple(Text(c, style="bold" if i == 3 else "") for i, c in enumerate(row)) for row in cells]
    plain = plain_runs_table(rows, width)
    if plain is not None:
        assert plain == _rich(rows, width)
