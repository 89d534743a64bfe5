"""Names that are not text: undecodable bytes, backslashes and invisible characters, on every surface."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from pimm_inspect.cli.main import cli
from tests.test_hostile_exports import tb_run

RAW = b"run_\xff\xfe"
LITERAL = "run_\\xff\\xfe"  # the eleven characters r u n _ \ x f f \ x f e


def _twins(tmp_path: Path) -> Path:
    """Two runs: one folder whose name holds the bytes ff fe, one literally named ``run_\\xff\\xfe``."""
    root = tmp_path / "tree"
    tb_run(root / "raw", ["train/loss"])
    os.rename(os.fsencode(root / "raw"), os.fsencode(root) + b"/" + RAW)
    tb_run(root / LITERAL, ["train/loss"])
    return root


def test_ls_json_gives_two_folders_two_paths(tmp_path: Path) -> None:
    root = _twins(tmp_path)
    result = CliRunner().invoke(cli, ["--no-cache", "ls", "--json", str(root)])
    assert result.exit_code == 0, result.output
    runs = json.loads(result.stdout)["runs"]
    paths = sorted(r["path"] for r in runs)
    assert paths == ["run_\\\\xff\\\\xfe", "run_\\xff\\xfe"]  # the literal name's backslashes doubled
    assert sorted(r["name"] for r in runs) == paths


def test_show_and_check_json_name_the_folders_apart(tmp_path: Path) -> None:
    root = _twins(tmp_path)
    for command in ("show", "check"):
        result = CliRunner().invoke(cli, ["--no-cache", command, "--json", str(root)])
        assert len({r["path"] for r in json.loads(result.stdout)["runs"]}) == 2, command


def test_ls_text_names_the_folders_apart(tmp_path: Path) -> None:
    root = _twins(tmp_path)
    result = CliRunner().invoke(cli, ["--no-cache", "ls", str(root)])
    names = [line.split()[0] for line in result.stdout.splitlines()[1:]]
    assert sorted(names) == ["run_\\\\xff\\\\xfe", "run_\\xff\\xfe"]


def test_dataset_run_ids_differ(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    import pyarrow.dataset as ds

    root = _twins(tmp_path)
    out = tmp_path / "dataset"
    result = CliRunner().invoke(cli, ["--no-cache", "export", str(root), "--format", "parquet", "-o", str(out)])
    assert result.exit_code == 0, result.output
    runs = ds.dataset(out / "runs", format="parquet", partitioning="hive").to_table().to_pylist()
    assert sorted(r["run_id"] for r in runs) == ["run_\\\\xff\\\\xfe", "run_\\xff\\xfe"]
    scalars = ds.dataset(out / "scalars", format="parquet", partitioning="hive").to_table().to_pylist()
    assert {r["run_id"] for r in scalars} == {r["run_id"] for r in runs}


INVISIBLE = ["\u200b", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u200e", "\u200f"]
"""ZWSP, ZWJ, word joiner, BOM, soft hyphen, LRM, RLM."""


def _lookalikes(tmp_path: Path) -> Path:
    return tb_run(tmp_path / "run", ["train/loss"] + [f"train/{c}loss" for c in INVISIBLE])


def test_show_and_curves_show_invisible_characters(tmp_path: Path) -> None:
    run = _lookalikes(tmp_path)
    result = CliRunner().invoke(cli, ["--no-cache", "show", str(run)])
    tag_lines = [line.split()[0] for line in result.stdout.splitlines() if line.strip().startswith("train/")]
    assert len(set(tag_lines)) == 8
    assert "train/\\u200bloss" in tag_lines and "train/\\xadloss" in tag_lines
    assert all(c not in result.stdout for c in INVISIBLE)
    curves = CliRunner().invoke(cli, ["--no-cache", "curves", str(run), "--tag", "train/*"])
    assert "train/\\u200bloss" in curves.stdout and all(c not in curves.stdout for c in INVISIBLE)


LOOK_LIKE_A_SPACE = ["\u00a0", "\u2009", "\u202f", "\u205f", "\u2800", "\u1680"]
"""No-break, thin, narrow no-break, medium mathematical space, braille blank, Ogham space: `a b` lookalikes."""


def test_check_brief_and_ui_text_show_invisible_characters(tmp_path: Path) -> None:
    from pimm_inspect.report.safe_text import clean, data_text

    for char in INVISIBLE + LOOK_LIKE_A_SPACE:
        assert clean(f"a{char}b") == f"a\\u{ord(char):04x}b" or clean(f"a{char}b") == f"a\\x{ord(char):02x}b"
        assert data_text(f"a{char}b").plain == clean(f"a{char}b")  # the UI's tag lists render data_text


def test_json_keeps_the_exact_tag_and_writes_the_invisible_character_as_an_escape(tmp_path: Path) -> None:
    run = _lookalikes(tmp_path)
    result = CliRunner().invoke(cli, ["--no-cache", "show", "--json", str(run)])
    assert "train/\\u200bloss" in result.stdout and "\u200b" not in result.stdout
    assert set(json.loads(result.stdout)["runs"][0]["scalars"]) == {"train/loss"} | {
        f"train/{c}loss" for c in INVISIBLE}


def test_name_text_is_one_to_one() -> None:
    from pimm_inspect.report.safe_text import name_text

    names = [os.fsdecode(RAW), LITERAL, "a\\b", "a\\\\b", "a\udcffb", "a\\xffb", "plain", "\ud800"]
    assert len({name_text(n) for n in names}) == len(names)
    assert name_text("plain/path") == "plain/path"


def _wandb_under_raw_folder(tmp_path: Path) -> Path:
    import shutil

    shutil.copytree(RUNS / "wandb_offline_entity", tmp_path / "x", symlinks=True)
    os.rename(os.fsencode(tmp_path / "x"), os.fsencode(tmp_path) + b"/" + RAW)
    return Path(os.fsdecode(os.fsencode(tmp_path) + b"/" + RAW))


RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def test_url_names_a_folder_that_exists(tmp_path: Path) -> None:
    """The `wandb sync` command of a run under a folder whose name is not UTF-8 names that folder, in bash."""
    import shutil
    import subprocess

    run = _wandb_under_raw_folder(tmp_path)
    result = CliRunner().invoke(cli, ["--no-cache", "url", str(run)])
    command = result.stdout.strip()
    assert command.startswith("wandb sync $'") and "\\xff\\xfe" in command
    if shutil.which("bash"):  # the shell word names the real folder: `ls -d` on it succeeds
        listed = subprocess.run(["bash", "-c", "ls -d " + command[len("wandb sync "):]], capture_output=True)
        assert listed.returncode == 0 and listed.stdout.startswith(os.fsencode(tmp_path) + b"/" + RAW)
    doc = json.loads(CliRunner().invoke(cli, ["--no-cache", "url", "--json", str(run)]).stdout)
    assert doc["sync_command"] == command


@pytest.mark.asyncio
async def test_ui_copies_the_sync_command_of_a_run_under_a_raw_folder(tmp_path: Path) -> None:
    from tests.tui_support import fixed_loader, settle

    from pimm_inspect.tui.app import make_app

    run = _wandb_under_raw_folder(tmp_path)
    app = make_app(str(run), loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("y")
        await pilot.pause()
        assert app.is_running
        assert app.clipboard.startswith("wandb sync $'") and "\\xff\\xfe" in app.clipboard
    assert app.return_code in (None, 0) and app._exit_renderables == []


def test_clean_text_always_encodes() -> None:
    """Text surfaces (and what the UI copies from a finding) never hold a surrogate: a finding message naming a
    file whose name is not UTF-8 would crash the clipboard's encoder or the terminal's writer."""
    from pimm_inspect.report.safe_text import clean

    message = f"{os.fsdecode(b'events.out.tfevents.1.host' + bytes([0xff]))} is empty"
    assert clean(message).encode("utf-8") == b"events.out.tfevents.1.host\\xff is empty"


@pytest.mark.asyncio
async def test_ui_runs_table_names_the_twins_apart(tmp_path: Path) -> None:
    """The UI's runs table shows the two folders as `ls` does: `run_\\xff\\xfe` and `run_\\\\xff\\\\xfe`."""
    from textual.widgets import DataTable

    from pimm_inspect.tui.app import make_app
    from tests.tui_support import fixed_loader, settle

    root = _twins(tmp_path)
    app = make_app(str(root), loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=(160, 36)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(DataTable)
        cells = [[getattr(cell, "plain", cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]
        names = sorted(row[1] for row in cells)  # column 0 is the mark
    assert names == ["run_\\\\xff\\\\xfe", "run_\\xff\\xfe"]
