"""The runs table's first pass, begun before the UI is up: a tree's runs found and their stored rows read by a child.

``pimm-inspect TREE`` starts this before it imports the UI (Textual, the screens): a forked child process searches
the tree and reads each run's stored row (what ``ls`` prints: stats and one small cache entry per run), on the other
core, while this process imports and mounts the UI; batches come back as ``session.child.ForkedChild`` frames. A
stored row travels as its head's values and its detail's text as the cache holds it (``SentRow``): the child never
decodes the detail (findings, attempts, config, metrics), nor pickles it as objects, and this process decodes it only
where a view asks for it (the runs table shows the head alone), so the rows cost neither process much and this one
holds few objects per row. With each row come its runs-table cell texts (``row_texts``), worked out by the child: the
table only wraps them. The table's first pass then takes runs and rows from here (``PrefetchedRows``) instead of reading them itself; a run with no stored row is read
by that pass as before, and every later pass (a refresh) asks the session directly. Where the process cannot fork
safely (another thread already runs, no ``fork``), there is no prefetch and the pass does all of it itself.

No Textual here: this module is imported before the UI's modules are.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..evidence import RunRow
from ..session import Session
from ..session.child import ForkedChild, Send

if TYPE_CHECKING:
    from ..session.staged import Stage
    from .table_load import RowSource

FIRST_BATCH = 32
"""Runs in the child's first batch (about a screenful); later batches double up to ``MAX_BATCH``."""
MAX_BATCH = 1024


_FIELDS = tuple(f.name for f in dataclasses.fields(RunRow))
_SLOTS = {name: RunRow.__dict__[name] for name in _FIELDS}


class SentRow(RunRow):
    """A stored row as the child sent it: its head's fields set, its detail's fields (``Batch.detail``) decoded from
    the cache's text (``codec.from_text``) when one of them is first asked for, as the cache's own rows are.

    Equal to (and hashes as) the plain row of the same values.
    """

    __slots__ = ("_detail", "_detail_fields", "cell_texts")

    cell_texts: tuple[str, ...]
    """The row's runs-table cell texts (``row_texts.row_texts``), as the child worked them out."""

    @classmethod
    def of(cls, head: tuple[str, ...], values: tuple[Any, ...], detail: tuple[str, ...], text: str,
           texts: tuple[str, ...]) -> SentRow:
        row = object.__new__(cls)
        for name, value in zip(head, values):
            _SLOTS[name].__set__(row, value)
        object.__setattr__(row, "_detail", text)
        object.__setattr__(row, "_detail_fields", detail)
        object.__setattr__(row, "cell_texts", texts)
        return row

    def _expand(self) -> None:
        from ..session.store import codec

        fields: tuple[str, ...] = object.__getattribute__(self, "_detail_fields")
        values = codec.from_text(object.__getattribute__(self, "_detail"))
        if not (isinstance(values, tuple) and len(values) == len(fields)):
            raise codec.BadEntry("a row's detail does not match its fields")
        for name, value in zip(fields, values):
            _SLOTS[name].__set__(self, value)

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in _FIELDS)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunRow):
            return NotImplemented
        return self._values() == tuple(getattr(other, name) for name in _FIELDS)

    def __hash__(self) -> int:
        return hash(self._values())

    def __reduce__(self) -> tuple[Any, ...]:
        return RunRow, self._values()


def _field(name: str) -> property:
    slot = _SLOTS[name]

    def get(row: SentRow) -> Any:
        try:
            return slot.__get__(row, RunRow)
        except AttributeError:  # a detail field: the first asked for decodes them all
            row._expand()
            return slot.__get__(row, RunRow)

    def put(row: SentRow, value: Any) -> None:
        slot.__set__(row, value)

    return property(get, put, doc=f"``RunRow.{name}`` (a detail field: decoded on first use).")


for _name in _FIELDS:
    setattr(SentRow, _name, _field(_name))


@dataclass(frozen=True, slots=True)
class Batch:
    """Runs found, in discovery order, and those of their rows the cache still held (looked up: all of them): each
    as (its place in ``paths``, its ``head`` fields' values, its detail's text, its cell texts), or whole in
    ``stored``."""

    paths: list[Path]
    stored: dict[Path, RunRow]
    sent: list[tuple[int, tuple[Any, ...], str, tuple[str, ...]]]
    head: tuple[str, ...]
    detail: tuple[str, ...]

    def rows(self) -> dict[Path, RunRow]:
        """Every row of the batch, by path (``SentRow``s, and the rows sent whole)."""
        found: dict[Path, RunRow] = {self.paths[i]: SentRow.of(self.head, values, self.detail, text, texts)
                                     for i, values, text, texts in self.sent}
        found.update(self.stored)
        return found


