"""One walk of a config for both the secret check and the row's masked config (``analysis.secret_docs``)."""

from __future__ import annotations

import copy
from typing import Any

from pimm_inspect.analysis.secrets import MASK, find_in_mapping, mask_value
from pimm_inspect.analysis import secret_docs  # after secrets, which imports it last

DOC: dict[str, Any] = {"lr": 0.1, "wandb": {"key": "0123456789abcdef" * 2 + "01234567"},
                       "cmd": ["srun", "-p", "gpu", "python", "t.py", "--token", "Hunter2Pass"], "name": "x"}


def _fresh_walk(data: Any) -> Any:
    return secret_docs._walk(data, "", None)


def test_the_row_takes_the_copy_the_check_made_once() -> None:
    doc = copy.deepcopy(DOC)
    hits = find_in_mapping(doc)
    assert [h.where for h in hits] == ["cmd[6]", "wandb.key"]
    first = mask_value(doc)
    assert first == _fresh_walk(doc) and first["wandb"]["key"] == MASK and first["cmd"][2] == "gpu"
    second = mask_value(doc)  # handed out once: the next caller gets a walk of its own
    assert second == first and second is not first
    assert doc == DOC  # the document itself is never changed


def test_an_equal_but_other_object_or_a_key_is_walked_anew() -> None:
    doc = copy.deepcopy(DOC)
    find_in_mapping(doc)
    other = copy.deepcopy(DOC)
    assert mask_value(other) == _fresh_walk(other)
    assert mask_value(doc, "token") == secret_docs._walk(doc, "token", None)


def test_the_memo_is_bounded() -> None:
    docs = [{"password": f"p{i}"} for i in range(secret_docs.WALK_MEMO * 3)]
    for doc in docs:
        find_in_mapping(doc)
    assert len(secret_docs._WALKED) <= secret_docs.WALK_MEMO
    assert all(mask_value(doc) == {"password": MASK} for doc in docs)
