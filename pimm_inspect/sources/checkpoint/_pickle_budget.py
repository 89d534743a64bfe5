"""One resource budget per unpickled file: opcodes executed, objects created, bytes allocated.

A pickle is a program: a few bytes can ask a stand-in for a 1 MiB ``bytearray`` or copy a memoised
million-item dict, thousands of times. Every stand-in and every calling opcode charges what it is
about to allocate *before* allocating it; past any limit the unpickle stops with ``BudgetExceeded``.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field

MAX_UNPICKLE_OPS = 20_000_000
"""Opcodes one file's pickles may execute (a 64 MiB pickle cannot need more than ~1 per 3 bytes)."""
MAX_UNPICKLE_OBJECTS = 20_000_000
"""Objects or container items the stand-ins may create or copy for one file."""
MAX_UNPICKLE_BYTES = 256 * 1024 * 1024
"""Bytes the stand-ins may allocate for one file (copies, byte strings, joined paths)."""
ITEM_BYTES = 64
"""What one copied container item is charged (a dict entry with its hash slot, roughly)."""


class BudgetExceeded(Exception):
    """An unpickle went past its budget; it stops, and the reader reports the file."""


@dataclass(slots=True)
class Budget:
    """Counters for one file, checked against the limits on every charge."""

    max_ops: int = MAX_UNPICKLE_OPS
    max_objects: int = MAX_UNPICKLE_OBJECTS
    max_bytes: int = MAX_UNPICKLE_BYTES
    ops: int = 0
    objects: int = 0
    nbytes: int = 0
    called: list[str] = field(default_factory=list)
    """``module.name`` of the globals outside the allow-list the pickle called (REDUCE, NEWOBJ ...), first-seen order."""

    def charge(self, nbytes: int = 0, objects: int = 0) -> None:
        """Count an allocation about to happen; raise when a limit would be passed."""
        self.nbytes += nbytes
        self.objects += objects
        if self.nbytes > self.max_bytes:
            raise BudgetExceeded(f"unpickling stopped: more than {self.max_bytes} bytes allocated")
        if self.objects > self.max_objects:
            raise BudgetExceeded(f"unpickling stopped: more than {self.max_objects} objects created")

    def tick(self) -> None:
        """Count one opcode."""
        self.ops += 1
        if self.ops > self.max_ops:
            raise BudgetExceeded(f"unpickling stopped: more than {self.max_ops} pickle opcodes")


_CURRENT: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("pimm_unpickle_budget", default=None)
"""The budget of the unpickle running in this thread (stand-ins are plain functions, called by pickle)."""


def activate(budget: Budget) -> contextvars.Token[Budget | None]:
    """Make ``budget`` the one stand-ins charge, until ``deactivate``."""
    return _CURRENT.set(budget)


def deactivate(token: contextvars.Token[Budget | None]) -> None:
    """Restore the budget that was active before ``activate``."""
    _CURRENT.reset(token)


def charge(nbytes: int = 0, objects: int = 0) -> None:
    """Charge the active budget (a no-op outside an unpickle, e.g. a stand-in called by a test)."""
    budget = _CURRENT.get()
    if budget is not None:
        budget.charge(nbytes, objects)


MAX_CALLED = 1000
"""Called globals remembered per file (the unsafe globals' own cap)."""


def note_call(dotted: str) -> None:
    """Remember that the running pickle called (constructed or invoked) the global ``dotted``."""
    budget = _CURRENT.get()
    if budget is not None and dotted not in budget.called and len(budget.called) < MAX_CALLED:
        budget.called.append(dotted)


def charge_items(count: int) -> None:
    """Charge copying ``count`` container items."""
    budget = _CURRENT.get()  # ``charge`` inline: this runs for every tensor and container a pickle builds
    if budget is not None:
        budget.charge(count * ITEM_BYTES, count)
