"""Discover runs under a root and assemble one Run from its files."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .discover import classify_dir, discover, iter_runs

if TYPE_CHECKING:
    from .assemble import load_run

__all__ = ["load_run", "discover", "iter_runs", "classify_dir"]


def __getattr__(name: str) -> Any:
    """``load_run``, imported on first use: a module of ``load`` (``read_record``, ``file_deps``: what serves a cached
    document) is then imported without assembling's whole import tree (readers, numpy)."""
    if name != "load_run":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .assemble import load_run

    globals()["load_run"] = load_run
    return load_run
