"""Shared test setup: the persistent cache goes to temporary directories, never ~/.cache."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from hypothesis import settings

# Every hypothesis test is derandomized, locally as in CI: a run is reproducible, and a failure found once (the lone
# surrogate in resolved_config.json) fails every time until fixed, never passes or fails by chance. New inputs are
# explored by raising max_examples or adding @example cases, on purpose.
settings.register_profile("pimm-inspect", derandomize=True, database=None, print_blob=True)
settings.load_profile("pimm-inspect")

_SESSION_CACHE: str | None = None


def pytest_configure(config):
    """Before any fixture (module- and session-scoped ones too) reads a run: a session-wide cache dir."""
    global _SESSION_CACHE
    # Where prose wraps is the caller's COLUMNS, else 140 when piped: the tests expect the latter. pytest imports
    # GNU readline at start-up (capture's readline workaround), and readline exports the terminal's size into the
    # C environment (80x24 without a terminal) that os.environ never shows but every child inherits: xdist workers
    # then started with COLUMNS=80 and wrapped `show`'s long lines. Neither the caller's nor readline's value counts.
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)
        os.unsetenv(name)
    _SESSION_CACHE = tempfile.mkdtemp(prefix="pimm-inspect-test-cache-")
    os.environ["PIMM_INSPECT_CACHE_DIR"] = _SESSION_CACHE
    # The fixtures decode in a few ms, under the cost below which results are not written: write them all, so the
    # tests see the disk cache at work (test_disk_cache checks the default too).
    os.environ["PIMM_INSPECT_CACHE_MIN_DECODE_MS"] = "0"


def pytest_unconfigure(config):
    if _SESSION_CACHE is not None:
        shutil.rmtree(_SESSION_CACHE, ignore_errors=True)


@pytest.fixture(autouse=True)
def _private_cache_dir(tmp_path_factory, monkeypatch):
    """Every test gets its own empty cache directory outside the run fixtures."""
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path_factory.mktemp("pimm-cache")))


_SLOW_LIST = os.path.join(os.path.dirname(__file__), "slow_tests.txt")


def _slow_tests() -> set[str]:
    """``tests/<module>.py::<function>`` of each test marked slow besides those marked in their module."""
    with open(_SLOW_LIST, encoding="utf-8") as f:
        return {line.strip() for line in f if line.strip() and not line.startswith("#")}


def pytest_collection_modifyitems(config, items):
    """Mark the tests listed in tests/slow_tests.txt ``slow`` (every parametrization of a listed function), so
    ``python -m pytest -m "not slow"`` is the quick local subset; CI runs everything."""
    slow = _slow_tests()
    for item in items:
        if item.nodeid.split("[", 1)[0] in slow:
            item.add_marker(pytest.mark.slow)
