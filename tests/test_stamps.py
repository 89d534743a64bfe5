"""``load.stamps.stamp_seconds`` gives what ``datetime.strptime(text, fmt).timestamp()`` gives, for every text."""

from __future__ import annotations

import random
from datetime import datetime

import pytest

from pimm_inspect.load.stamps import stamp_seconds


def _strptime(text: str | None, fmt: str) -> float | None:
    if not text:
        return None
    try:
        return datetime.strptime(text, fmt).timestamp()
    except ValueError:
        return None


@pytest.mark.parametrize("fmt", ["%Y-%m-%d %H:%M:%S", "%Y%m%d-%H%M%S", "%Y%m%d_%H%M%S"])
def test_stamp_seconds_is_strptime(fmt: str) -> None:
    rng = random.Random(5)
    texts: list[str | None] = [None, "", " ", "2026-07-01 12:00:03", "2026-7-1 1:2:3", "2026-02-29 00:00:00",
                               "2024-02-29 23:59:59", "2026-13-01 00:00:00", "2026-07-01 24:00:00",
                               "2026-07-01 12:00:60", "2026-07-01 12:00:61", "0000-01-01 00:00:00",
                               "2026-07-01 12:00:03 ", "2026-07-01T12:00:03", "\u0662\u0660\u0662\u0666-07-01 12:00:03",
                               "20260701-120003", "20260701-240003", "20261301-120003", "2026070-1120003",
                               "20260701_120003"]
    for _ in range(4000):
        stamp = datetime(rng.randint(1971, 2090), rng.randint(1, 12), rng.randint(1, 28), rng.randint(0, 23),
                         rng.randint(0, 59), rng.randint(0, 59))
        text = stamp.strftime(fmt)
        if rng.random() < 0.3:  # damage a digit or a separator
            at = rng.randrange(len(text))
            text = text[:at] + rng.choice("0123456789-: _x9") + text[at + 1:]
        texts.append(text)
    answered = 0
    for text in texts:
        got, want = stamp_seconds(text, fmt), _strptime(text, fmt)
        assert got == want, (text, got, want)
        answered += want is not None
    assert answered > 2000
