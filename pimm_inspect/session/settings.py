"""What a session is built from: the cache's place and limits, worker processes, how deep and how a tree is searched.

``Settings.from_env`` is the one place the environment is read (``PIMM_INSPECT_CACHE_DIR``, ``XDG_CACHE_HOME``,
``HOME``, ``PIMM_INSPECT_CACHE_MAX_BYTES``, ``PIMM_INSPECT_CACHE_MIN_DECODE_MS``, ``PIMM_INSPECT_JOBS``); nothing
below the session reads it, and no module keeps a setting in a global.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..load.discover import MAX_DEPTH
from .store.disk_cache import DEFAULT_MAX_BYTES, DEFAULT_MIN_DECODE_MS

CACHE_OFF = ("off", "0", "no", "false")
"""Values of ``$PIMM_INSPECT_CACHE_DIR`` that turn the cache off."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a session's behaviour depends on besides the files it reads."""

    cache_dir: Path | None = None
    """The persistent cache's directory (absolute), or None: no disk cache (off, or no usable place)."""
    cache_max_bytes: int = DEFAULT_MAX_BYTES
    """At most this many bytes of entries; the least recently used are evicted beyond it."""
    cache_min_decode_s: float = DEFAULT_MIN_DECODE_MS / 1000.0
    """A file that decoded in less CPU than this is not written to the cache (reading it back costs as much)."""
    jobs: int | None = None
    """Worker processes that load runs for ``rows`` (None: the processors other work leaves idle, at most 8)."""
    max_depth: int = MAX_DEPTH
    """Folder levels searched below a PATH for runs."""
    follow_links: bool = False
    """Follow links that lead out of the searched folder (never into /proc, /sys, /dev)."""

    @property
    def cache_enabled(self) -> bool:
        """True when a disk cache is configured."""
        return self.cache_dir is not None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, no_cache: bool = False,
                 max_depth: int = MAX_DEPTH, follow_links: bool = False, jobs: int | None = None) -> Settings:
        """Settings from the environment (``os.environ`` unless given) and the front end's own options."""
        env = os.environ if environ is None else environ
        return cls(cache_dir=None if no_cache else cache_dir_from(env),
                   cache_max_bytes=int(_number(env.get("PIMM_INSPECT_CACHE_MAX_BYTES"), int, DEFAULT_MAX_BYTES)),
                   cache_min_decode_s=_number(env.get("PIMM_INSPECT_CACHE_MIN_DECODE_MS"), float,
                                              DEFAULT_MIN_DECODE_MS) / 1000.0,
                   jobs=jobs if jobs is not None else _jobs(env.get("PIMM_INSPECT_JOBS")),
                   max_depth=max_depth, follow_links=follow_links)


def _absolute(value: str | None) -> Path | None:
    """``value`` as a path when it is absolute; None when unset, empty or relative (a relative place would depend
    on the folder a command runs in, and could be inside a run)."""
    if not value or not value.strip():
        return None
    path = Path(value)
    return path if path.is_absolute() else None


def cache_dir_from(env: Mapping[str, str]) -> Path | None:
    """The cache directory the environment names: ``$PIMM_INSPECT_CACHE_DIR`` (``off`` turns the cache off), else
    ``$XDG_CACHE_HOME/pimm-inspect``, else ``$HOME/.cache/pimm-inspect``; an empty or relative value counts as unset.
    None when off or when no absolute place is known."""
    configured = env.get("PIMM_INSPECT_CACHE_DIR")
    if configured is not None and configured.strip().lower() in CACHE_OFF:
        return None
    explicit = _absolute(configured.replace("~", env.get("HOME", "~"), 1) if configured and configured.startswith("~")
                         else configured)
    if explicit is not None:
        return explicit
    xdg = _absolute(env.get("XDG_CACHE_HOME"))
    if xdg is not None:
        return xdg / "pimm-inspect"
    home = _absolute(env.get("HOME"))
    return home / ".cache" / "pimm-inspect" if home is not None else None


def _number(value: str | None, kind: type[int] | type[float], default: float) -> float:
    try:
        return kind(value) if value is not None else default
    except ValueError:
        return default


def _jobs(value: str | None) -> int | None:
    try:
        return max(1, int(value)) if value and value.strip() else None
    except ValueError:
        return None
