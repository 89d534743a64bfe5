"""Every command on every fixture run: real content, not just exit codes."""

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import pimm_inspect
from pimm_inspect.cli.main import cli

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
ALL = pimm_inspect.discover(RUNS)


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def loaded():
    return {p: pimm_inspect.load_run(p) for p in ALL}


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.relative_to(RUNS).as_posix())
def test_every_command_on_every_fixture(path, loaded, tmp_path):
    run = loaded[path]
    show = json.loads(invoke("show", path, "--json").stdout)["runs"][0]
    assert (show["path"], show["kind"], show["status"]) == (".", run.kind, run.status)
    assert len(show["attempts"]) == len(run.attempts)
    for tag, info in show["scalars"].items():
        assert info["points"] > 0 and info["first_step"] <= info["last_step"], tag
    check = json.loads(invoke("check", path, "--json", "--fail-on", "never").stdout)
    assert sorted(f["code"] for f in check["runs"][0]["findings"]) == sorted(f.code for f in run.findings)

    tags = run.tags()
    if tags:
        tag = "train_batch/loss" if "train_batch/loss" in tags else tags[0]
        curves = json.loads(invoke("curves", path, "--tag", tag, "--json", "--policy", "newest").stdout)
        (line,) = curves["lines"]
        assert line["tag"] == tag and len(line["x"]) == len(line["y"]) > 0
        assert line["x"] == sorted(set(line["x"]))  # newest policy: one point per step, in order
        out = tmp_path / "all.csv"
        assert invoke("export", path, "--format", "csv", "-o", out).exit_code == 0
        rows = list(csv.DictReader(io.StringIO(out.read_text())))
        # One row per (tag, step, attempt) of each tag's preferred source: the points show --json counts.
        assert len(rows) == sum(info["points"] for info in show["scalars"].values())
        assert {r["tag"] for r in rows} == set(tags)
        assert invoke("export", path, "--format", "csv", "-o", out, "--all-sources").exit_code == 0
        every = list(csv.DictReader(io.StringIO(out.read_text())))
        # Every source kind's copy of every tag (within a kind the policy keeps one row per step and attempt:
        # two files of one process holding the same step, as HF's post-training eval writes, give one row).
        kind_of = {s.source: s.source_kind for s in run.series}
        assert {(r["tag"], kind_of[r["source"]]) for r in every} == {(s.tag, s.source_kind) for s in run.series if len(s)}

    config = invoke("config", path, "--flat")
    if any(doc.data or doc.text for doc in run.configs):
        assert config.exit_code == 0 and config.stdout.strip()
    elif run.configs:  # an empty document (Lightning's hparams.yaml of a module that saved none is `{}`): no keys
        assert config.exit_code == 0 and not config.stdout.strip()
    else:
        assert config.exit_code == 2

    url = invoke("url", path)
    if run.wandb.url or run.wandb.sync_command:
        assert url.exit_code == 0 and url.stdout.strip() in (run.wandb.url, run.wandb.sync_command)
    else:
        assert url.exit_code == 1


def test_ls_and_check_on_the_whole_tree(loaded):
    doc = json.loads(invoke("ls", RUNS, "--json").stdout)
    assert len(doc["runs"]) == len(ALL)
    check = json.loads(invoke("check", RUNS, "--json", "--fail-on", "never").stdout)
    codes = {r["path"]: sorted(f["code"] for f in r["findings"]) for r in check["runs"]}
    for path, run in loaded.items():
        assert codes[path.relative_to(RUNS).as_posix()] == sorted(f.code for f in run.findings)
