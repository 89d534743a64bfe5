"""Issue 20 leftover: ``Run.scalars()`` works on a Run nobody analysed (built by hand, or by ``load`` alone), with
the same rows as the analysed run (the rules live once, in analysis)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import pimm_inspect
from pimm_inspect.load.assemble import load_run as load_unanalysed
from pimm_inspect.model import Run, make_series

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def test_scalars_of_a_run_built_by_hand() -> None:
    run = Run(root=Path("/nowhere"), kind="tensorboard", era=None, status="unknown",
              series=(make_series("loss", [1, 2, 2], [0.5, 0.25, 0.75], None, "ev.1", 1),))
    assert run.scalar_table is None
    frame = run.scalars()  # was ValueError("Run.scalars() needs an analysed run ...")
    assert frame["step"].tolist() == [1, 2, 2] and frame["seq"].tolist() == [0, 0, 1]
    assert frame["value"].tolist() == [0.5, 0.25, 0.75]
    assert run.scalars(policy="newest")["value"].tolist() == [0.5, 0.75]


def test_scalars_of_a_loaded_run_agree_with_the_analysed_one() -> None:
    raw = load_unanalysed(RUNS / "e2_rollback")
    analysed = pimm_inspect.load_run(RUNS / "e2_rollback")
    for policy in ("all", "newest"):
        a, b = raw.scalars(policy=policy), analysed.scalars(policy=policy)
        assert len(a) > 100 and a.shape == b.shape
        assert np.array_equal(a["step"].to_numpy(), b["step"].to_numpy())
        assert np.array_equal(a["value"].to_numpy(), b["value"].to_numpy(), equal_nan=True)
