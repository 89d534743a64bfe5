"""A W&B folder without a run record starts when its files/wandb-metadata.json says (claims round eight, corpus7).

Public W&B 0.25 sweep (Tarun-AK/scaling): the first folder of id z4aeuvvw kept files/wandb-metadata.json
(``startedAt`` 11:59:25Z) but no ``.wandb`` log (GitHub refuses files over 100 MB; the snapshot keeps none of 4 MiB
and more). Its attempt was said to start at 10:59:25 UTC, the folder name's local stamp on the UTC offset learned
from folders written after a daylight-saving change, while the header of the same ``show`` quoted 11:59:25Z from
that very file. Fixture: fixtures/gen_wandb_starts.py (the real client, online against the local stub); here the
first folder's log is dropped and the second folder's name stamp moved an hour on (the writer's clock after the
change), the two things the public folders had.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pimm_inspect

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "wandb_starts" / "resumed_meta"


def _stamped_an_hour_later(name: str) -> str:
    prefix, stamp, rest = name[:4], name[4:19], name[19:]
    moved = datetime.strptime(stamp, "%Y%m%d_%H%M%S").timestamp() + 3600
    return prefix + datetime.fromtimestamp(moved).strftime("%Y%m%d_%H%M%S") + rest


def test_a_folder_without_a_log_starts_at_its_metadata_started_at(tmp_path):
    copy = tmp_path / "resumed_meta"
    shutil.copytree(RUN, copy)
    first, second = sorted((copy / "wandb").glob("run-*"))
    (first / "run-startsm1.wandb").unlink()
    second.rename(second.parent / _stamped_an_hour_later(second.name))
    started = json.loads((first / "files" / "wandb-metadata.json").read_text())["startedAt"]
    want = datetime.fromisoformat(started).astimezone(timezone.utc)

    run = pimm_inspect.load_run(copy)
    assert len(run.attempts) == 2
    one, two = run.attempts
    assert one.sources == (f"wandb/{first.name}",)
    # The metadata's second, on the UTC clock (before: an hour earlier, the name's stamp on the learned offset).
    assert one.started_at == want.strftime("%Y-%m-%d %H:%M:%S") and one.started_at_utc
    assert one.started_at < two.started_at
    # The header quotes the same file: the two surfaces say one time.
    assert run.provenance.created_at == started and started.startswith(want.strftime("%Y-%m-%dT%H:%M:%S"))


def test_a_folder_without_a_log_ends_as_its_debug_log_exit_code_says(tmp_path):
    """The same public folder was said to be "killed: log stops without an end marker" (there was no log at all)
    while its logs/debug.log said ``got exitcode: 0`` and files/wandb-summary.json held _step 186060."""
    copy = tmp_path / "resumed_meta"
    shutil.copytree(RUN, copy)
    first, _second = sorted((copy / "wandb").glob("run-*"))
    (first / "run-startsm1.wandb").unlink()
    assert "got exitcode: 0" in (first / "logs" / "debug.log").read_text()
    run = pimm_inspect.load_run(copy)
    assert [a.ended for a in run.attempts] == ["completed", "completed"]
    assert run.attempts[0].end_detail is None and run.status == "finished"


def test_a_crashed_folder_without_a_log_is_crashed_by_its_debug_log(tmp_path):
    console = RUN.parents[1] / "wandb_console" / "tqdm_bar"
    copy = tmp_path / "tqdm_bar"
    shutil.copytree(console, copy)
    (log,) = copy.rglob("run-tqdmoom1.wandb")
    log.unlink()
    assert "got exitcode: 1" in (log.parent / "logs" / "debug.log").read_text()
    run = pimm_inspect.load_run(copy)
    assert run.status == "crashed" and [a.ended for a in run.attempts] == ["crashed"]
    (crashed,) = [f for f in run.findings if f.code == "run.crashed"]
    rel = f"wandb/{log.parent.name}/files/output.log"
    assert crashed.paths == (rel,) and crashed.explanation.startswith(f"The traceback starts at {rel}:1.")
