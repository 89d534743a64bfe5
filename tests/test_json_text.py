"""The one-pass JSON writer gives the bytes of ``json.dumps(clean(doc), indent=2, ensure_ascii=False)``."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pimm_inspect.report.json_text import clean, indented


def _reference(document: object) -> str:
    return json.dumps(clean(document), indent=2, sort_keys=False, ensure_ascii=False)


_TEXT = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=12) | st.sampled_from(
    ["", "a\"b\\c", "\n\t\r\x00\x1b[31m", "\x85\u2028\u00e9\u4e2d", "\udcff name", "1"])
_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e-320, 1e300, 0.1]), _TEXT,
    st.floats(width=64).map(np.float64), st.integers(-(2**40), 2**40).map(np.int64), st.booleans().map(np.bool_),
    st.just(float("nan")).map(np.float64), st.just(PurePosixPath("runs/a b")))
_KEYS = _TEXT | st.integers(-3, 3) | st.sampled_from([None, True, 1.5])
_DOCS = st.recursive(_LEAVES, lambda inner: st.lists(inner, max_size=4) | st.lists(inner, max_size=3).map(tuple)
                     | st.dictionaries(_KEYS, inner, max_size=4), max_leaves=30)


@settings(max_examples=500, deadline=None)
@given(_DOCS)
def test_writer_matches_json_dumps(document: object) -> None:
    assert indented(document) == _reference(document)


def test_equal_keys_merge_as_clean_does() -> None:
    document = {1: "int key", "1": "str key", "a": {}, "b": [], "c": ({"d": float("inf")},)}
    assert indented(document) == _reference(document)
    assert json.loads(indented(document)) == {"1": "str key", "a": {}, "b": [], "c": [{"d": None}]}


def test_a_real_document_matches() -> None:
    import pimm_inspect
    from pimm_inspect.report.json_doc import SCHEMA_VERSION, show_run

    runs_root = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
    runs = pimm_inspect.discover(runs_root)
    document = {"schema_version": SCHEMA_VERSION, "runs": [show_run(pimm_inspect.load_run(r), runs_root) for r in runs]}
    assert len(document["runs"]) > 20
    assert indented(document) == _reference(document)
