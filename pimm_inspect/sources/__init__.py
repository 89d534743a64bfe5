"""One reader per file kind; each returns data and findings, never renderables.

The names below are the package's public helpers for the layers above (path display and safe opening);
everything else is reached through a reader module's entry function.
"""

from ._common import UnreadableFile, open_regular, rel

__all__ = ["UnreadableFile", "open_regular", "rel"]
