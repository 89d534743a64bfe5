"""Hostile round six: command-line shapes of a password that the masker missed, and strings that reach every surface.

Each test names what leaked before its fix. Runs come from committed fixtures (real writers); hand-written bytes only
where no writer produces the string.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from pimm_inspect.analysis.secrets import MASK, find_in_text, mask_text, mask_value

ROOT = Path(__file__).resolve().parents[1]
SECRET = "Hunter2Pass"
"""A password in no known token shape: only the command's syntax says it is one."""


@pytest.mark.parametrize("line, masked", [
    (f"redis-cli -h cache -a {SECRET} ping", "redis-cli -h cache -a **** ping"),
    (f"/usr/bin/redis-cli -a '{SECRET} x' -p 6379", "/usr/bin/redis-cli -a '****' -p 6379"),
    (f"smbclient //srv/share -U alice%{SECRET}", "smbclient //srv/share -U alice%****"),
    (f"smbclient -U 'DOM\\alice%{SECRET}' //srv/s", "smbclient -U 'DOM\\alice%****' //srv/s"),
    (f"lftp -u alice,{SECRET} sftp://h", "lftp -u alice,**** sftp://h"),
    (f"ldapsearch -x -D cn=admin -w {SECRET} -b dc=x", "ldapsearch -x -D cn=admin -w **** -b dc=x"),
    (f"zip -P {SECRET} out.zip ckpt.pt", "zip -P **** out.zip ckpt.pt"),
    (f"unzip -P {SECRET} data.zip", "unzip -P **** data.zip"),
    (f"7z a -p{SECRET} out.7z ckpt", "7z a -p**** out.7z ckpt"),
    (f"sshpass -p{SECRET} ssh node", "sshpass -p**** ssh node"),
    (f"openssl enc -aes-256-cbc -k {SECRET} -in f", "openssl enc -aes-256-cbc -k **** -in f"),
    (f"ssh-keygen -t ed25519 -N {SECRET} -f key", "ssh-keygen -t ed25519 -N **** -f key"),
    (f"mosquitto_pub -u bob -P {SECRET} -t x", "mosquitto_pub -u bob -P **** -t x"),
    (f"sqlcmd -S db -U sa -P {SECRET}", "sqlcmd -S db -U sa -P ****"),
    (f"keytool -list -storepass {SECRET}", "keytool -list -storepass ****"),
    (f"mysql -u root -p{SECRET}Pw db", "mysql -u root -p**** db"),
])
def test_command_specific_password_flags_are_masked(line: str, masked: str) -> None:
    """Was: ``redis-cli -a``, ``smbclient -U user%pw``, ``lftp -u user,pw``, ``ldapsearch -w``, ``zip -P``,
    ``openssl -k``, ``ssh-keygen -N``, ``mosquitto_pub -P``, ``sqlcmd -P`` and ``keytool -storepass`` kept the password
    in clear; ``7z -pPW out.7z`` masked ``out.7z`` and kept the password; ``mysql -pPWPw db`` masked ``db`` too."""
    assert mask_text(line) == masked
    assert SECRET not in mask_text(line)
    assert find_in_text(line)[0].where == "line 1"


@pytest.mark.parametrize("line, masked", [
    (f"python t.py --verbose --token {SECRET}", "python t.py --verbose --token ****"),
    (f"python t.py -v -p {SECRET}", "python t.py -v -p ****"),
    (f"python t.py --lr -0.1 --password {SECRET}", "python t.py --lr -0.1 --password ****"),
])
def test_a_secret_flag_after_a_flag_is_masked(line: str, masked: str) -> None:
    """Was: the flag scan took the next flag as the first flag's value (``--verbose`` 'valued' ``--token``), so
    ``--token``'s own value was never looked at and any password after a bare switch stayed in clear."""
    assert mask_text(line) == masked


