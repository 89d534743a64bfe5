"""The literal parser of ``Config:`` dumps (``_dump_literals``) gives exactly what the ``ast`` walk gives, or gives up.

Compared on generated dumps (pimm's shapes, other literal spellings, expressions, statements it must not take, and
damage), on every dump in the fixtures and, when present, in the corpus. Values are compared by ``repr`` (so
``1``, ``1.0`` and ``True`` differ, as do key orders and ``-0.0``).
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pimm_inspect.sources.train_log._dump_literals import parse_literals
from pimm_inspect.sources.train_log.config_dump import _dump_at, parse_dump, parse_dump_ast

ROOT = Path(__file__).resolve().parents[1]
_CORPUS_DIR = os.environ.get("PIMM_INSPECT_CORPUS", "")
"""A real-world corpus (``bench/README.md``), when one is named: its train.logs' dumps are checked too."""
CORPUS = Path(_CORPUS_DIR) if _CORPUS_DIR else None


def _same(text: str) -> bool:
    """Whether the fast parser gave up or agrees with the ``ast`` walk, and ``parse_dump`` agrees with it too."""
    fast = parse_literals(text)
    slow = parse_dump_ast(text)
    assert repr(parse_dump(text)) == repr(slow)
    if fast is not None:
        assert repr(fast) == repr(slow), text
    return fast is not None


# -- generated dumps ------------------------------------------------------------------------------------------

_BLANK = st.sampled_from(["", " ", "  ", "\t", "\n", "\n    ", "\n        ", " \n  ", "\n\n  "])
_NAMES = st.sampled_from(["type", "lr", "data_root", "x", "_", "match", "case", "None_", "dict", "print", "a1",
                          "__debug__", "if", "None", "True", "class", "lambda", "inf", "nan", "é", "r", "b"])
_PLAIN_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="'\\\n\r\x00"), max_size=12)
_ANY_TEXT = st.text(max_size=12)


@st.composite
def _number(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return str(draw(st.integers(-10**30, 10**30)))
    if kind == 1:
        return repr(draw(st.floats(allow_nan=True, allow_infinity=True)))
    if kind == 2:
        return draw(st.sampled_from(["0", "00", "007", "1.", ".5", "1e5", "1E-5", "1.e5", "05.5", "0e0", "1_000",
                                     "0x1F", "0o7", "0b1", "1j", "1.5j", "1e", "1.5.3", "1e999", "-0.0", "- 1",
                                     "-\n1", "--1", "+1", "-True", "1" * 60, "9" * 5000, "1.0" + "0" * 100]))
    if kind == 3:
        return "-" + draw(_number())
    if kind == 4:
        return repr(draw(st.integers(-10**6, 10**6)))
    return repr(draw(st.floats(-1e6, 1e6)))


@st.composite
def _string(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return "'" + draw(_PLAIN_TEXT).replace("'", "") + "'"
    if kind == 1:
        return '"' + draw(_PLAIN_TEXT).replace('"', "") + '"'
    if kind == 2:
        return repr(draw(_ANY_TEXT))
    if kind == 3:
        quote = draw(st.sampled_from(["'", '"', "'''", '"""']))
        return draw(st.sampled_from(["", "r", "b", "f", "u", "rb", "R"])) + quote + draw(_ANY_TEXT) + quote
    if kind == 4:
        return repr(draw(_ANY_TEXT)) + draw(_BLANK) + repr(draw(_ANY_TEXT))  # implicitly joined
    return "'" + draw(st.sampled_from(["a\tb", "a\x0cb", "a\x1ab", "a\x7fb", "a\u2028b", "\ufeff", "é", "#x",
                                       "a\\'b", "\ud800", "a\rb"])) + "'"


def _leaf() -> st.SearchStrategy[str]:
    return st.one_of(
        _number(), _string(), st.sampled_from(["None", "True", "False"]),
        st.sampled_from(["inf", "nan", "x", "foo.bar", "1 + 2", "not x", "f(1)", "dict", "dict()", "dict(**a)",
                         "dict([(1, 2)])", "dict(a)", "{**a}", "[*a]", "...", "lambda: 1", "1 if x else 2",
                         "(yield)", "[i for i in x]", "(1)(2)", "[1][0]", "'a'.upper()", "(((1)))", "type(1)"]))


def _joined(draw: st.DrawFn, parts: list[str], opening: str, closing: str) -> str:
    out = opening + draw(_BLANK)
    for i, part in enumerate(parts):
        out += part + draw(_BLANK)
        if i < len(parts) - 1 or draw(st.booleans()):
            out += "," + draw(_BLANK)
    return out + closing


@st.composite
def _compound(draw: st.DrawFn, children: st.SearchStrategy[str]) -> str:
    kind = draw(st.integers(0, 5))
    items = draw(st.lists(children, max_size=4))
    if kind == 0:
        return _joined(draw, items, "[", "]")
    if kind == 1:
        if len(items) == 1 and draw(st.booleans()):
            return "(" + draw(_BLANK) + items[0] + draw(_BLANK) + ")"  # parenthesized, not a tuple
        return _joined(draw, items, "(", ")")
    if kind == 2:
        return _joined(draw, items, "{", "}") if items else "{}"
    if kind == 3:
        keys = draw(st.lists(st.one_of(_string(), _number(), st.sampled_from(["None", "True", "False", "(1, 2)",
                                                                               "[1]", "x"])),
                             min_size=len(items), max_size=len(items)))
        return _joined(draw, [k + draw(_BLANK) + ":" + draw(_BLANK) + v for k, v in zip(keys, items)], "{", "}")
    names = draw(st.lists(_NAMES, min_size=len(items), max_size=len(items)))
    spacer = draw(st.sampled_from(["=", " = ", "=\n", "\n="]))
    return _joined(draw, [n + spacer + v for n, v in zip(names, items)], "dict(", ")")


_VALUE = st.recursive(_leaf(), lambda children: _compound(children), max_leaves=25)


@st.composite
def _dump(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.integers(0, 9))
        name = draw(st.one_of(_NAMES, st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)))
        if kind <= 6:
            lines.append(name + draw(st.sampled_from([" = ", "=", " =", "\t=\t"])) + draw(_VALUE))
        elif kind == 7:
            lines.append(draw(st.sampled_from(["", "   ", "\t", "# a comment", "import os", "x: int = 1",
                                               "x = y = 1", "x = 1; y = 2", "  x = 1", "x += 1", "x == 1",
                                               "if x:\n    y = 1", "x = 1 \\\n + 2", "a.b = 1", "x =", "x = -"])))
        elif kind == 8:
            lines.append(name + " = " + draw(_VALUE) + draw(st.sampled_from(["  # note", " ", "\t", ",", ")"])))
        else:
            lines.append(draw(st.text(st.sampled_from("ab =()[]{},:'\"\n\t\\#-.0123456789é\x00\r"), max_size=30)))
    return draw(st.sampled_from(["", "\n"])) + "\n".join(lines) + draw(st.sampled_from(["", "\n", "\n\n", "  "]))


_PIMM_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
              st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\\'"), max_size=8)),
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True), children,
                                               max_size=4)),
    max_leaves=30)


