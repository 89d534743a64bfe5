"""A stored row's head (the row without its root and detail) as one flat JSON list, and back.

The tree's row index (``row_index``) stores each row's head so; the UI's prefetch child hands that text on as it is,
and the UI decodes a row's head only when something asks for one of its fields (``tui.prefetch.SentRow``). No numpy
here (nor in what it imports): the UI's process decodes heads without it.
"""

from __future__ import annotations

import json
from typing import Any

from ..evidence import RunRow, RunSummary
from .store import codec

SUMMARY_FIELDS = tuple(RunSummary.__dataclass_fields__)
HEAD_FIELDS = ("name", "kind", "era", "status", "attempts", "wandb_run_ids", "errors", "warnings", "infos",
               "summary", "top_finding")
"""The fields of a row's head, in their order in its text."""
_IDS_AT = HEAD_FIELDS.index("wandb_run_ids")
_SUMMARY_AT = HEAD_FIELDS.index("summary")


def head_text(row: RunRow) -> str:
    """The row without its root and detail as one flat JSON list (``head_values`` rebuilds it in microseconds)."""
    summary = row.summary
    values: list[Any] = [getattr(row, name) for name in HEAD_FIELDS]
    values[_IDS_AT] = list(row.wandb_run_ids)
    values[_SUMMARY_AT] = [getattr(summary, name) for name in SUMMARY_FIELDS]
    return json.dumps(values, separators=(",", ":"))


def head_values(text: str) -> dict[str, Any]:
    """The head fields ``head_text`` wrote; ``codec.BadEntry`` when it does not decode to them."""
    try:
        values = json.loads(text)
        if not (type(values) is list and len(values) == len(HEAD_FIELDS)):
            raise codec.BadEntry("a row head of another shape")
        out = dict(zip(HEAD_FIELDS, values))
        out["wandb_run_ids"] = tuple(out["wandb_run_ids"])
        out["summary"] = RunSummary(*out["summary"])
        return out
    except (ValueError, TypeError) as exc:
        raise codec.BadEntry(f"a row head that does not decode: {exc}") from None


def same(a: Any, b: Any) -> bool:
    """Equal values of the same types all the way down (an int where a float was would print otherwise)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, RunSummary):
        return all(same(getattr(a, n), getattr(b, n)) for n in SUMMARY_FIELDS)
    if isinstance(a, float) and a != a:
        return bool(b != b)  # NaN
    return bool(a == b)


def exact_head_text(row: RunRow) -> str | None:
    """``head_text(row)`` when ``head_values`` gives back exactly the row's head fields, else None."""
    head = head_text(row)
    values = head_values(head)
    return head if all(same(values[name], getattr(row, name)) for name in HEAD_FIELDS) else None
