"""The runs table's first pass, begun before the UI is up: a tree's runs found and their stored rows read by a child.

``pimm-inspect TREE`` starts this before it imports the UI (Textual, the screens): a forked child process searches
the tree and reads each run's stored row (what ``ls`` prints: stats and one small cache entry per run), on the other
core, while this process imports and mounts the UI; batches come back as ``session.child.ForkedChild`` frames. A
stored row travels as its head's and its detail's texts as the cache holds them, and its status (``SentRow``): the
child never decodes the detail (findings, attempts, config, metrics), pickles no row as objects (a thousand rows'
values and paths took tens of milliseconds to pickle and as many to unpickle, texts a few), and this process decodes
a head or a detail only where a view asks for one of its fields (the runs table shows the cell texts and reads the
status alone), so the rows cost neither process much and this one holds few objects per row. With each row come its runs-table cell texts (``row_texts``), worked out by the child: the
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
from ..session.row_head import HEAD_FIELDS
from .row_texts import row_texts  # here, not in the child: the UI imports it too (the child would import it again)

if TYPE_CHECKING:
    from ..session.staged import Stage
    from .table_load import RowSource

FIRST_BATCH = 32
"""Runs in the child's first batch (about a screenful); later batches double up to ``MAX_BATCH``."""
MAX_BATCH = 1024


_FIELDS = tuple(f.name for f in dataclasses.fields(RunRow))
_SLOTS = {name: RunRow.__dict__[name] for name in _FIELDS}
_HEAD = frozenset(HEAD_FIELDS)


class SentRow(RunRow):
    """A stored row as the child sent it: its root and status set, its head's other fields decoded from the cache's
    text (``row_head.head_values``) when one of them is first asked for, its detail's fields (``DETAIL``) decoded
    from the cache's text (``codec.from_text``) when one of them is, as the cache's own rows are.

    Equal to (and hashes as) the plain row of the same values.
    """

    __slots__ = ("_head", "_detail", "cell_texts")

    cell_texts: tuple[str, ...]
    """The row's runs-table cell texts (``row_texts.row_texts``), as the child worked them out."""

    @classmethod
    def of(cls, root: Path, head: str, status: str, detail: str, texts: tuple[str, ...]) -> SentRow:
        row = object.__new__(cls)
        _SLOTS["root"].__set__(row, root)
        _SLOTS["status"].__set__(row, status)  # the one head field the table reads of every row (live runs)
        object.__setattr__(row, "_head", head)
        object.__setattr__(row, "_detail", detail)
        object.__setattr__(row, "cell_texts", texts)
        return row

    def _expand(self, name: str) -> None:
        if name in _HEAD:
            from ..session.row_head import head_values

            for field, value in head_values(object.__getattribute__(self, "_head")).items():
                _SLOTS[field].__set__(self, value)
            return
        from ..session.store import codec
        from ..session.store.row_cache import DETAIL

        values = codec.from_text(object.__getattribute__(self, "_detail"))
        if not (isinstance(values, tuple) and len(values) == len(DETAIL)):
            raise codec.BadEntry("a row's detail does not match its fields")
        for field, value in zip(DETAIL, values):
            _SLOTS[field].__set__(self, value)

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
        except AttributeError:  # the first head (or detail) field asked for decodes the head (or detail)
            row._expand(name)
            return slot.__get__(row, RunRow)

    def put(row: SentRow, value: Any) -> None:
        slot.__set__(row, value)

    return property(get, put, doc=f"``RunRow.{name}`` (decoded on first use).")


for _name in _FIELDS:
    setattr(SentRow, _name, _field(_name))


@dataclass(frozen=True, slots=True)
class Batch:
    """Runs found, in discovery order (``names``: their paths as text), and those of their rows the cache still
    held (looked up: all of them): each as (its place in ``names``, its head's text, its status, its detail's text,
    its cell texts) in ``sent``, or whole in ``stored`` (by place). Texts, not objects: a thousand rows pickle and
    unpickle in a few milliseconds (their heads' values and ``Path``s took tens)."""

    names: list[str]
    stored: dict[int, RunRow]
    sent: list[tuple[int, str, str, str, tuple[str, ...]]]

    @property
    def paths(self) -> list[Path]:
        """The runs found (made anew on every call)."""
        return [Path(name) for name in self.names]

    def rows(self, paths: list[Path]) -> dict[Path, RunRow]:
        """Every row of the batch by path (``paths``: ``self.paths``): ``SentRow``s, and the rows sent whole."""
        found: dict[Path, RunRow] = {}
        for i, head, status, detail, texts in self.sent:
            path = paths[i]
            found[path] = SentRow.of(path if path.is_absolute() else path.absolute(), head, status, detail, texts)
        for i, row in self.stored.items():
            found[paths[i]] = row
        return found


def _batch(session: Session, root: Path, paths: list[Path]) -> Batch:
    """``paths`` and their stored rows, each row's head and detail as the cache's texts where it has them."""
    from ..session.row_index import stored_detail, stored_head

    whole: dict[int, RunRow] = {}
    sent: list[tuple[int, str, str, str, tuple[str, ...]]] = []
    stored = session.stored_rows(paths, under=root)
    for i, path in enumerate(paths):
        row = stored.get(path)
        if row is None:
            continue
        detail = stored_detail(row)
        head = stored_head(row) if detail is not None else None
        if detail is None or head is None:
            whole[i] = row
        else:
            sent.append((i, head, row.status, detail, row_texts(row)))
    return Batch([str(path) for path in paths], whole, sent)


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
                paths = frame.paths
                rows = frame.rows(paths)
                with self._lock:
                    for path in paths:
                        self._stored[path] = rows.get(path)
                yield paths  # a batch's rows are at hand: the pass takes them together
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
