"""Shared test setup: the persistent cache goes to a per-test temporary directory, never ~/.cache."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _private_cache_dir(tmp_path_factory, monkeypatch):
    """Every test gets its own empty cache directory outside the run fixtures."""
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path_factory.mktemp("pimm-cache")))
    from pimm_inspect.load import disk_cache

    monkeypatch.setattr(disk_cache, "_enabled", True)