@pytest.mark.parametrize("line, masked", [
    (f"mongo mongodb://alice:{SECRET}@db:27017/x", "mongo mongodb://alice:****@db:27017/x"),
    (f"mongodb+srv://alice:{SECRET}@c0.example.net", "mongodb+srv://alice:****@c0.example.net"),
    (f"psql postgresql://alice:{SECRET}@db/x", "psql postgresql://alice:****@db/x"),
    (f"psql 'host=db user=alice password={SECRET}'", "psql 'host=db user=alice password=****'"),
    (f"sshpass -p {SECRET} ssh node", "sshpass -p **** ssh node"),
    (f"tool --password {SECRET}", "tool --password ****"),
    (f"docker run -e WANDB_API_KEY={SECRET} -e HF_TOKEN={SECRET} img",
     "docker run -e WANDB_API_KEY=**** -e HF_TOKEN=**** img"),
    (f"srun --export=ALL,WANDB_API_KEY={SECRET},X=1 python t.py", "srun --export=ALL,WANDB_API_KEY=****,X=1 python t.py"),
    (f"AWS_SECRET_ACCESS_KEY={SECRET}", "AWS_SECRET_ACCESS_KEY=****"),
    ("curl -H 'Authorization: Basic YWxpY2U6czNjcmV0' x", "curl -H 'Authorization: Basic ****' x"),
    (f"PGPASSWORD={SECRET} psql -h db", "PGPASSWORD=**** psql -h db"),
])
def test_common_shapes_named_in_round_six_stay_masked(line: str, masked: str) -> None:
    """The shapes the brief lists that were already masked: pinned so they stay so."""
    assert mask_text(line) == masked


@pytest.mark.parametrize("line", [
    "redis-cli -p 6379 ping", "smbclient -U alice //srv/share", "python train.py -a resnet50", "grep -w foo log",
    "curl -k https://x.example", "tar -P -cf x.tar d", "mkdir -p out", "srun -N 2 -p gpu python t.py",
    "ssh -p 22 node", "docker run -p 8080:80 img", "gh auth login --with-token < token.txt", "python -k 5 t.py",
    "zip -r out.zip d && python t.py -P 4", "ssh-keygen -l -f key", "lftp -u alice sftp://h",
])
def test_harmless_values_of_those_flags_stay(line: str) -> None:
    """``-a``, ``-w``, ``-P``, ``-k``, ``-N`` are harmless outside those commands; a shell redirection is no value."""
    assert mask_text(line) == line


def test_argument_lists_know_their_command() -> None:
    """Was: in an argument list ``["srun", "-p", "gpu"]`` masked the partition (the list's command was not looked at),
    and ``["redis-cli", "-a", PW]`` / ``["smbclient", "-U", "user%PW"]`` kept the password."""
    assert mask_value(["srun", "-N", "2", "-p", "gpu", "python"]) == ["srun", "-N", "2", "-p", "gpu", "python"]
    assert mask_value(["redis-cli", "-a", SECRET, "-p", "6379"]) == ["redis-cli", "-a", MASK, "-p", "6379"]
    assert mask_value(["smbclient", "-U", f"alice%{SECRET}"]) == ["smbclient", "-U", f"alice%{MASK}"]
    assert mask_value(["ldapsearch", "-x", "-w", SECRET]) == ["ldapsearch", "-x", "-w", MASK]
    assert mask_value(["python", "t.py", "-a", "resnet50", "-p", SECRET]) == ["python", "t.py", "-a", "resnet50",
                                                                              "-p", MASK]


