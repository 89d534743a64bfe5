"""One reader per file kind; each returns data and findings, never renderables.

The names below are the package's public helpers for the layers above (path display and safe opening);
everything else is reached through a reader module's entry function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._common import UnreadableFile, open_regular, rel

__all__ = ["UnreadableFile", "open_regular", "rel"]


def __getattr__(name: str) -> Any:
    """The helpers, imported on first use: ``sources.confine`` (what a cached document's check of its files needs)
    is then imported without the model."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import _common

    value = getattr(_common, name)
    globals()[name] = value
    return value
