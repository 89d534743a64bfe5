"""docs/api.md is generated from the code (docs/make_api.py) and documents every field of the main classes."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest

from pimm_inspect import model

ROOT = Path(__file__).resolve().parents[1]


def _make_api():
    spec = importlib.util.spec_from_file_location("make_api", ROOT / "docs" / "make_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_api_md_is_what_the_code_gives() -> None:
    assert (ROOT / "docs" / "api.md").read_text() == _make_api().render(), \
        "docs/api.md is out of date: run `python docs/make_api.py`"


@pytest.mark.parametrize("cls", [model.Run, model.Attempt, model.Finding, model.CheckpointInfo, model.ReplayedRange])
def test_every_field_of_the_main_classes_is_documented(cls: type) -> None:
    text = (ROOT / "docs" / "api.md").read_text()
    section = text.split(f"## `{cls.__name__}`\n", 1)[1].split("\n## ", 1)[0]
    rows = {line.split(" | ")[0].strip("| `"): line for line in section.splitlines() if line.startswith("| `")}
    assert list(rows) == [f.name for f in dataclasses.fields(cls)]  # every field, in order
    undocumented = [name for name, line in rows.items() if line.endswith("|  |")]
    assert not undocumented, f"give these fields of {cls.__name__} a docstring in model.py: {undocumented}"


def test_a_new_field_changes_the_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_api = _make_api()
    source = (ROOT / "pimm_inspect" / "model.py").read_text()
    changed = tmp_path / "model.py"
    changed.write_text(source.replace('    """1-based."""\n',
                                      '    """1-based."""\n    node: str | None = None\n    """The node it ran on."""\n', 1))
    monkeypatch.setattr(make_api, "MODEL", changed)
    assert "| `node` | `str \\| None` | `None` | The node it ran on. |" in make_api.render()
