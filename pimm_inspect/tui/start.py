"""The UI's start, before its modules import: what ``pimm-inspect PATH`` begins while Textual and the screens load.

``begin`` turns the cyclic garbage collector off and starts the work that needs no UI: a tree's search and stored rows
in a child (``prefetch.RowPrefetch``), or one run's read (``StagedLoader.prefetch``). The app turns collections back on
(``resume_collections``) once its first pass over the tree is over, or ``PAUSE_MAX_S`` after it started, and freezes
everything as it quits (``quitting``): the interpreter's last collection at exit then walks nothing (it walked every
object the UI made, about 0.07 s on a 1,000-run tree, only to free memory the process hands back as it ends anyway).

Why the collector waits: starting the UI allocates a few hundred thousand objects that live as long as the app (the
classes, styles and widgets of Textual and of the screens, a warm tree's rows); the collector, run every 700
allocations, walked them again and again, and once all of them (about 0.05 s of a 0.5 s start, nothing freed). With
it off until the table is filled, then everything alive frozen (``gc.freeze``: never walked again), a collection
afterwards only looks at what was made since. Objects are still freed the moment nothing refers to them; only cycles
wait, for at most ``PAUSE_MAX_S``.

No Textual here: this module is imported before the UI's modules are.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..session import Session
    from .prefetch import RowPrefetch

PAUSE_MAX_S = 3.0
"""The longest collections stay off (a cold tree's first pass can take minutes: its cycles are not left for that)."""
SETTLE_S = 1.0
"""How long after the first pass the collector comes back (then one full collection: off the table's first paint)."""

_paused = False
"""True while collections are off because ``pause_collections`` turned them off (process-wide, as the collector is)."""
_began = False
"""True once ``begin`` started this process's UI (the process ends when that UI quits)."""


def pause_collections() -> None:
    """Turn the cyclic garbage collector off for the UI's start (nothing to do when it is off already)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume_collections() -> None:
    """Collections on again, after one full collection, with everything then alive frozen (never walked again); only
    after ``pause_collections`` turned them off (an app a test started leaves the collector alone)."""
    global _paused
    if not _paused:
        return
    _paused = False
    gc.collect()
    gc.freeze()
    gc.enable()


def collections_paused() -> bool:
    """True while ``pause_collections``' pause lasts."""
    return _paused


def quitting() -> None:
    """The UI ``begin`` started is quitting, and the process with it: everything alive frozen, so the interpreter's
    collection at exit has nothing to walk (an app a test started, in a process that goes on, changes nothing)."""
    if _began:
        gc.freeze()


def begin(session: Session, path: Path) -> RowPrefetch | None:
    """What ``pimm-inspect PATH`` starts before it imports the UI: collections paused, then a single run's read
    (``session.staged`` takes it over) or a tree's search and stored rows (the ``RowPrefetch`` returned, for the app)."""
    from ..load.discover import classify_dir

    global _began
    _began = True
    pause_collections()
    if path.is_dir() and classify_dir(path.absolute()) is not None:
        session.staged.prefetch(path.absolute())  # one run: read it while the UI's modules import
        return None
    from .prefetch import RowPrefetch  # no Textual: a tree's runs and stored rows, found meanwhile

    return RowPrefetch.start(session, path)
