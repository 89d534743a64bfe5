"""Every file a finding's text quotes is in its ``paths``: the one name escape (``safe_text.finding_text``) writes
exactly those names, so a quoted name left out prints through plain ``clean`` and a newline in it forges a line of
``check``'s output. The project's rule is the same from the other side: each claim names the file it comes from,
and ``paths`` is that data."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import pimm_inspect
from pimm_inspect.cli.main import cli

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TREES = sorted(p for p in FIXTURES.iterdir() if p.is_dir() and pimm_inspect.discover(p))

_NAME_CHAR = re.compile(r"[A-Za-z0-9_\-/]")
_DISTINCT = re.compile(r"[._\-0-9/]")
"""A name a check quotes is a file's (train.log, checkpoint-10, wandb/offline-run-...): one with a dot, digit,
dash, underscore or slash. Plain words (model, wandb, runs, logs) are prose as much as names: not matched."""

def _names(run_dir: Path) -> list[str]:
    """Every file or folder of the run a finding might quote: its run-relative path, and its base name when no other
    file of the run has that base name (a ``.complete`` marker in every checkpoint folder names no one file)."""
    entries = [p for p in run_dir.rglob("*")]
    base_count: dict[str, int] = {}
    for p in entries:
        base_count[p.name] = base_count.get(p.name, 0) + 1
    names = set()
    for p in entries:
        rel = p.relative_to(run_dir).as_posix()
        for name in (rel, p.name) if base_count[p.name] == 1 else (rel,):
            if len(name) >= 4 and _DISTINCT.search(name):
                names.add(name)
    return sorted(names, key=len, reverse=True)


def unlisted(text: str, paths: list[str], names: list[str]) -> list[str]:
    """The run's file names ``text`` quotes outside every occurrence of a listed path (whole names only: not a part
    of a longer name, a sentence's full stop allowed after one)."""
    for path in sorted(paths, key=len, reverse=True):
        if path:
            text = text.replace(path, "\0")
    found = []
    for name in names:
        for m in re.finditer(re.escape(name), text):
            before = text[m.start() - 1] if m.start() else " "
            after = text[m.end():m.end() + 2]
            if before == "." or _NAME_CHAR.match(before) or (after and _NAME_CHAR.match(after[0])):
                continue
            if after[:1] == "." and len(after) > 1 and after[1].isalnum():
                continue
            found.append(name)
            text = text.replace(name, "\0")  # a longer name counts once, not again as its base name
            break
    return found


