"""A CSV-only Lightning run that EarlyStopping ended (fixtures/gen_lightning_early_stop.py, pytorch-lightning 2.6).

What is claimed today, and from which file: ``stopped`` with "log stops without an end marker", from metrics.csv (a
CSVLogger writes no end marker). Its last checkpoint says more: ModelCheckpoint runs after EarlyStopping, so
checkpoints/last.ckpt holds the callback's ``stopped_epoch`` and ``stopping_reason_message``: a normal end. Reading
that state is the checkpoint reader's (sources/checkpoint) and the attempt's end is load/attempts' rule: the claim it
should make is pinned below as a strict xfail until they do.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pimm_inspect.cli.main import cli

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "lightning_shapes" / "early_stop" / "lightning_logs" / "version_0"


def _show() -> dict[str, object]:
    result = CliRunner().invoke(cli, ["--no-cache", "show", "--json", str(RUN)])
    assert result.exit_code in (0, 1), result.output
    run: dict[str, object] = json.loads(result.stdout)["runs"][0]
    return run


def test_what_is_claimed_and_from_which_file() -> None:
    run = _show()
    attempt = run["attempts"][0]  # type: ignore[index]
    assert run["status"] == "stopped"
    assert (attempt["ended"], attempt["end_detail"], attempt["sources"]) == (
        "stopped", "log stops without an end marker", ["metrics.csv"])
    assert (attempt["first_step"], attempt["last_step"]) == (0, 3)


def test_the_last_checkpoint_records_the_early_stop() -> None:
    torch = pytest.importorskip("torch")
    state = torch.load(RUN / "checkpoints" / "last.ckpt", weights_only=True, map_location="cpu")
    early = next(v for k, v in state["callbacks"].items() if k.startswith("EarlyStopping"))
    assert early["stopped_epoch"] == 1 and state["epoch"] == 1 and state["global_step"] == 4
    assert early["stopping_reason_message"].startswith("Monitored metric val_loss did not improve")


@pytest.mark.xfail(strict=True, reason="EarlyStopping's state in last.ckpt is not read (sources/checkpoint, "
                                       "load/attempts: other owners)")
def test_the_end_names_the_early_stop_and_its_checkpoint() -> None:
    attempt = _show()["attempts"][0]  # type: ignore[index]
    assert "EarlyStopping" in (attempt["end_detail"] or "") and "checkpoints/last.ckpt" in attempt["sources"]
