"""The UI's crash path: ``session.crash`` (the same private traceback file and one line as every command)."""

from __future__ import annotations

from ..session.crash import CRASH_EXIT_CODE as CRASH_EXIT_CODE, crash_text as crash_text, state_dir as state_dir
from ..session.crash import write_crash as write_crash
