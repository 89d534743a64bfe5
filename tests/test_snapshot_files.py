"""Every committed UI snapshot belongs to a test that still exists.

syrupy fails a serial run that leaves a snapshot file unused (a renamed or removed test), but under pytest-xdist
(the suite runs on two workers) it skips that check on the workers and the controller alike. This test keeps it:
the snapshot tests' collected names and the files under tests/__snapshots__ are the same set."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SNAPSHOTS = REPO / "tests" / "__snapshots__"


def _collected(module: str) -> set[str]:
    """The test names (with their parametrization) pytest collects in ``tests/<module>.py``."""
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-o", "addopts=", "-p", "no:xdist",
                           "-p", "no:cacheprovider", f"tests/{module}.py"],
                          cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return {line.split("::", 1)[1] for line in done.stdout.splitlines() if line.startswith(f"tests/{module}.py::")}


def test_every_snapshot_file_has_its_test_and_every_snapshot_test_its_file():
    modules = sorted(folder.name for folder in SNAPSHOTS.iterdir() if folder.is_dir())
    assert "test_tui_snapshots" in modules
    for module in modules:
        files = {path.name.removesuffix(".svg") for path in (SNAPSHOTS / module).iterdir()}
        tests = _collected(module)
        assert tests, module
        assert files - tests == set(), f"{module}: snapshot files no test uses (run --snapshot-update serially)"
        assert tests - files == set(), f"{module}: snapshot tests without a committed snapshot"
