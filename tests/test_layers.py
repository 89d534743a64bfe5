"""Static import contract of the layers (issue 9), read from every module's import statements with ``ast``.

model/evidence <- sources <- load <- analysis <- report <- session <- cli | tui: a layer imports only those below
it, and no layer imports a private module (``_name``) of another layer. The one exception: ``pimm-inspect ui`` (the
CLI) launches the terminal UI.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pimm_inspect"
RANK = {"model": 0, "evidence": 0, "sources": 1, "load": 2, "analysis": 3, "report": 4, "session": 5, "cli": 6,
        "tui": 6}
"""Layer of each top-level module or subpackage; front ends (cli, tui) share the top rank."""
LAUNCHERS = {("cli", "cmd_ui")}
"""Modules allowed to import a front end of the same rank: ``pimm-inspect ui`` starts the terminal UI."""


def _layer(parts: tuple[str, ...]) -> str | None:
    return parts[0] if parts and parts[0] in RANK else None


def _imports(path: Path) -> list[tuple[tuple[str, ...], int]]:
    """(absolute module path inside pimm_inspect, line) of each import in ``path``."""
    here = path.relative_to(PACKAGE).with_suffix("").parts
    package = here[:-1] if here[-1] != "__init__" else here[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)] if node.level > 1 else package
                target = base + tuple((node.module or "").split(".")) if node.module else base
                names = [target + (alias.name,) for alias in node.names] if not node.module else [target]
            elif (node.module or "").startswith("pimm_inspect"):
                names = [tuple(node.module.split("."))[1:]]
            else:
                continue
            found += [(tuple(p for p in name if p), node.lineno) for name in names]
        elif isinstance(node, ast.Import):
            found += [(tuple(a.name.split("."))[1:], node.lineno) for a in node.names if a.name.startswith("pimm_inspect.")]
    return found


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_layer_imports_only_layers_below_it() -> None:
    wrong = []
    for path in _modules():
        own = _layer(path.relative_to(PACKAGE).with_suffix("").parts)
        if own is None:
            continue
        for target, line in _imports(path):
            other = _layer(target)
            if other is None or other == own:
                continue
            if RANK[other] > RANK[own] or (RANK[other] == RANK[own] and RANK[own] > 0
                                           and path.relative_to(PACKAGE).with_suffix("").parts not in LAUNCHERS):
                wrong.append(f"{path.relative_to(PACKAGE)}:{line} imports {'.'.join(target)}")
    assert not wrong, "\n".join(wrong)


def test_no_layer_imports_a_private_module_of_another_layer() -> None:
    wrong = []
    for path in _modules():
        own = _layer(path.relative_to(PACKAGE).with_suffix("").parts)
        for target, line in _imports(path):
            other = _layer(target)
            if other is None or other == own:
                continue
            if any(part.startswith("_") and part != "__init__" for part in target[1:]):
                wrong.append(f"{path.relative_to(PACKAGE)}:{line} imports {'.'.join(target)}")
    assert not wrong, "\n".join(wrong)


def test_the_checker_sees_imports() -> None:
    """Guard against a checker that passes because it finds nothing."""
    collect = PACKAGE / "load" / "collect.py"
    targets = {t for t, _ in _imports(collect)}
    assert ("model",) in targets or any(t[:1] == ("model",) for t in targets)
    assert any(t[:1] == ("sources",) for t in targets)


def test_reader_families_use_only_each_others_public_modules() -> None:
    """``sources/<family>/_x`` is private to its family: a sibling family goes through a public module."""
    wrong, seen = [], 0
    for path in sorted((PACKAGE / "sources").rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        family = parts[1] if len(parts) > 2 else None
        for target, line in _imports(path):
            if target[:1] != ("sources",) or len(target) < 3:
                continue
            seen += 1
            if target[1] != family and any(p.startswith("_") for p in target[2:]):
                wrong.append(f"{path.relative_to(PACKAGE)}:{line} imports {'.'.join(target)}")
    assert seen > 20 and not wrong, "\n".join(wrong)


def test_every_reader_family_says_what_it_reads() -> None:
    families = sorted(p.parent for p in (PACKAGE / "sources").glob("*/__init__.py"))
    assert {f.name for f in families} >= {"tensorboard", "train_log", "checkpoint", "wandb", "hf", "slurm"}
    for family in families:
        doc = ast.get_docstring(ast.parse((family / "__init__.py").read_text(encoding="utf-8")))
        assert doc and len(doc.split()) >= 40, f"{family.name}/__init__.py needs a paragraph on what it reads"


def test_the_architecture_drawing_matches_the_layers_enforced_here() -> None:
    """``docs/architecture.md`` draws the layers top to bottom; its order must be the one this test enforces."""
    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    drawing = doc.split("```")[1].strip().splitlines()
    drawn: list[list[str]] = []
    for line in drawing:
        head = line.strip().split("  ")[0]  # the layer names before the description
        if not head:
            continue
        names = [n.strip().rstrip("/").removesuffix(".py") for n in head.replace(",", "|").split("|")]
        names = [n for n in names if n in RANK]
        if names:
            drawn.append(names)
    assert {n for row in drawn for n in row} == set(RANK), drawn
    ranks = [{RANK[n] for n in row} for row in drawn]
    assert all(len(r) == 1 for r in ranks), drawn  # one floor per line
    order = [r.pop() for r in ranks]
    assert order == sorted(order, reverse=True) and len(set(order)) == len(order), drawn
