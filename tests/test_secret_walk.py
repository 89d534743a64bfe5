"""The secret walk of a config (``analysis.secret_docs``): where ``find_in_mapping`` finds secrets is what
``mask_value`` masks, a flag's command decides (``srun -p gpu`` is a partition), and the document is never changed."""

from __future__ import annotations

import copy
from typing import Any

from pimm_inspect.analysis.secrets import MASK, find_in_mapping, mask_value
from pimm_inspect.analysis import secret_docs  # after secrets, which imports it last

DOC: dict[str, Any] = {"lr": 0.1, "wandb": {"key": "0123456789abcdef" * 2 + "01234567"},
                       "cmd": ["srun", "-p", "gpu", "python", "t.py", "--token", "Hunter2Pass"], "name": "x"}


def _fresh_walk(data: Any) -> Any:
    return secret_docs._walk(data, "", None)


def test_the_check_and_the_mask_agree() -> None:
    doc = copy.deepcopy(DOC)
    hits = find_in_mapping(doc)
    assert [h.where for h in hits] == ["cmd[6]", "wandb.key"]
    first = mask_value(doc)
    assert first == _fresh_walk(doc) and first["wandb"]["key"] == MASK and first["cmd"][2] == "gpu"
    second = mask_value(doc)
    assert second == first and second is not first
    assert doc == DOC  # the document itself is never changed


def test_a_key_is_walked_with_its_name() -> None:
    doc = copy.deepcopy(DOC)
    assert mask_value(doc, "token") == secret_docs._walk(doc, "token", None)


def test_every_document_is_masked() -> None:
    docs = [{"password": f"p{i}"} for i in range(24)]
    for doc in docs:
        find_in_mapping(doc)
    assert all(mask_value(doc) == {"password": MASK} for doc in docs)
