"""Issue 14, "secrets that still leak": every output of every command on a run with each leak planted.

The run (tests/data/hostile/secrets over the crashed fixture) carries a bare 40-hex W&B key under
``wandb.key``/``wandb_key`` (config, config.py, the W&B config, a traceback line), URL passwords, argument
lists with ``--token x``/``--wandb-key HEX``/``--password 'spaced secret'``, ``api-key``, ``pass``,
``Authorization: Bearer``, ``X-Auth-Key``, a PEM ``ssh_key``, a JWT, a token used as a dict key, and dict
text in a train.log line. None of those strings may reach stdout or stderr; harmless flags stay readable.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hostile_support import leaky_run, planted_secrets, run_cli

COMMANDS = [["show"], ["show", "--json"], ["check", "--fail-on", "never"], ["check", "--json", "--fail-on", "never"],
            ["config"], ["config", "--json"], ["config", "--flat"], ["config", "--kind", "config_py"],
            ["config", "--kind", "wandb_config", "--json"], ["ls"], ["ls", "--json"], ["url"], ["url", "--json"]]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return leaky_run(tmp_path_factory.mktemp("secrets"))


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_no_planted_secret_in_any_output(run, args):
    outcome = run_cli(*args, str(run))
    assert outcome.returncode in (0, 1), outcome.stderr[-2000:]
    shown = outcome.stdout + outcome.stderr
    leaked = {name: value for name, value in planted_secrets().items() if value in shown}
    assert not leaked, (leaked, shown[:3000])


def test_masked_values_keep_what_is_harmless(run):
    doc = json.loads(run_cli("show", "--json", str(run)).stdout)["runs"][0]["provenance"]
    assert "--run.no-timestamp" in doc["launch_command"] and "--run.no-timestamp" in doc["command"]
    assert "--token **** --wandb-key **** --password '****' --api-key --run.no-timestamp" in doc["command"]
    assert "https://alice:****@db.example.org/x" in doc["launch_command"]
    config = json.loads(run_cli("config", "--json", str(run)).stdout)["config"]
    assert config["optimizer"] == {"lr": 0.001, "type": "AdamW"} and config["tokenizer"] == {"pad_token": "<pad>"}
    assert config["wandb"] == {"key": "****", "project": "leaky"} and config["store"] == {"pass": "****"}


def test_crash_message_and_secret_finding_are_masked(run):
    doc = json.loads(run_cli("check", "--json", "--fail-on", "never", str(run)).stdout)["runs"][0]
    codes = {f["code"]: f for f in doc["findings"]}
    assert "run.crashed" in codes and "provenance.secret" in codes
    crash = codes["run.crashed"]["message"] + codes["run.crashed"]["explanation"]
    assert "postgresql://admin:****@db" in crash or "ConnectionError" in crash
    places = codes["provenance.secret"]["message"] + codes["provenance.secret"]["explanation"]
    count = int(places.split(" ", 1)[0])
    assert count >= 20, places  # config, config.py, metadata, W&B config: each planted value counted
    for where in ("config.py", "resolved_config.json", "run_metadata.json", "headers.Authorization"):
        assert where in places, places


def test_wandb_link_drops_the_settings_password(run):
    """W&B's ``settings`` base_url with ``user:password@``: no link is built on it (issue 21), and the refusal
    names the host without the user name or password."""
    outcome = run_cli("url", str(run))
    # An offline run never synced still gets the sync command (it names folders, not the server).
    assert outcome.stdout.strip().startswith("wandb sync "), outcome
    doc = json.loads(run_cli("url", "--json", str(run)).stdout)
    assert doc["url_after_sync"] is None and doc["url"] is None, doc
    assert "***@wandb.corp.example.org" in doc["link_note"] and "user name or password" in doc["link_note"], doc


def test_a_key_in_the_args_wandb_recorded_is_a_finding_naming_that_file() -> None:
    """wandb-metadata.json keeps the launch command: a key passed on the command line is uploaded with it."""
    import pimm_inspect

    run = pimm_inspect.load_run(Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "wandb_online")
    (secret,) = [f for f in run.findings if f.code == "provenance.secret"]
    assert secret.paths == ("wandb/run-20261201_080216-online01/files/wandb-metadata.json",)
    assert "program args" in secret.explanation
    assert "0123456789abcdef" not in secret.message + secret.explanation  # named, never quoted
