"""The README's example outputs are the real output of their commands on the bundled fixtures, so they cannot drift.

Each example is a code block right after a ``<!-- example -->`` line, whose first line is ``$ pimm-inspect ARGS``
and whose other lines are what the command prints on stdout (piped, ``COLUMNS=100``, no colour). After an intended
change of an output, regenerate them with ``PIMM_INSPECT_UPDATE_README=1 python -m pytest tests/test_readme_examples.py``
and read ``git diff README.md``.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from pimm_inspect.cli.main import cli

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
EXAMPLE = re.compile(r"(<!-- example -->\n```\n\$ pimm-inspect (?P<args>[^\n]*)\n)(?P<output>.*?)(```\n)", re.DOTALL)
UPDATE = os.environ.get("PIMM_INSPECT_UPDATE_README") == "1"


def _output(args: str, cache: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(ROOT)  # the examples name fixtures/runs/... relative to the checkout
    env = {"COLUMNS": "100", "NO_COLOR": "1", "FORCE_COLOR": "", "PIMM_INSPECT_CACHE_DIR": str(cache)}
    result = CliRunner().invoke(cli, shlex.split(args), env=env, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.stderr  # `check` exits 1 on warnings
    return result.stdout


def test_readme_has_examples() -> None:
    args = [m["args"] for m in EXAMPLE.finditer(README.read_text())]
    assert args[0].startswith("check fixtures/runs/") and len(args) >= 3, args  # the opening example comes first


def test_readme_examples_are_the_real_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = README.read_text()
    stale = []

    def fresh(match: re.Match[str]) -> str:
        real = _output(match["args"], tmp_path / "cache", monkeypatch)
        if real != match["output"]:
            stale.append(match["args"])
        return match.group(1) + real + match.group(4)

    new = EXAMPLE.sub(fresh, text)
    if UPDATE:
        README.write_text(new)
        return
    assert not stale, (f"README examples differ from the real output: {stale}; regenerate with "
                       "PIMM_INSPECT_UPDATE_README=1 python -m pytest tests/test_readme_examples.py")

