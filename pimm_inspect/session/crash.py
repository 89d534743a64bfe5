"""What a crash leaves behind (the UI's and any command's): a private file with the traceback, and one line naming it.

Textual's own error path prints a Rich traceback with every frame's local variables: whole ``Run`` objects,
launch commands, sbatch text, cluster paths, unmasked; Python's prints the exception's message raw (a message
quoting a tag, a path or a config value carries its control sequences and secrets). Here a crash writes the traceback *without* locals,
with secret-shaped strings masked and control characters escaped, to
``$XDG_STATE_HOME/pimm-inspect/crash-<utc>.txt`` (``~/.local/state`` by default; mode 0600), and the terminal
gets one line naming that file; the process exits with ``CRASH_EXIT_CODE``.

Runs are read, never written: a state folder that lies inside a run (``$XDG_STATE_HOME`` set to a folder of a
colleague's run, or a link into one) or inside a folder the process was reading is never written; the default
folder is used instead, and when that one is inside too, no file is written and the line says why.
"""

from __future__ import annotations

import os
import platform
import sys
import traceback
from datetime import datetime, timezone
from collections.abc import Sequence
from pathlib import Path

from ..analysis.secrets import mask_text
from ..report.safe_text import clean

CRASH_EXIT_CODE = 70
"""EX_SOFTWARE (sysexits.h): an internal error, not a usage error (2) or findings (1)."""


def state_dir() -> Path:
    """Where crash reports go: ``$XDG_STATE_HOME/pimm-inspect`` (a relative or empty value is ignored, per XDG)."""
    base = os.environ.get("XDG_STATE_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".local" / "state"
    return root / "pimm-inspect"


def crash_text(error: BaseException) -> str:
    """The traceback of ``error`` (and of the exception a failed worker wraps): frames and messages, no locals."""
    from .. import __version__

    inner = getattr(error, "error", None)  # textual.worker.WorkerFailed wraps the worker's own exception
    parts = [f"pimm-inspect {__version__} crashed (python {platform.python_version()}, {sys.platform})\n"]
    textual = sys.modules.get("textual")  # the UI's crash names Textual's version; a command never imports it
    if textual is not None and getattr(textual, "__version__", None):
        parts[0] = parts[0].rstrip(")\n") + f", textual {textual.__version__})\n"
    parts += traceback.format_exception(error)
    if isinstance(inner, BaseException) and inner is not error:
        parts.append("\nThe worker's own exception:\n")
        parts += traceback.format_exception(inner)
    # Exception messages can quote run data (paths, tags, commands): mask secrets, make controls visible.
    return clean(mask_text("".join(parts)))


def default_state_dir() -> Path:
    """``~/.local/state/pimm-inspect``: where crash reports go when ``$XDG_STATE_HOME`` may not be written."""
    return Path.home() / ".local" / "state" / "pimm-inspect"


def run_holding_folder(folder: Path, reading: Sequence[Path | str] = ()) -> Path | None:
    """The run (or folder being read, of ``reading``) that ``folder`` lies in, links resolved; None when none does."""
    from ..load.discover import classify_dir, run_containing
    from .output_place import run_holding

    real = Path(os.path.realpath(folder))
    inside = run_holding(real, [Path(r) for r in reading])
    if inside is not None:
        return inside
    here = real
    while not here.is_dir() and here != here.parent:  # the folder may not exist yet: its nearest existing one
        here = here.parent
    if classify_dir(here) is not None:
        return here
    return run_containing(here, levels=len(here.parts))


def crash_folder(reading: Sequence[Path | str] = ()) -> tuple[Path | None, str]:
    """Where the crash file goes: (the state folder, "") or, when every candidate lies in a run, (None, why)."""
    why = ""
    for folder in dict.fromkeys([state_dir(), default_state_dir()]):
        inside = run_holding_folder(folder, reading)
        if inside is None:
            return folder, ""
        why = why or (f"{clean(folder.as_posix(), newlines=False)} lies inside {clean(inside.as_posix(), newlines=False)}"
                      " (runs are read, never written)")
    return None, why


def write_crash(error: BaseException, now: datetime | None = None,
                reading: Sequence[Path | str] = ()) -> tuple[Path | None, str]:
    """Write the crash report; (its path, the one line for the terminal). Never raises.

    ``reading``: the folders the process was reading (the command's PATHs, the UI's root), never written into."""
    when = now or datetime.now(timezone.utc)
    try:
        text = crash_text(error)
    except Exception as exc:  # noqa: BLE001 - the report itself must not crash the crash path
        text = f"pimm-inspect crashed; formatting the traceback failed too ({type(exc).__name__})\n"
    inner = getattr(error, "error", None)
    kind = type(inner if isinstance(inner, BaseException) else error).__name__
    try:
        place, why = crash_folder(reading)
    except Exception as exc:  # noqa: BLE001 - an unreadable folder on the way must not crash the crash path
        place, why = None, f"its folder could not be checked ({type(exc).__name__})"
    if place is None:
        return None, f"pimm-inspect crashed ({kind}); the traceback was not saved: {why}"
    folder = place
    stamp = when.strftime("%Y%m%dT%H%M%S") + f"{when.microsecond // 1000:03d}Z"
    path = folder / f"crash-{stamp}.txt"
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as exc:
        return None, (f"pimm-inspect crashed ({kind}); the traceback could not be saved to "
                      f"{clean(folder.as_posix(), newlines=False)}: {exc.strerror or type(exc).__name__}")
    return path, f"pimm-inspect crashed; the traceback (no values) is in {clean(path.as_posix(), newlines=False)}"
