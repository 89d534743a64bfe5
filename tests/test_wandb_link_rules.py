"""Links and commands built from run files (issue 21): only vetted http(s) links with valid hosts and no
userinfo, names without control characters or ``/ \\ # ? % :``, each percent-encoded; sync commands that name
existing folders, shell-quoted; the UI opener and copier take nothing else.

Inputs: the real wandb client's folders (fixtures/runs/wandb_clean, fixtures/wandb_claims/custom_id) copied and
given a hand-written ``settings`` file, as a colleague (or a compromised job) could leave beside them.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import pimm_inspect
from pimm_inspect.cli.main import cli
from pimm_inspect.sources.wandb.link_rules import vet_base, vetted_link
from pimm_inspect.tui import links
from pimm_inspect.tui.facts import wandb_target

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _synced_copy(tmp_path: Path, settings: str, scenario: Path = FIXTURES / "runs" / "wandb_clean") -> Path:
    """A copy of a real offline run, marked as uploaded (so its link would be live), with ``settings`` beside it."""
    run = tmp_path / "run"
    shutil.copytree(scenario, run)
    for folder in (run / "wandb").iterdir():
        if folder.is_dir():
            (folder / f"{next(folder.glob('run-*.wandb')).name}.synced").write_text("")
    (run / "wandb" / "settings").write_text(settings)
    return run


HOSTILE_BASES = ["javascript:alert(document.cookie)//", "file:///etc/passwd#", "--proxy-server=evil.example:1",
                 "https://user:hunter2@wandb.example.org", "https://wandb.ai@evil.example", "https://wandb.ai\\@evil.example",
                 "https://evil.example#@wandb.ai", "https://exa mple.org", "https://wandb.ai:99999",
                 "https://wand\u0430b.ai", "ftp://wandb.ai", "https://-bad-.example", "http://[::1",
                 "https://wandb.ai/../../evil"]


@pytest.mark.parametrize("base", HOSTILE_BASES)
def test_a_hostile_server_address_gives_no_link_and_a_finding(tmp_path, base):
    run_dir = _synced_copy(tmp_path, f"[default]\nbase_url = {base}\nentity = team\n")
    run = pimm_inspect.load_run(run_dir)
    assert run.wandb.url is None and run.wandb.url_after_sync is None
    (refused,) = [f for f in run.findings if f.code == "wandb.link-refused"]
    assert "server address" in refused.message
    assert "hunter2" not in refused.message + refused.explanation + (run.wandb.link_note or "")
    result = CliRunner().invoke(cli, ["url", str(run_dir)])
    assert result.exit_code == 1 and result.stdout == ""
    doc = json.loads(CliRunner().invoke(cli, ["show", "--json", str(run_dir)]).stdout)["runs"][0]
    assert doc["wandb"]["url"] is None and doc["wandb"]["link_refused"]


@pytest.mark.parametrize("base, link", [
    ("https://wandb.example.org/", "https://wandb.example.org/team/pimm-fixtures/runs/clean001"),
    ("https://WANDB.example.org:8443/graphql", "https://wandb.example.org:8443/team/pimm-fixtures/runs/clean001"),
    ("http://10.0.0.7:8080", "http://10.0.0.7:8080/team/pimm-fixtures/runs/clean001"),
    ("https://api.wandb.ai", "https://wandb.ai/team/pimm-fixtures/runs/clean001"),
    ("https://xn--80ak6aa92e.example/wandb", "https://xn--80ak6aa92e.example/wandb/team/pimm-fixtures/runs/clean001"),
])
def test_a_valid_server_address_becomes_the_link_rebuilt_from_its_parts(tmp_path, base, link):
    run = pimm_inspect.load_run(_synced_copy(tmp_path, f"[default]\nbase_url = {base}\nentity = team\n"))
    assert run.wandb.url == link and not run.wandb.link_refused
    assert not [f for f in run.findings if f.code == "wandb.link-refused"]


@pytest.mark.parametrize("entity", ["team\n  $(touch /tmp/pwned)", "team\x1b]52;c;ZWNobyBoaQ==\x07", "team/other",
                                    "te%61m", "team#x", "team?x=1", "a:b", "back\\slash", "zero\u200bwidth", ".."])
def test_a_hostile_entity_gives_no_link_and_no_command_text_from_it(tmp_path, entity):
    settings = "[default]\nentity = " + entity.replace("\n", "\n") + "\n"
    run_dir = _synced_copy(tmp_path, settings)
    run = pimm_inspect.load_run(run_dir)
    assert run.wandb.url is None
    (refused,) = [f for f in run.findings if f.code == "wandb.link-refused"]
    assert "entity" in refused.message
    assert not any(ch in refused.message for ch in "\n\x1b\x07\u200b")  # the value is shown escaped
    url, command = wandb_target(run)
    assert url is None and links.copyable(url or command) is None


def test_names_wandb_accepts_are_percent_encoded_one_segment_each(tmp_path):
    run_dir = _synced_copy(tmp_path, "[default]\nentity = pimm team\n", FIXTURES / "wandb_claims" / "custom_id")
    run = pimm_inspect.load_run(run_dir)
    assert run.wandb.run_ids == ("Mancala 8",)
    assert run.wandb.url == "https://wandb.ai/pimm%20team/pimm-claims/runs/Mancala%208"
    assert vetted_link(run.wandb.url) and links.copyable(run.wandb.url) == run.wandb.url
    result = CliRunner().invoke(cli, ["url", str(run_dir)])
    assert result.exit_code == 0 and result.stdout == run.wandb.url + "\n"


def test_the_sync_command_quotes_paths_and_names_existing_folders(tmp_path):
    odd = tmp_path / "it's $(here)" / "runs"
    shutil.copytree(FIXTURES / "wandb_claims" / "custom_id", odd)
    run = pimm_inspect.load_run(odd)
    words = shlex.split(run.wandb.sync_command)
    assert words[:2] == ["wandb", "sync"] and len(words) == 4
    assert all(Path(w).is_dir() and Path(w).is_absolute() for w in words[2:])
    assert links.copyable(run.wandb.sync_command) == run.wandb.sync_command


def test_a_folder_name_that_is_not_text_gets_a_command_naming_its_bytes(tmp_path):
    parent = Path(os.fsdecode(bytes(tmp_path) + b"/run_\xff\xfe"))
    shutil.copytree(FIXTURES / "runs" / "wandb_clean", parent)
    run = pimm_inspect.load_run(parent)
    assert run.wandb.sync_command is not None and "run_\\xff\\xfe" in run.wandb.sync_command
    assert run.wandb.sync_command.startswith("wandb sync $'/") and run.wandb.sync_command.isprintable()
    assert not [f for f in run.findings if f.code == "wandb.link-refused"]
    url, command = wandb_target(run)
    assert links.copyable(url or command) == run.wandb.sync_command  # vetted: the UI copies it


def test_the_opener_never_passes_an_unvetted_or_option_like_argument(monkeypatch):
    opened: list[str] = []
    monkeypatch.setattr(links, "browser_available", lambda: True)
    monkeypatch.setattr(links.webbrowser, "open", lambda url: opened.append(url) or True)
    for bad in ("--proxy-server=evil", "javascript:alert(1)", "file:///etc/passwd#", "https://u:p@wandb.ai/a/b/runs/c",
                "https://wandb.ai/a/b/runs/c\nrm -rf ~", "https://wandb.ai/a b/p/runs/c"):
        assert links.open_in_browser(bad) is False
    assert opened == []
    assert links.open_in_browser("https://wandb.ai/pimm%20team/p/runs/Mancala%208") is True
    assert opened == ["https://wandb.ai/pimm%20team/p/runs/Mancala%208"]


def test_vet_base_shows_the_host_it_opens():
    assert vet_base("https://WandB.example.org:443/") == ("https://wandb.example.org:443", None)
    base, problem = vet_base("https://wandb.ai@evil.example")
    assert base is None and "***@evil.example" in problem and "wandb.ai" not in problem.split("***@")[1]


@pytest.mark.parametrize("api_url", ["javascript:alert(1)//x", "file:///etc/passwd#", "-oProxyCommand=evil"])
def test_a_hostile_api_url_in_debug_internal_log_gives_no_link(tmp_path, api_url):
    run_dir = tmp_path / "run"
    shutil.copytree(FIXTURES / "runs" / "wandb_online", run_dir)
    before = pimm_inspect.load_run(run_dir)
    assert before.wandb.url is not None  # the real online run has a link
    (log,) = run_dir.glob("wandb/*/logs/debug-internal.log")
    with log.open("a") as fh:  # wandb-core names the API URL it failed to reach
        fh.write(json.dumps({"time": "2026-12-01T08:02:20Z", "level": "ERROR", "msg": "api: request failed",
                             "url": api_url, "status": 500}) + "\n")
    run = pimm_inspect.load_run(run_dir)
    assert run.wandb.url is None
    assert [f for f in run.findings if f.code == "wandb.link-refused"]
    result = CliRunner().invoke(cli, ["url", str(run_dir)])
    assert result.exit_code == 1 and result.stdout == ""


def test_a_folder_without_an_entity_is_the_default_entity_of_the_same_project():
    """Corpus (Mancala 8): every run record said project Mancala with no entity, one debug.log named the entity;
    that is one W&B run, not '2 projects (?/Mancala, team/Mancala)'. Another project is still another run."""
    from pimm_inspect.sources.wandb.link_rules import id_projects

    assert id_projects([(None, "Mancala"), ("team", "Mancala"), ("", "Mancala"), (None, None)]) == ["team/Mancala"]
    assert id_projects([(None, "Mancala")]) == ["?/Mancala"]
    assert id_projects([("team-a", "p"), (None, "q"), ("team-b", "p")]) == ["team-a/p", "?/q", "team-b/p"]
