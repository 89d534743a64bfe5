"""Write docs/api.md, the Python API reference, from the code: the package's functions (``pimm_inspect.__all__``)
and every dataclass of ``pimm_inspect/model.py`` with its fields, types, defaults and attribute docstrings.

    python docs/make_api.py            # rewrite docs/api.md
    python docs/make_api.py --check    # exit 1 when docs/api.md is not what the code gives

``tests/test_api_reference.py`` runs the check, so the reference cannot drift from the dataclasses.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "pimm_inspect" / "model.py"
OUT = ROOT / "docs" / "api.md"
FIRST = ("Run", "Attempt", "Finding", "CheckpointInfo", "ReplayedRange")
"""The classes users reach for first; the other dataclasses follow in the file's order."""


def _cell(text: str) -> str:
    """One Markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _docstring_of(node: ast.AST) -> str:
    return inspect.cleandoc(ast.get_docstring(node, clean=False) or "") if isinstance(
        node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)) else ""


def _fields(cls: ast.ClassDef) -> list[tuple[str, str, str, str]]:
    """(name, type, default, docstring) of each annotated field, with the string literal that follows it."""
    out = []
    body = cls.body
    for i, node in enumerate(body):
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        doc = ""
        following = body[i + 1] if i + 1 < len(body) else None
        if isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant) \
                and isinstance(following.value.value, str):
            doc = inspect.cleandoc(following.value.value)
        default = ""
        if node.value is not None:
            default = ast.unparse(node.value)
            if isinstance(node.value, ast.Call) and ast.unparse(node.value.func) == "field":
                kw = {k.arg: k.value for k in node.value.keywords}
                default = (f"{ast.unparse(kw['default_factory'])}()" if "default_factory" in kw
                           else ast.unparse(kw["default"]) if "default" in kw else "")
        out.append((node.target.id, ast.unparse(node.annotation), default, doc))
    return out


def _methods(cls: ast.ClassDef) -> list[str]:
    """One bullet per public method or property: its signature and the first paragraph of its docstring."""
    out = []
    for node in cls.body:
        if not isinstance(node, ast.FunctionDef) or node.name.startswith("_"):
            continue
        decorators = {ast.unparse(d) for d in node.decorator_list}
        args = node.args
        args.args = [a for a in args.args if a.arg not in ("self", "cls")]
        returns = f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""
        doc = _docstring_of(node).split("\n\n")[0]
        if "property" in decorators:
            head = f"`{node.name}`{returns.replace(' -> ', ': ', 1)} (property)"
        else:
            head = f"`{node.name}({ast.unparse(args)}){returns}`"
        out.append(f"- {head}: {' '.join(doc.split())}" if doc else f"- {head}")
    return out


def _class_section(cls: ast.ClassDef) -> list[str]:
    lines = [f"## `{cls.name}`", "", _docstring_of(cls), ""]
    if any(isinstance(d, ast.Attribute) and d.attr == "IntEnum" or ast.unparse(d) == "enum.IntEnum" for d in cls.bases):
        members = [node.targets[0].id for node in cls.body if isinstance(node, ast.Assign)
                   and isinstance(node.targets[0], ast.Name)]
        lines += [f"Members: {', '.join(f'`{m}`' for m in members)} (ordered: `max()` is the worst).", ""]
    fields = _fields(cls)
    if fields:
        lines += ["| field | type | default | meaning |", "|---|---|---|---|"]
        for name, type_, default, doc in fields:
            shown_default = f"`{_cell(default)}`" if default else "(required)"
            lines.append(f"| `{name}` | `{_cell(type_)}` | {shown_default} | {_cell(doc)} |")
        lines.append("")
    methods = _methods(cls)
    if methods:
        lines += ["Methods and properties:", "", *methods, ""]
    return lines


def _signature(func: object) -> str:
    """``name(params) -> return`` with the annotations as written (the package uses postponed annotations)."""
    sig = inspect.signature(func)  # type: ignore[arg-type]
    params = []
    for p in sig.parameters.values():
        text = p.name if p.kind is not p.VAR_POSITIONAL else f"*{p.name}"
        text = f"**{p.name}" if p.kind is p.VAR_KEYWORD else text
        if p.annotation is not p.empty:
            text += f": {p.annotation if isinstance(p.annotation, str) else inspect.formatannotation(p.annotation)}"
        if p.default is not p.empty:
            text += f" = {p.default!r}"
        params.append(text)
    ret = sig.return_annotation
    shown = "" if ret is sig.empty else f" -> {ret if isinstance(ret, str) else inspect.formatannotation(ret)}"
    return f"{getattr(func, '__name__', '?')}({', '.join(params)}){shown}"


def _functions() -> list[str]:
    sys.path.insert(0, str(ROOT))
    import pimm_inspect

    lines = ["## Functions", ""]
    for name in pimm_inspect.__all__:
        obj = getattr(pimm_inspect, name)
        if inspect.isfunction(obj):
            lines += [f"### `pimm_inspect.{_signature(obj)}`", "", inspect.getdoc(obj) or "", ""]
    others = [name for name in pimm_inspect.__all__ if not name.startswith("_")
              and not inspect.isfunction(getattr(pimm_inspect, name))]
    lines += [f"Also importable from `pimm_inspect`: {', '.join(f'`{n}`' for n in others)}.", ""]
    return lines


def render() -> str:
    tree = ast.parse(MODEL.read_text())
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    dataclasses = [name for name, node in classes.items()
                   if any("dataclass" in ast.unparse(d) for d in node.decorator_list)]
    order = [*(n for n in FIRST if n in classes), *(n for n in dataclasses if n not in FIRST), "Severity"]
    lines = ["# Python API reference", "",
             "Generated from the code by `python docs/make_api.py` (never edit by hand); `tests/test_api_reference.py`",
             "fails when it differs from the code. Every class below is a frozen dataclass of `pimm_inspect.model`;",
             "paths in it are relative to `Run.root` (POSIX style). Types are as annotated; the `...Facts` types are",
             "in `pimm_inspect/evidence.py`. The README's [Python API](../README.md#python-api) section shows them in use.",
             "", *_functions()]
    for name in order:
        lines += _class_section(classes[name])
    return "\n".join(lines).rstrip("\n") + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/api.md is out of date")
    args = parser.parse_args()
    text = render()
    if args.check:
        if not OUT.exists() or OUT.read_text() != text:
            print("docs/api.md is out of date: run `python docs/make_api.py`", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
