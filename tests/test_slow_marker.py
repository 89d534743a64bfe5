"""The quick local subset (`-m "not slow"`): tests/slow_tests.txt names real tests, and CI still runs everything."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_listed_slow_test_exists() -> None:
    listed = [line.strip() for line in (ROOT / "tests" / "slow_tests.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    assert len(listed) > 100
    missing = []
    defined: dict[str, set[str]] = {}
    for entry in listed:
        module, *names = entry.split("::")
        if module not in defined:
            tree = ast.parse((ROOT / module).read_text())
            defined[module] = {node.name for node in ast.walk(tree)
                               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        if not set(names) <= defined[module]:
            missing.append(entry)
    assert not missing, f"renamed or removed: update tests/slow_tests.txt: {missing}"


def test_ci_runs_the_slow_tests_too() -> None:
    run = (ROOT / ".ci" / "run").read_text()
    assert "python -m pytest\n" in run and "not slow" not in run