def test_command_shapes_never_reach_any_command(tmp_path: Path) -> None:
    """The real pimm fixture's launch command and argv holding those shapes: no command prints the password."""
    from click.testing import CliRunner

    from pimm_inspect.cli.main import cli

    run = tmp_path / "run"
    shutil.copytree(ROOT / "fixtures" / "runs" / "e2_crashed", run, symlinks=True)
    meta_path = run / "run_metadata.json"
    meta = json.loads(meta_path.read_text())
    meta["launch_command"] = (f"redis-cli -a {SECRET}1 flushall; smbclient -U bob%{SECRET}2 //s/x; "
                              f"7z x -p{SECRET}3 data.7z && srun -p gpu python t.py")
    meta["command"] = meta["command"] + ["--db", "redis-cli", "-a", SECRET + "4"]
    meta_path.write_text(json.dumps(meta))
    for args in (["show", str(run)], ["show", "--json", str(run)], ["config", str(run)],
                 ["config", "--json", str(run)], ["report", str(run), "-o", "-", "--format", "md"]):
        result = CliRunner().invoke(cli, ["--no-cache", *args])
        assert result.exit_code in (0, 1), result.output[-2000:]
        assert SECRET not in result.stdout + result.stderr, args


HOSTILE_NAME = "run_\x1b]8;;https://evil.example/\x07x\x1b]8;;\x07\u202eexe\nrun0 info all.clear"
"""A folder name a shell glob hands to a command: an OSC 8 link, a bidi override and a forged line."""


@pytest.mark.parametrize("args", [
    ["url", "a", HOSTILE_NAME],  # click: "Got unexpected extra argument (...)"
    ["attempts", HOSTILE_NAME],  # no such command: the UI's PATH, then the extra argument
    ["curves", "--width", HOSTILE_NAME, "a"],  # click: "Invalid value for '--width': '...' is not a valid integer"
])
def test_click_usage_errors_quote_what_was_typed_inert(args: list[str], tmp_path: Path) -> None:
    """Was: click's own usage errors printed the argument as typed, so a hostile folder name expanded by a shell glob
    reached stderr with its escape sequences, bidi override and newline (a forged line after ``Error:``)."""
    from tests.hostile_support import run_cli

    (tmp_path / "a").mkdir()
    outcome = run_cli("--no-cache", *args, cwd=tmp_path)
    assert outcome.returncode == 2, outcome.stderr
    assert "\x1b" not in outcome.stderr and "\x07" not in outcome.stderr and "\u202e" not in outcome.stderr
    assert "\nrun0 info" not in outcome.stderr and "\\nrun0 info all.clear" in outcome.stderr


REAL_WRITER = ROOT / "fixtures" / "wandb_hostile" / "real_writer"
"""wandb 0.31's own offline run with hostile name, tags, notes, group, job type, entity, project, config, metric names,
summary and console (``fixtures/gen_wandb_hostile.py``)."""
_NOT_INERT = re.compile("[\x00-\x08\x0b-\x1f\x7f\x80-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


@pytest.mark.parametrize("args", [
    ["ls"], ["ls", "--json"], ["show"], ["show", "--json"], ["check"], ["check", "--json"], ["check", "--brief"],
    ["config"], ["config", "--json"], ["curves", "--json"], ["url"], ["report", "-o", "-", "--format", "md"],
    ["report", "-o", "-", "--format", "html"], ["compare", str(ROOT / "fixtures" / "wandb_console" / "interrupted")],
])
def test_every_string_wandb_lets_a_user_choose_is_inert_on_every_surface(args: list[str]) -> None:
    """No control, bidi or invisible character, no forged line and no password of the real writer's hostile run
    reaches any command's output (round six found none: this keeps it so)."""
    from click.testing import CliRunner

    from pimm_inspect.cli.main import cli

    command, *options = args
    result = CliRunner().invoke(cli, ["--no-cache", command, str(REAL_WRITER), *options])
    assert result.exit_code in (0, 1), result.output[-2000:]
    out = result.stdout + result.stderr
    assert any(m in out for m in ("hostile6", "real_writer", "H10", "H12")), out[:500]  # the run was read and shown
    assert _NOT_INERT.findall(out.replace("\n", "").replace("\t", "")) == []
    assert "Hunter2Pass" not in out
    assert not any(line.lstrip().startswith("run0 info") for line in out.splitlines())
