"""Where a crash's traceback is, said so a user can find it: a W&B folder without files/output.log has its console
only in the binary ``.wandb`` log, whose "line 2" is a console line, not a line of the file (claims round five,
seen on public W&B 0.15 folders: "The traceback starts at run-0elbgqo6.wandb:2").

Fixture: fixtures/runs/wandb_crashed (the real wandb client), its output.log removed from a copy.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pimm_inspect

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "wandb_crashed"


def test_a_traceback_only_in_the_wandb_log_is_named_as_a_console_line(tmp_path):
    copy = tmp_path / "wandb_crashed"
    shutil.copytree(RUN, copy)
    (output,) = copy.rglob("files/output.log")
    output.unlink()
    run = pimm_inspect.load_run(copy)
    (crashed,) = [f for f in run.findings if f.code == "run.crashed"]
    (log,) = [p for p in crashed.paths]
    assert log.endswith(".wandb")
    assert crashed.explanation.startswith(f"The traceback starts at console line 2 of the output captured in {log}.")


def test_a_secret_in_a_wandb_config_names_the_log_that_holds_it_and_no_pimm_template():
    import dataclasses

    from pimm_inspect.analysis.checks_provenance import check_secrets

    run = pimm_inspect.load_run(RUN.parent / "wandb_clean")
    (doc,) = [d for d in run.configs if d.kind == "wandb_config"]
    key = "wandb_" + "0123456789abcdef" * 2 + "01234567"  # shaped like a W&B API key (40 hex after the prefix)
    leaked = dataclasses.replace(doc, data={**dict(doc.data or {}), "logger": {"api_key": key}})
    run = dataclasses.replace(run, configs=(leaked,))
    (finding,) = check_secrets(run)
    (log,) = [p for p in run.wandb_runs[0].file_roles if p.endswith(".wandb")]
    # Before: "in wandb/offline-run-...-clean001" (the folder) and "pimm sends the resolved config to W&B".
    assert finding.paths == (log,) and f"Found at {log}: logger.api_key." in finding.explanation
    assert "pimm sends" not in finding.explanation


def test_an_exit_code_without_a_traceback_names_the_log_that_recorded_it(tmp_path):
    """``wandb_exit_code``: console capture off, ``finish(exit_code=255)`` (public W&B 0.21 offline folders, where
    the finding said "The error is in ." naming the run folder itself). The only evidence is the exit record in the
    transaction log, and the finding says so."""
    run = pimm_inspect.load_run(RUN.parent / "wandb_exit_code")
    (crashed,) = [f for f in run.findings if f.code == "run.crashed"]
    (log,) = crashed.paths
    assert log.startswith("wandb/offline-run-") and log.endswith("/run-exit0255.wandb")
    assert (RUN.parent / "wandb_exit_code" / log).is_file()
    assert crashed.message == "attempt 1 crashed at step 3: exit code 255"
    assert crashed.explanation == f"W&B recorded the exit code in {log}; no traceback was captured. The run did not recover."
    # The run folder itself, opened as the run: the log is named relative to it.
    (folder,) = (RUN.parent / "wandb_exit_code" / "wandb").iterdir()
    (inside,) = [f for f in pimm_inspect.load_run(folder).findings if f.code == "run.crashed"]
    assert inside.paths == ("run-exit0255.wandb",)