@st.composite
def _damaged(draw: st.DrawFn) -> str:
    """A generated dump, or one written like pimm's, with a few characters put in."""
    if draw(st.booleans()):
        text = draw(_dump())
    else:
        text = "\n".join(f"k{i} = {_pimm_style(v, 0)}" for i, v in enumerate(draw(st.lists(_PIMM_VALUES, max_size=3))))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(["\\", "#", "\r", "\x0c", "'", '"', "\n", " ", "\t", ",", "(", ")",
                                                 "[", "]", "{", "}", "-", "=", ":", "é", "\x00", "\ud800", "1",
                                                 "e", ".", "x"])) + text[at:]
    return text


_SETTINGS = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(_dump())
@example("")
@example("x = dict(a=1, a=2)")
@example("x = {1: 'a', 1.0: 'b', True: 'c'}")
@example("x = 1\nx = 2\ny = -0.0")
@example("x = dict(\n    a=dict(\n        b=[\n            1,\n            (2,),\n            ()\n        ]))\n")
@example("x = (" * 45 + "1" + ")" * 45)
@example("x = [" * 45 + "]" * 45)
def test_generated_dumps_agree_with_the_ast_walk(text: str) -> None:
    _same(text)


@_SETTINGS
@given(_damaged())
def test_damaged_dumps_agree_with_the_ast_walk(text: str) -> None:
    _same(text)


@settings(max_examples=300, deadline=None)
@given(_PIMM_VALUES)
def test_values_written_like_pimm_take_the_fast_path(value: object) -> None:
    """A value written the way pimm's pretty text writes it (``dict(k=v)``, lists, plain quoted strings) is read
    by the fast parser, equal to the ``ast`` walk."""
    text = f"cfg = {_pimm_style(value, 0)}\nother = 1\n"
    assert _same(text) or "inf" in text  # only an infinite float (written ``inf``, a name) is left to ``ast``


def _pimm_style(value: object, indent: int) -> str:
    pad = " " * (indent + 4)
    if isinstance(value, dict):
        if not value or any(k in ("if", "None", "True", "False", "class", "def", "for", "in", "is", "or", "and",
                                  "not", "as", "del", "try", "with", "from", "pass", "else", "elif", "while",
                                  "break", "raise", "yield", "async", "await", "assert", "global", "import",
                                  "lambda", "return", "except", "finally", "continue", "nonlocal", "__debug__")
                            for k in value):
            return "dict()" if not value else "{" + ", ".join(f"'{k}': {_pimm_style(v, indent)}"
                                                              for k, v in value.items()) + "}"
        return "dict(\n" + ",\n".join(f"{pad}{k}={_pimm_style(v, indent + 4)}" for k, v in value.items()) + ")"
    if isinstance(value, list):
        return "[\n" + ",\n".join(pad + _pimm_style(v, indent + 4) for v in value) + "\n" + " " * indent + "]"
    if isinstance(value, str):
        return "'" + value + "'"
    return repr(value)


# -- real dumps -------------------------------------------------------------------------------------------------

_ATTEMPT = re.compile(rb"(?m)^\[[^\n]*=> Loading config")


def _dumps_in(paths: list[Path]) -> list[tuple[str, str]]:
    out = []
    for path in paths:
        data = path.read_bytes()
        for match in _ATTEMPT.finditer(data):
            text = _dump_at(io.BytesIO(data), match.start())[0]
            if text is not None:
                out.append((str(path), text))
    return out


def test_every_fixture_dump_takes_the_fast_path_with_the_same_values() -> None:
    dumps = _dumps_in(sorted(ROOT.glob("fixtures/**/train.log")))
    assert len(dumps) >= 30
    for where, text in dumps:
        assert parse_literals(text) is not None, where
        assert _same(text), where


@pytest.mark.skipif(CORPUS is None or not CORPUS.is_dir(), reason="no corpus named by $PIMM_INSPECT_CORPUS")
def test_every_corpus_dump_agrees_with_the_ast_walk() -> None:
    assert CORPUS is not None
    logs = [Path(d) / f for d, _, files in os.walk(CORPUS) for f in files if f.endswith(".log")]
    for where, text in _dumps_in([p for p in logs if p.stat().st_size < (64 << 20)]):
        _same(text)
