"""Issues 19 and 21: what the secret rule says, where, and which shapes it masks.

- Lightning's ``hparams.yaml`` with tensors (real ``save_hyperparameters``: a ``!!binary`` block and an alias) is no
  secret; its binary body is shown as data.
- A ``provenance.secret`` finding names every place it counted, in the text output and in ``--json``.
- Slack webhook URLs, Azure ``AccountKey=``, ``.netrc`` passwords, the AWS secret key beside an ``AKIA`` id and AWS
  session tokens are masked in ``config``, the Log tab's lines and the dataset's config columns (one rule:
  ``analysis.secrets``); a NaN in a config is not a secret.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pytest

import pimm_inspect
from pimm_inspect.analysis.secrets import MASK, find_in_mapping, find_in_text, mask_text, mask_value
from tests.hostile_support import run_cli

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
LIGHTNING = RUNS / "lightning_tensor_hparams" / "lightning_logs" / "version_0"

# Made-up values in each shape (none is a real credential).
SLACK_PATH = "T0FAKE0001/B0FAKE0002/Fixture0Fake0Webhook0Path"
AZURE_KEY = "RmFrZUF6dXJlU3RvcmFnZUtleUZvclRlc3RzT25seQ+/Zm9yVGVzdHM0NTY3ODkw=="
NETRC_PASSWORD = "n3trc-Fixture-Pass"
AWS_ID = "AKIA" + "FIXTURE0FAKE0ID"[:16].ljust(16, "X")
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYFIXTUREKEY"
AWS_SESSION = "FwoGZXIvYXdzEJr//////////wEaDFixtureFakeSessionTokenBody0123456789abcdefghijklmnop+/="
SHAPES = {
    "slack": (f"https://hooks.slack.com/services/{SLACK_PATH}", SLACK_PATH, "https://hooks.slack.com/"),
    "azure": (f"DefaultEndpointsProtocol=https;AccountName=fixtureacct;AccountKey={AZURE_KEY};"
              "EndpointSuffix=core.windows.net", AZURE_KEY, "AccountName=fixtureacct"),
    "netrc": (f"machine api.wandb.ai login fixture-user password {NETRC_PASSWORD}", NETRC_PASSWORD,
              "machine api.wandb.ai login fixture-user password"),
    "aws_pair": (f"{AWS_ID},{AWS_SECRET}", AWS_SECRET, ","),
    "aws_session": (f"sts {AWS_SESSION} expires soon", AWS_SESSION, "expires soon"),
    # beyond the list
    "stripe": ("billing sk_live_" + "FixtureFakeStripe0123456789", "FixtureFakeStripe0123456789", "billing "),
    "sendgrid": ("mail SG.FixtureFakeSendGrid01.FixtureFakeSendGridSecret0123", "FixtureFakeSendGridSecret0123",
                 "mail "),
    "discord": ("https://discord.com/api/webhooks/123456789012/FixtureFakeDiscordWebhookToken_0123",
                "FixtureFakeDiscordWebhookToken_0123", "https://discord.com/api/webhooks/"),
    "databricks": ("host dapi" + "0123456789abcdef" * 2, "0123456789abcdef" * 2, "host "),
    "azure_sas": ("https://acct.blob.core.windows.net/c/f?sv=2024-01-01&sp=r&sig=FixtureFakeSasSignature0123%3D",
                  "FixtureFakeSasSignature0123", "sp=r&sig="),
}


def test_lightning_tensor_hparams_are_data_not_secrets() -> None:
    run = pimm_inspect.load_run(LIGHTNING)
    doc = run.config("lightning_hparams")
    assert doc is not None and doc.data is not None  # the alias (one tensor, two hyperparameters) is read
    assert doc.data["lr"] == 0.05
    assert doc.data["class_weights"] == doc.data["loss_weights"]
    assert re.fullmatch(r"<\d+ bytes of binary data>", doc.data["class_weights"][0][0])
    assert "provenance.secret" not in {f.code for f in run.findings}
    # Shown as text (a reader that cannot parse it), the base64 body is no PEM key either.
    text = (LIGHTNING / "hparams.yaml").read_text()
    assert "!!binary |" in text and find_in_text(text) == [] and mask_text(text) == text


def test_a_binary_block_does_not_hide_a_secret_beside_it() -> None:
    text = ("w: !!binary |\n  gAKKCmz8nEb5IGqoUBkugAJN6QMugAJ9cQAoWBAAAABwcm90b2NvbF92ZXJzaW9ucQFN6QNYDQAA\n"
            "password: hunter2secret\n"
            "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKjMzEfYyjiWA4R\n")
    assert [h.where for h in find_in_text(text)] == ["line 3", "line 4"]
    masked = mask_text(text)
    assert "hunter2secret" not in masked and "MIIEvQIBADAN" not in masked and "gAKKCmz8nEb5" in masked


def test_the_secret_finding_names_every_place_it_counted() -> None:
    run = RUNS / "e2_secret_in_config"
    (finding,) = [f for f in json.loads(run_cli("check", "--json", "--fail-on", "never", str(run)).stdout)["runs"][0]
                  ["findings"] if f["code"] == "provenance.secret"]
    count = int(finding["message"].split(" ", 1)[0])
    assert count == 8
    places = finding["explanation"]
    for where in ("resolved_config.json: launch_command, wandb_api_key", "config.py: lines 22-23",
                  "train.log: launch_command, wandb_api_key", "run_metadata.json: launch_command",
                  "launch.sbatch: line 18"):
        assert where in places, places
    text = run_cli("check", "--brief", "--fail-on", "never", str(run)).stdout
    assert "provenance.secret 8 value(s)" in text
    full = run_cli("check", "--fail-on", "never", str(run)).stdout
    assert "launch.sbatch: line 18" in " ".join(full.split())


def test_places_over_the_cap_are_counted_and_their_file_named() -> None:
    from pimm_inspect.analysis.checks_provenance import MAX_PLACES_PER_FILE, places_text

    places = [("config.py", f"line {n}") for n in range(1, 400, 2)] + [("launch.sbatch", "line 7")]
    text = places_text(places)
    assert f"and {200 - MAX_PLACES_PER_FILE} more place(s)" in text and "launch.sbatch: line 7" in text


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_shape_is_masked_as_text_and_as_a_value(shape: str) -> None:
    text, secret, kept = SHAPES[shape]
    masked = mask_text(text)
    assert secret not in masked and MASK in masked and kept in masked, masked
    assert secret not in json.dumps(mask_value({"notes": {"value": text}, "args": ["run", text]}))
    assert find_in_mapping({"notes": text}) and find_in_text(f"x = 1\n{text}\n")[0].where == "line 2"


def test_aws_shapes_keep_what_is_harmless() -> None:
    commit = "0123456789abcdef0123456789abcdef01234567"
    assert mask_text(f"{AWS_ID} commit {commit}") == f"{MASK} commit {commit}"
    lone = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYFIXTUREKEY is a 40-character word"
    assert mask_text(lone) == lone  # no access key id near it: not known to be a key
    assert mask_text("the password policy is strict") == "the password policy is strict"


@pytest.fixture(scope="module")
def shaped_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("shapes") / "e2_clean"
    shutil.copytree(RUNS / "e2_clean", run, symlinks=True)
    config = json.loads((run / "resolved_config.json").read_text())
    config["notify"] = {name: text for name, (text, _s, _k) in SHAPES.items()}
    config["ema_decay_nan"] = math.nan
    (run / "resolved_config.json").write_text(json.dumps(config, indent=2))
    with open(run / "train.log", "a", encoding="utf-8") as log:
        for text, _s, _k in SHAPES.values():
            log.write(f"[2026-07-16 09:00:00,000 INFO train.py line 1] {text}\n")
    return run


def _no_secret_in(shown: str) -> None:
    leaked = [name for name, (_t, secret, _k) in SHAPES.items() if secret in shown]
    assert not leaked, leaked


@pytest.mark.parametrize("args", [["config"], ["config", "--json"], ["config", "--flat"], ["show", "--json"],
                                  ["check", "--fail-on", "never"]], ids=" ".join)
def test_no_shape_reaches_any_command(shaped_run: Path, args: list[str]) -> None:
    outcome = run_cli(*args, str(shaped_run))
    assert outcome.returncode == 0, outcome.stderr[-2000:]
    _no_secret_in(outcome.stdout + outcome.stderr)


def test_no_shape_reaches_the_log_tab_or_the_dataset(shaped_run: Path) -> None:
    from pimm_inspect.report.dataset import config_columns

    run = pimm_inspect.load_run(shaped_run)
    columns = config_columns(run)
    _no_secret_in(json.dumps(columns, default=str))
    assert ("notify.slack", "https://hooks.slack.com/****") in columns["config_flat"]
    # The Log tab shows each line through the same rule (tui/widgets/log_view.py).
    lines = (shaped_run / "train.log").read_text().splitlines()
    _no_secret_in("\n".join(mask_text(line) for line in lines))


def test_a_nan_in_a_config_is_not_a_secret(shaped_run: Path) -> None:
    assert find_in_mapping({"lr": math.nan, "betas": [0.9, math.nan], "nested": {"x": float("nan")}}) == []
    run = pimm_inspect.load_run(shaped_run)  # analysed
    found = [f for f in run.findings if f.code == "provenance.secret"]
    assert len(found) == 1, [(f.message, f.explanation) for f in found]
    finding = found[0]
    assert "ema_decay_nan" not in finding.explanation and "notify.slack" in finding.explanation
