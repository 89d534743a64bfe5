"""Checks with stable codes and curve maths, over the unified run model.

The package's entry points (``analyze``, ``run_checks``, ``CHECKS``, ``scalar_frame``) live in ``pipeline`` and are
imported on first use: a module of the package (``run_filter``, ``names``, ``secrets``: what the UI's runs table of
stored rows needs) is then imported without every check's import tree (numpy, the loaders).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .pipeline import CHECKS, Check, analyze, run_checks, scalar_frame

__all__ = ["CHECKS", "Check", "analyze", "run_checks", "scalar_frame"]


def __getattr__(name: str) -> Any:
    """The entry points, from ``pipeline`` when first asked for (a submodule's name falls through to its import)."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import pipeline

    value = getattr(pipeline, name)
    globals()[name] = value
    return value
