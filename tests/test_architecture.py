"""Import contracts: the core never imports UI libraries; `check --json` stays light."""

from pathlib import Path

import pytest

from tests.import_probe import modules_after

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "runs"
UI_LIBS = ("textual", "rich", "plotext", "click", "textual_plotext")
HEAVY = ("wandb", "torch", "pandas", "textual", "pyarrow")


def test_core_layers_import_no_ui_library():
    code = ("import pimm_inspect, pimm_inspect.model, pimm_inspect.load, pimm_inspect.analysis\n"
            "import pkgutil, importlib, pimm_inspect.sources as s\n"
            "for m in pkgutil.walk_packages(s.__path__, 'pimm_inspect.sources.'): importlib.import_module(m.name)\n"
            "import pimm_inspect.analysis.curves, pimm_inspect.analysis.secrets\n")
    loaded = modules_after(code)
    assert not loaded & set(UI_LIBS), loaded & set(UI_LIBS)
    assert not loaded & {"wandb", "torch", "pandas"}


def test_core_source_never_names_ui_libraries():
    core = [ROOT / "pimm_inspect" / "model.py", *sorted((ROOT / "pimm_inspect").rglob("sources/**/*.py")),
            *sorted((ROOT / "pimm_inspect").glob("load/*.py")), *sorted((ROOT / "pimm_inspect").glob("analysis/*.py"))]
    for path in core:
        for line in path.read_text().splitlines():
            stripped = line.strip()
            if stripped.startswith(("import ", "from ")):
                for lib in UI_LIBS:
                    assert not stripped.startswith((f"import {lib}", f"from {lib}")), f"{path.name}: {stripped}"


@pytest.mark.parametrize("run", ["e2_rollback", "e2_clean"])
def test_check_json_without_wandb_folder_stays_light(run):
    code = ("import sys\nfrom pimm_inspect.cli.main import cli\n"
            f"sys.argv = ['pimm-inspect', 'check', '--json', {str(FIXTURES / run)!r}]\n"
            "import contextlib, io\n"
            "buf = io.StringIO()\n"
            "with contextlib.redirect_stdout(buf):\n"
            "    try:\n        cli.main(standalone_mode=False)\n    except SystemExit:\n        pass\n"
            "assert '\"schema_version\": 1' in buf.getvalue()\n")
    loaded = modules_after(code)
    assert not loaded & set(HEAVY), loaded & set(HEAVY)
