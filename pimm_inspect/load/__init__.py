"""Discover runs under a root and assemble one Run from its files."""

from __future__ import annotations

from .assemble import load_run
from .discover import classify_dir, discover, iter_runs

__all__ = ["load_run", "discover", "iter_runs", "classify_dir"]
