"""The one headless front door between the front ends (CLI, UI, Python API) and the core.

``Session(settings)`` discovers runs, loads them (analysed), lists their cached rows, loads in stages, refreshes
live runs, builds scalar tables and exports the Parquet dataset. It owns the persistent cache (``store/``) and is
built once, from ``Settings`` (the environment is read there and nowhere below).
"""

from __future__ import annotations

from .core import NotARunError, Session, default_session, say_on_stderr
from .settings import Settings

__all__ = ["NotARunError", "Session", "Settings", "default_session", "say_on_stderr"]
