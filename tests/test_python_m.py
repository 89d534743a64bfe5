"""Issue 14, "python -m inside a run": a run's own click.py / numpy.py in the cwd is never imported.

``python -m`` puts the cwd first on sys.path, so ``cd RUN && python -m pimm_inspect ...`` would import the
run's modules; ``pimm_inspect/__main__.py`` drops the cwd before importing anything else. Input:
tests/data/hostile/cwd_module (modules that write a marker and exit 99 when imported).
"""

from __future__ import annotations

import shutil

import pytest

from tests.hostile_support import HOSTILE, RUNS, run_cli


@pytest.fixture()
def hostile_run(tmp_path, monkeypatch):
    run = tmp_path / "run"
    shutil.copytree(RUNS / "e2_clean", run, symlinks=True)
    for name in ("click.py", "numpy.py"):
        shutil.copy(HOSTILE / "cwd_module" / name, run / name)
    marker = tmp_path / "imported"
    monkeypatch.setenv("PIMM_HOSTILE_MARKER", str(marker))
    return run, marker


@pytest.mark.parametrize("args", [["ls", "."], ["check", "--json", "."], ["show", "."]], ids=" ".join)
def test_plain_python_m_in_a_run_does_not_import_its_modules(hostile_run, args):
    run, marker = hostile_run
    outcome = run_cli(*args, cwd=run, python_flags=())  # no -P: the defence in __main__ must hold alone
    assert not marker.exists(), "the run's own module was imported"
    assert "HOSTILE" not in outcome.stderr and outcome.returncode in (0, 1), outcome.stderr[-2000:]
    assert ('"schema_version": 1' if "--json" in args else "E2") in outcome.stdout, outcome.stdout


def test_safe_path_flag_also_keeps_the_cwd_out(hostile_run):
    run, marker = hostile_run
    outcome = run_cli("ls", ".", cwd=run)  # -P
    assert not marker.exists() and outcome.returncode == 0, outcome.stderr[-2000:]


def test_a_source_checkout_still_runs_from_its_root():
    """From the repository root the cwd is where the package comes from: it stays usable."""
    outcome = run_cli("ls", str(RUNS / "e2_clean"), cwd=RUNS.parent.parent, python_flags=())
    assert outcome.returncode == 0, outcome.stderr[-2000:]
