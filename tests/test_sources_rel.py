"""``sources._common.rel`` (a string test for the usual case) equals ``relative_to`` with its fallback."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from hypothesis import given, settings
from hypothesis import strategies as st

from pimm_inspect.sources._common import rel

_PART = st.sampled_from(["a", "b", "ab", "run", ".", "..", "", "x.json", "é"])
_TEXT = st.builds(lambda lead, parts, tail: lead + "/".join(parts) + tail, st.sampled_from(["/", "//", "", "///"]),
                  st.lists(_PART, max_size=5), st.sampled_from(["", "/"]))


def _reference(path: PurePosixPath, root: PurePosixPath) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.name


@settings(max_examples=1000, deadline=None)
@given(_TEXT, _TEXT, st.sampled_from([Path, PurePosixPath]))
def test_rel_equals_relative_to(path: str, root: str, kind: type) -> None:
    assert rel(kind(path), kind(root)) == _reference(kind(path), kind(root))


@settings(max_examples=300, deadline=None)
@given(_TEXT, st.lists(_PART, max_size=4))
def test_rel_of_a_path_under_its_root(root: str, below: list[str]) -> None:
    base = Path(root)
    path = base.joinpath(*below) if below else base
    assert rel(path, base) == _reference(path, base)