def _check_json(tree: Path) -> dict[Path, list[dict]]:
    result = CliRunner().invoke(cli, ["check", str(tree), "--json", "--fail-on", "never"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return {(tree / doc["path"]).resolve(): doc["findings"] for doc in json.loads(result.stdout)["runs"]}


def _gaps(tree: Path) -> list[tuple[str, str, list[str]]]:
    out = []
    for run_dir, findings in _check_json(tree).items():
        names = _names(run_dir)
        for f in findings:
            missing = unlisted(f["message"] + "\n" + (f.get("explanation") or ""), f["paths"], names)
            if missing:
                out.append((run_dir.relative_to(FIXTURES).as_posix(), f["code"], missing))
    return out


@pytest.mark.parametrize("tree", TREES, ids=lambda p: p.name)
def test_every_quoted_file_is_in_paths(tree: Path) -> None:
    gaps = _gaps(tree)
    assert not gaps, gaps


def test_matching_rule() -> None:
    names = ["model/model_last.pth", "model_last.pth", "checkpoint-10", "train.log"]
    assert unlisted("resumed from checkpoint-10 and trained", [], names) == ["checkpoint-10"]
    assert unlisted("model/model_last.pth is at step 20, beyond train.log.", ["model/model_last.pth"], names) == \
        ["train.log"]
    assert unlisted("checkpoint-100 and train.log.1 and mytrain.log", [], names) == []
    assert unlisted("(model/model_last.pth: resume_step 11)", [], names) == ["model/model_last.pth"]


def test_incomplete_lists_the_checkpoint_a_resume_would_pick(tmp_path: Path) -> None:
    """The explanation names the complete checkpoint a resume would pick: here no leftover (``model/last.prev``
    removed, a ``model_last.pth`` beside the incomplete ``last/``), so only the pick puts it in ``paths``."""
    run_dir = tmp_path / "run"
    shutil.copytree(FIXTURES / "runs/e2_incomplete_checkpoint", run_dir)
    shutil.rmtree(run_dir / "model/last.prev")
    shutil.copy(run_dir / "model/model_best.pth", run_dir / "model/model_last.pth")
    (f,) = [f for f in pimm_inspect.load_run(run_dir).findings if f.code == "checkpoint.incomplete"]
    assert f.explanation.endswith("A resume would pick model/model_last.pth.")
    assert "model/model_last.pth" in f.paths and not unlisted(f.message + f.explanation, list(f.paths), _names(run_dir))


HOSTILE = "\nFORGED line \x1b[31m"
CASES = {
    # kind: (fixture run, file or folder to rename, the new name's stem as the reader still takes it, finding code)
    "checkpoint": ("runs/e2_unsafe_checkpoint", "model/model_best.pth", "model/model_best{}.pth", "checkpoint.unsafe"),
    "event file": ("runs/e2_nan_loss", "events.out.tfevents.1784646009.sdfampere012",
                   "events.out.tfevents.1784646009.sdfampere012{}", "metrics.non-finite"),
    "W&B folder": ("runs/wandb_backwards_step", "wandb/offline-run-20261129_100903-backstep",
                   "wandb/offline-run-20261129_100903-backstep{}", "wandb.step-dropped"),
    # An HF checkpoint folder's name is fixed (checkpoint-N); its run's logging folder is named by the user.
    "HF logging folder": ("runs/hf_resumed", "runs/Jan01_10-00-00_node01", "runs/Jan01_10-00-00_node01{}",
                          "steps.replayed"),
}


@pytest.mark.parametrize("kind", CASES)
def test_hostile_quoted_name_forges_no_line(kind: str, tmp_path: Path) -> None:
    run_rel, old, new, code = CASES[kind]
    run_dir = tmp_path / "run"
    shutil.copytree(FIXTURES / run_rel, run_dir, symlinks=True)
    (run_dir / old).rename(run_dir / new.format(HOSTILE))
    run = pimm_inspect.load_run(run_dir)
    quoting = [f for f in run.findings if f.code == code and any(HOSTILE in p for p in f.paths)]
    assert quoting and any(HOSTILE in f.message + f.explanation for f in quoting), [f.code for f in run.findings]
    out = CliRunner().invoke(cli, ["check", str(run_dir), "--fail-on", "never"], catch_exceptions=False).stdout
    assert "\x1b" not in out
    assert not [line for line in out.splitlines() if line.lstrip().startswith("FORGED")], out
    assert "\\nFORGED line \\x1b[31m" in out.replace("\n", "")  # the name is there, escaped


def test_hostile_wandb_folder_in_replayed_forges_no_line(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(FIXTURES / "runs/e2_config_drift", run_dir)
    folder = "wandb/offline-run-20261129_101846-d3f6h9kq"
    (run_dir / folder).rename(run_dir / (folder + HOSTILE))
    out = CliRunner().invoke(cli, ["check", str(run_dir), "--fail-on", "never"], catch_exceptions=False).stdout
    assert "steps.replayed" in out and "\x1b" not in out
    assert not [line for line in out.splitlines() if line.lstrip().startswith("FORGED")], out


def test_hostile_dangling_link_target_forges_no_line(tmp_path: Path) -> None:
    """A dangling ``model/`` link's target is no file of the run (``paths`` lists only what exists), yet the message
    quotes it: written by the name escape with its line break as ``\\n``, the message stays one line."""
    run_dir = tmp_path / "run"
    shutil.copytree(FIXTURES / "runs/e2_dangling_model_link", run_dir, symlinks=True)
    (run_dir / "model").unlink()
    (run_dir / "model").symlink_to("/nowhere" + HOSTILE + "\\x")
    (f,) = [f for f in pimm_inspect.load_run(run_dir).findings if f.code == "checkpoint.incomplete"]
    assert f.message == "model/ is a dangling symlink to /nowhere\\nFORGED line \x1b[31m\\\\x" and f.paths == ("model",)
    out = CliRunner().invoke(cli, ["check", str(run_dir), "--fail-on", "never"], catch_exceptions=False).stdout
    assert "\x1b" not in out and "symlink to /nowhere\\nFORGED line \\x1b[31m\\\\x" in out
    assert not [line for line in out.splitlines() if line.lstrip().startswith("FORGED")], out


def test_check_prints_a_message_on_one_line_whatever_it_quotes():
    """A message is one line (model.Finding): a metric tag or any other run string with a line break inside it is
    written as ``\\n`` by `check`, so it cannot start a forged line (the explanation keeps its own line breaks)."""
    import dataclasses

    from rich.console import Console

    from pimm_inspect.model import Finding, Severity
    from pimm_inspect.report.text import findings_view

    run = pimm_inspect.load_run(FIXTURES / "runs" / "e2_rollback")
    forged = Finding("metrics.non-finite", Severity.WARNING, "train/loss\nFORGED error all clear: 3 NaN values",
                     explanation="first line\nsecond line")
    console = Console(width=200, record=True, color_system=None)
    console.print(findings_view(dataclasses.replace(run, findings=(forged,)), FIXTURES / "runs"))
    lines = console.export_text().splitlines()
    assert not any(line.lstrip().startswith("FORGED") for line in lines)
    assert any("train/loss\\nFORGED" in line for line in lines)
    assert any(line.strip() == "second line" for line in lines)