def _batch(session: Session, root: Path, paths: list[Path]) -> Batch:
    """``paths`` and their stored rows, each row's detail as the cache's text where it has one."""
    from ..session.row_index import stored_detail
    from ..session.store.row_cache import DETAIL
    from .row_texts import row_texts

    head = tuple(name for name in _FIELDS if name not in DETAIL)
    whole: dict[Path, RunRow] = {}
    sent: list[tuple[int, tuple[Any, ...], str, tuple[str, ...]]] = []
    stored = session.stored_rows(paths, under=root)
    for i, path in enumerate(paths):
        row = stored.get(path)
        if row is None:
            continue
        text = stored_detail(row)
        if text is None:
            whole[path] = row
        else:
            sent.append((i, tuple(getattr(row, name) for name in head), text, row_texts(row)))
    return Batch(paths, whole, sent, head, DETAIL)


def _produce(session: Session, root: Path, send: Send) -> None:
    """The child's work: find the runs, send each batch with its stored rows (the tree's row index first, as ``ls``
    reads it), then the folders not searched."""
    errors: list[tuple[Path, str]] = []
    batch: list[Path] = []
    size = FIRST_BATCH
    for path in session.iter_runs(root, lambda where, reason: errors.append((where, reason))):
        batch.append(path)
        if len(batch) >= size:
            send(_batch(session, root, batch))
            batch, size = [], min(size * 2, MAX_BATCH)
    if batch:
        send(_batch(session, root, batch))
    send(("done", errors))


class RowPrefetch:
    """A child searching ``root`` and reading its stored rows (``session.child.ForkedChild``); its frames, as they
    are sent: batches, then ``("done", errors)``, or ``("failed", reason)``; ``END`` (None) once the child is gone."""

    def __init__(self, root: Path, child: ForkedChild) -> None:
        self.root = root
        self.child = child
        self.taken = False
        """True once a pass took the prefetch (only the first does)."""

    @classmethod
    def start(cls, session: Session, root: Path) -> RowPrefetch | None:
        """Fork the child for the tree at ``root``; None where that is not safe or ``root`` is no folder."""
        if not ForkedChild.possible() or not root.is_dir():
            return None
        root = root.absolute()

        def work(send: Send) -> None:
            try:
                _produce(session, root, send)
            except Exception as exc:  # noqa: BLE001 - the parent's pass says so, as it would itself
                send(("failed", f"{type(exc).__name__}: {exc}"))

        return cls(root, ForkedChild.start(work, name="pimm-inspect-rows"))

    def next_frame(self) -> object:
        """The child's next frame, waiting for it; ``END`` once the child is gone and every frame was taken."""
        return self.child.get()

    def close(self) -> None:
        """Stop the child now (the UI is quitting, or the pass was superseded)."""
        self.child.kill()


class PrefetchFailed(Exception):
    """The child could not finish the search (the pass reports it as its own search failing)."""


class PrefetchedRows:
    """A row source whose first pass over ``prefetch.root`` takes the child's runs and rows; everything else, and
    every later pass, goes to ``inner`` (the session's rows)."""

    def __init__(self, inner: RowSource, prefetch: RowPrefetch) -> None:
        self.inner = inner
        self.prefetch = prefetch
        self._stored: dict[Path, RunRow | None] = {}
        """Rows the child looked up and no pass asked for yet (None: looked up, not stored)."""
        self._lock = threading.Lock()

    def discover(self, root: Path, on_error: Callable[[Path, str], None]) -> Iterator[list[Path]]:
        if self.prefetch.taken or root.absolute() != self.prefetch.root:
            return self.inner.discover(root, on_error)
        self.prefetch.taken = True
        return self._relay(on_error)

    def _relay(self, on_error: Callable[[Path, str], None]) -> Iterator[list[Path]]:
        while True:
            frame = self.prefetch.next_frame()
            if isinstance(frame, Batch):
                rows = frame.rows()
                with self._lock:
                    for path in frame.paths:
                        self._stored[path] = rows.get(path)
                yield frame.paths  # a batch's rows are at hand: the pass takes them together
            elif isinstance(frame, tuple) and frame[0] == "done":
                for where, reason in frame[1]:
                    on_error(where, reason)
                return
            else:
                reason = frame[1] if isinstance(frame, tuple) else "the search stopped"
                raise PrefetchFailed(str(reason))

    def stored(self, paths: list[Path]) -> dict[Path, RunRow]:
        found: dict[Path, RunRow] = {}
        rest: list[Path] = []
        with self._lock:
            for path in paths:
                if path in self._stored:
                    row = self._stored.pop(path)  # served once: a later pass looks again
                    if row is not None:
                        found[path] = row
                else:
                    rest.append(path)
        if rest:
            found.update(self.inner.stored(rest))
        return found

    def build(self, paths: list[Path], cancelled: Callable[[], bool], under: Path | None = None) -> Iterator[RunRow]:
        return self.inner.build(paths, cancelled, under)

    def build_big(self, path: Path, on_stage: Callable[[Stage], None], cancelled: Callable[[], bool]) -> RunRow:
        return self.inner.build_big(path, on_stage, cancelled)
