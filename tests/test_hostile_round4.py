"""Hostile round four: names and strings a colleague's run holds, through every command, the report and the UI.

The runs come from ``tests/hostile4_tree.py`` (committed fixture runs of every kind, their strings made hostile,
event files written by tensorboardX) and from folders given hostile names here. Each test names what leaked before
its fix.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from pimm_inspect.cli.main import cli
from tests.test_cli_terminal_safety import foreign_controls
from tests.test_hostile_exports import tb_run

RAW_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
FORGED = re.compile(r"(?m)^run0 info all\.clear")
"""The line a folder name with a newline tries to forge."""

HOSTILE_FOLDER_NAMES = {
    "newline": b"nl\nrun0 info all.clear",
    "osc8": b"osc\x1b]8;;https:evil.example\x1b\\click\x1b]8;;\x1b\\",
    "carriage-return": b"cr\rover",
    "bidi": "bidi\u202egnp".encode(),
    "markup": b"[link=https:x]L[bold]",
    "not-utf8": b"bad\xff\xfe",
}


def _inert(text: str) -> list[str]:
    """What in ``text`` is not inert: control characters, raw invisible/bidi characters, a forged line."""
    return (foreign_controls(text) + [f"raw {c!r}" for c in RAW_INVISIBLE.findall(text)]
            + (["forged line"] if FORGED.search(text) else []))


@pytest.fixture(scope="module")
def named_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("names")
    runs = {}
    for label, name in HOSTILE_FOLDER_NAMES.items():
        tb_run(root / "tmp", ["train/loss"])
        os.rename(os.fsencode(root / "tmp"), os.fsencode(root) + b"/" + name)
        runs[label] = Path(os.fsdecode(os.fsencode(root) + b"/" + name))
    return runs


@pytest.mark.parametrize("label", HOSTILE_FOLDER_NAMES)
def test_config_of_a_run_without_one_names_the_folder_inert(named_runs: dict[str, Path], label: str) -> None:
    """Was: ``pimm-inspect: <the folder name, raw> has no config document``: ESC, CR, bidi and a forged line."""
    run = str(named_runs[label])
    for args in (["config", run], ["config", "--kind", "config_py", run], ["config", "--attempt", "2", run]):
        result = CliRunner().invoke(cli, ["--no-cache", *args])
        assert result.exit_code == 2, (args, result.output)
        assert "has no" in result.stderr
        assert not _inert(result.stderr), (args, _inert(result.stderr))


@pytest.mark.slow
@pytest.mark.parametrize("label", HOSTILE_FOLDER_NAMES)
def test_every_command_on_a_hostile_folder_name_prints_it_inert(named_runs: dict[str, Path], label: str) -> None:
    run = str(named_runs[label])
    for args in (["show", run], ["check", "--brief", run], ["url", run], ["curves", run, "--width", "80"],
                 ["compare", "--brief", run, run], ["report", run, "-o", "-", "--format", "md"]):
        result = CliRunner().invoke(cli, ["--no-cache", *args])
        assert result.exit_code in (0, 1), (args, result.output)
        for text in (result.stdout, result.stderr):
            assert not _inert(text), (args, _inert(text))


def test_stderr_cleans_every_diagnostic(capsys: pytest.CaptureFixture[str]) -> None:
    """The one rule for diagnostics: a message that forgot ``clean`` still reaches stderr inert."""
    from pimm_inspect.cli._common import stderr

    stderr("pimm-inspect: \x1b]8;;https://evil.example/\x1b\\x\x1b]8;;\x1b\\ \x9b2J \u202eexe\nsecond line")
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x9b" not in err and "\u202e" not in err
    assert err == "pimm-inspect: \\x1b]8;;https://evil.example/\\x1b\\x\\x1b]8;;\\x1b\\ \\x9b2J \\u202eexe\nsecond line\n"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("tensorboardX")
    pytest.importorskip("wandb")
    from tests import hostile4_tree

    root = tmp_path_factory.mktemp("round4") / "tree"
    runs = hostile4_tree.build(root)
    runs["lightning"] = runs["lightning"] / "lightning_logs" / "version_0"
    return {"root": root, **runs}


def test_secret_shapes_found_in_round_four() -> None:
    """Was: a token as a URL's user part, and the credential after ``Authorization: token``, stayed in clear
    (the assignment rule masked the scheme word ``token`` and left the credential)."""
    from pimm_inspect.analysis.secrets import find_in_text, mask_text

    token = "Zk9Qw3Rt7Yp2Lm5Nx8Vb"
    assert mask_text(f"git clone https://{token}@github.com/org/x.git") == "git clone https://****@github.com/org/x.git"
    assert mask_text(f"curl -H 'Authorization: token {token}' x") == "curl -H 'Authorization: ****' x"
    assert mask_text(f'{{"Authorization": "Digest username=u, response={token}"}}') == '{"Authorization": "****"}'
    assert find_in_text(f"remote https://{token}@github.com/x")[0].kind == "URL password"
    for harmless in ("https://alice@github.com/x", "ssh://git@github.com/x", "authorization: none",
                     "Authorization header missing", "Authorization: Bearer ****"):
        assert mask_text(harmless) == harmless


@pytest.mark.slow
def test_no_planted_secret_on_any_surface(tree: dict[str, Path], tmp_path: Path) -> None:
    from tests import hostile4_tree

    root = str(tree["root"])
    commands = [["show", root], ["show", "--json", root], ["check", "--json", root], ["ls", "--json", root],
                ["report", root, "-o", "-", "--format", "md"], ["report", root, "-o", "-", "--format", "html"]]
    for kind in ("pimm", "hf", "lightning", "wandb"):
        run = str(tree[kind])
        commands += [["config", run], ["config", "--json", run], ["config", "--flat", run], ["url", "--json", run],
                     ["compare", "--json", run, str(tree["pimm"])], ["config", "--diff", str(tree["pimm"]), run]]
    for args in commands:
        result = CliRunner().invoke(cli, ["--no-cache", *args])
        assert result.exit_code in (0, 1), (args, result.output[-2000:])
        for name, secret in hostile4_tree.SECRETS.items():
            for text in (result.stdout, result.stderr):
                assert secret not in text, (args, name, text[max(0, text.find(secret) - 200):text.find(secret) + 40])
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    out = tmp_path / "dataset"
    assert CliRunner().invoke(cli, ["--no-cache", "export", root, "--format", "parquet", "-o", str(out)]).exit_code == 0
    for part in out.rglob("*.parquet"):
        text = repr(pq.read_table(part).to_pylist())
        for name, secret in hostile4_tree.SECRETS.items():
            assert secret not in text, (part.name, name)


UI_KEYS = (["1"], ["1", "pagedown"], ["2"], ["2", "down"], ["2", "down", "down", "down"], ["3"], ["3", "pagedown"],
           ["3", "d"], ["4"], ["5"], ["5", "enter"], ["6"], ["6", "G"], ["6", "w"], ["y"], ["o"], ["question_mark"])


async def _inert_screen(pilot, where: str) -> str:
    from tests import hostile4_tree
    from tests.tui_support import inert_screen

    text, raw = await inert_screen(pilot, where)
    assert "link=javascript:alert(7)]m" in text or "alert(7)" not in text, f"{where}: P7's markup was parsed"
    assert not RAW_INVISIBLE.search(text), f"{where}: raw bidi/zero-width {RAW_INVISIBLE.findall(text)}"
    assert "\x1b]8;" not in raw, f"{where}: an OSC 8 hyperlink reached the terminal"
    for name, secret in hostile4_tree.SECRETS.items():
        assert secret not in text, f"{where}: the {name} secret is on screen"
    return text


@pytest.mark.slow
@pytest.mark.asyncio
@pytest.mark.parametrize("kind", ["pimm", "hf", "lightning", "wandb"])
async def test_ui_shows_every_hostile_string_inert_at_80x24(tree: dict[str, Path], kind: str) -> None:
    pytest.importorskip("textual")
    from pimm_inspect.tui.app import make_app
    from tests.tui_support import fixed_loader, settle

    app = make_app(tree[kind], loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        run_screen = app.screen
        for keys in UI_KEYS:
            for key in keys:
                await pilot.press(key)
                await settle(pilot)
            await _inert_screen(pilot, f"{kind}: {'+'.join(keys)}")
            if app.screen is not run_screen:
                await pilot.press("escape")
                await settle(pilot)
        assert app.is_running


def test_single_run_export_never_writes_inside_the_run(tmp_path: Path) -> None:
    """Was: ``export RUN -o RUN/points.csv`` (or through a link into the run) wrote the file inside the run; the
    report and the dataset already refused. One rule now (``session.output_place``) for all three."""
    import shutil


    run = tmp_path / "run"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "e2_clean", run, symlinks=True)
    (tmp_path / "into_model").symlink_to(run / "model")
    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    cases = [["export", str(run), "-o", str(run / "points.csv")],
             ["export", str(run), "--format", "json", "-o", str(run / "model" / "points.json")],
             ["export", str(run), "--format", "parquet", "-o", str(tmp_path / "into_model" / "points.parquet")],
             ["report", str(run), "-o", str(tmp_path / "into_model" / "r.html")],
             ["export", str(tmp_path), "--format", "parquet", "-o", str(run / "dataset")]]
    for args in cases:
        result = CliRunner().invoke(cli, ["--no-cache", *args])
        assert result.exit_code == 2, (args, result.output)
        assert "inside the run" in result.stderr, (args, result.stderr)
    assert sorted(p.relative_to(run) for p in run.rglob("*")) == before
    ok = CliRunner().invoke(cli, ["--no-cache", "export", str(run), "-o", str(tmp_path / "points.csv")])
    assert ok.exit_code == 0 and (tmp_path / "points.csv").stat().st_size > 0


def _twin_checkpoints(tmp_path: Path) -> Path:
    """A run with two checkpoint files: one whose name holds the byte ff, one literally named ``ck_\\xff.pth``."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "e2_crashed", run, symlinks=True)
    model = os.fsencode(run / "model")
    shutil.copyfile(model + b"/model_last.pth", model + b"/ck_\xff.pth")
    shutil.copyfile(model + b"/model_last.pth", model + b"/ck_\\xff.pth")
    return run


TWINS = ("model/ck_\\xff.pth", "model/ck_\\\\xff.pth")
"""How the two checkpoint names read on every surface (the one name escape, as ``show`` and ``ls`` write names)."""


def test_report_names_two_checkpoint_files_apart(tmp_path: Path) -> None:
    """Was: the report's checkpoint table and files list wrote both files as ``model/ck_\\xff.pth``."""
    run = _twin_checkpoints(tmp_path)
    markdown = CliRunner().invoke(cli, ["--no-cache", "report", str(run), "-o", "-", "--format", "md"]).stdout
    html = CliRunner().invoke(cli, ["--no-cache", "report", str(run), "-o", "-"]).stdout
    for twin in TWINS:
        assert markdown.count(f"`{twin}`") == 2, twin  # the checkpoints table and the files read
        assert html.count(f"<code>{twin}</code>") == 2, twin


@pytest.mark.slow
@pytest.mark.asyncio
async def test_ui_checkpoints_tab_names_two_files_apart(tmp_path: Path) -> None:
    """Was: the Checkpoints tab showed both files as ``model/ck_\\xff.pth``."""
    pytest.importorskip("textual")
    from tests.tui_support import drawn, opened, rendered

    run = _twin_checkpoints(tmp_path)
    async with opened(run, (120, 30), tab="4") as (_app, pilot):
        await drawn(pilot)
        text = rendered(pilot.app)[0]
        lines = [line.strip().split()[0] for line in text.splitlines() if "model/ck_" in line]
        assert sorted(lines) == sorted(TWINS), lines


@pytest.mark.slow
def test_show_of_a_very_long_tag_is_linear_not_quadratic(tmp_path: Path) -> None:
    """Was: ``show`` piped stripped Rich's padding with a regular expression retried at every space, quadratic in a
    run of spaces inside a line: a 20,000-character tag took 26 s, a 2 MB one never finished. The guard is a hang
    guard (a 200,000-character tag took hours before)."""
    pytest.importorskip("tensorboardX")
    from tests import hostile4_tree
    from tests.hostile_support import run_cli

    run = tmp_path / "run"
    hostile4_tree.tbx_events(run, ["a" * 200_000, "loss"])
    outcome = run_cli("--no-cache", "show", str(run), timeout=120)
    assert outcome.returncode == 0, outcome.stderr[-2000:]
    lines = outcome.stdout.splitlines()
    assert any(line.strip().startswith("a" * 200_000) for line in lines)
    assert all(line == line.rstrip(" \t") for line in lines)  # padding still stripped


def test_strip_trailing_spaces_is_the_old_rule() -> None:
    """Line by line from the end, the same text as the regular expression it replaced."""
    import random

    from pimm_inspect.cli._common import strip_trailing_spaces

    trailing = re.compile(r"(?:[ \t]|\x1b\[[0-9;]*m)+$", re.MULTILINE)
    sgr = re.compile(r"\x1b\[[0-9;]*m")
    pieces = [" ", "\t", "\x1b[1m", "\x1b[0m", "\x1b[38;5;2m", "a", "\n", "m", "\x1b[", "\x1b[x m", ";m", "\r"]
    chooser = random.Random(4)
    for _ in range(5000):
        text = "".join(chooser.choice(pieces) for _ in range(chooser.randint(0, 16)))
        assert strip_trailing_spaces(text) == trailing.sub(lambda m: "".join(sgr.findall(m.group(0))), text), text


@pytest.mark.slow
@pytest.mark.asyncio
async def test_ui_status_line_of_a_two_megabyte_tag_is_elided(tmp_path: Path) -> None:
    """Was: the Curves tab's status line held the whole tag and wrapped it (2 MB: 35,000 lines laid out, 5-7 s per
    redraw); one line of the UI now names a tag by ``safe_text.elide`` (its ends around an ellipsis)."""
    pytest.importorskip("textual")
    pytest.importorskip("tensorboardX")
    from textual.widgets import OptionList, Static

    from pimm_inspect.report.safe_text import SHOWN_NAME_CHARS, elide
    from tests import hostile4_tree
    from tests.tui_support import drawn, opened, settle

    tag = "a" * 1_000_000 + "\x1b" * 100_000 + "z"
    run = tmp_path / "run"
    hostile4_tree.tbx_events(run, [tag, "loss"])
    async with opened(run, (80, 24), tab="2") as (app, pilot):
        tags = app.screen.query_one("#tag-list", OptionList)
        tags.highlighted = next(i for i in range(tags.option_count) if tags.get_option_at_index(i).id == tag)
        await settle(pilot)
        await drawn(pilot)
        status = str(app.screen.query_one("#curve-status", Static).render())
        assert status.startswith("a" * (SHOWN_NAME_CHARS // 2) + "…"), status[:80]
        assert len(status) < 3 * SHOWN_NAME_CHARS and "\\x1b" * 10 in status
    assert elide("short") == "short" and elide("x" * 10 + "y" * 10, 10) == "xxxxx…yyyyy"


@pytest.mark.slow
@pytest.mark.asyncio
async def test_ui_config_tab_and_diff_elide_a_two_megabyte_value(tmp_path: Path) -> None:
    """Was: the Config tab laid out a 1 MB key and a 2 MB value whole (3.9 s to open the tab) and the config diff
    wrapped them in its cells (6.7 s); the full text stays what ``config`` prints and what a search matches."""
    import json
    import shutil

    pytest.importorskip("textual")
    from textual.widgets import DataTable, Tree

    from pimm_inspect.report.safe_text import SHOWN_LINE_CHARS
    from tests.tui_support import opened, settle

    run = tmp_path / "run"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "e2_clean", run, symlinks=True)
    config = json.loads((run / "resolved_config.json").read_text())
    config["k" * 1_000_000] = "v" * 2_000_000
    (run / "resolved_config.json").write_text(json.dumps(config))
    async with opened(run, (80, 24), tab="3") as (app, pilot):
        labels = []
        pending = [app.screen.query_one(Tree).root]
        while pending:
            node = pending.pop()
            labels.append(str(node.label))
            pending.extend(node.children)
        assert any(label.startswith("kkkk") and "…" in label for label in labels)
        assert max(len(label) for label in labels) <= SHOWN_LINE_CHARS + 1
        await pilot.press("d")
        await settle(pilot)
        table = app.screen.query_one(DataTable)
        cells = [str(cell) for row in range(table.row_count) for cell in table.get_row_at(row)]
        assert any(cell.startswith("kkkk") for cell in cells)
        assert max(len(cell) for cell in cells) <= SHOWN_LINE_CHARS + 1
    printed = CliRunner().invoke(cli, ["--no-cache", "config", "--flat", str(run)]).stdout
    assert "v" * 2_000_000 in printed  # the CLI prints it whole


def test_a_nul_led_csv_cell_is_neutralised(tmp_path: Path) -> None:
    """Was: a tag starting with NUL (ASVS 5.0, 1.2.10: a spreadsheet may drop it and read ``=...`` as a formula)
    was written as it is; JSON keeps the exact tag."""
    import csv
    import json

    from pimm_inspect.report.export import csv_cell

    assert csv_cell("\x00=1+1") == "'\x00=1+1"
    run = tb_run(tmp_path / "run", ["\x00=HYPERLINK(\"https://evil.example\")", "loss"])
    out = tmp_path / "out.csv"
    assert CliRunner().invoke(cli, ["--no-cache", "export", str(run), "-o", str(out)]).exit_code == 0
    with open(out, newline="", encoding="utf-8") as fh:
        tags = {row["tag"] for row in csv.DictReader(fh)}
    assert tags == {"'\x00=HYPERLINK(\"https://evil.example\")", "loss"}
    out_json = tmp_path / "out.json"
    assert CliRunner().invoke(cli, ["--no-cache", "export", str(run), "--format", "json", "-o", str(out_json)]).exit_code == 0
    assert "\x00=HYPERLINK(\"https://evil.example\")" in {r["tag"] for r in json.loads(out_json.read_text())}


CRASHING_SHOW = """
import sys
import pimm_inspect.report.text as text

def boom(run, base):
    raise ValueError("bad tag \\x1b]8;;https://evil.example/\\x1b\\\\click\\x1b]8;;\\x1b\\\\ --token " + sys.argv[-1])

text.run_summary = boom
sys.argv = ["pimm-inspect", "--no-cache", "show", sys.argv[1]]
from pimm_inspect.cli.main import main
main()
"""


@pytest.mark.slow
def test_an_internal_error_in_a_command_prints_one_inert_line_not_a_raw_traceback(tmp_path: Path) -> None:
    """Was: a bug in a command printed Python's traceback, whose message (quoting run data) reached the terminal
    raw: an OSC 8 link and a token in clear. Now the CLI does what the UI does (``tui.crash``): the traceback,
    masked and escaped, in a private file; one line on stderr; exit 70."""
    import subprocess
    import sys

    token = "ghp_" + "Crash0Token" * 3 + "abc"
    run = tb_run(tmp_path / "run", ["loss"])
    state = tmp_path / "state"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]), XDG_STATE_HOME=str(state))
    result = subprocess.run([sys.executable, "-P", "-c", CRASHING_SHOW, str(run), token], capture_output=True,
                            text=True, env=env, timeout=120)
    assert result.returncode == 70, result.stderr[-2000:]
    assert "Traceback" not in result.stderr and token not in result.stderr and "\x1b" not in result.stderr
    assert result.stderr.startswith("pimm-inspect crashed; the traceback (no values) is in ")
    (report,) = (state / "pimm-inspect").glob("crash-*.txt")
    saved = report.read_text(encoding="utf-8")
    assert "ValueError: bad tag \\x1b]8;;" in saved and token not in saved and "--token ****" in saved
    assert oct(report.stat().st_mode & 0o777) == "0o600"


DEFAULT_IGNORABLE = [(0xAD, 0xAD), (0x34F, 0x34F), (0x61C, 0x61C), (0x115F, 0x1160), (0x17B4, 0x17B5),
                     (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
                     (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
                     (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF)]
"""Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt): code points a renderer draws as nothing."""


def test_every_default_ignorable_character_is_shown_as_an_escape() -> None:
    """Was: variation selectors (U+FE00-FE0F, U+E0100-E01EF), the musical and shorthand format controls and
    U+FFF0-FFF8 were drawn as nothing, so ``loss`` + U+FE0E read as ``loss``."""
    from pimm_inspect.report.json_doc import dumps
    from pimm_inspect.report.safe_text import clean

    for first, last in DEFAULT_IGNORABLE:
        for code in range(first, last + 1):
            char = chr(code)
            assert char not in clean("a" + char + "b"), hex(code)
            assert char not in dumps({"tag": "a" + char}), hex(code)


def test_two_tags_apart_by_a_variation_selector_read_apart(tmp_path: Path) -> None:
    import json

    run = tb_run(tmp_path / "run", ["train/loss", "train/loss\ufe0e", "train/loss\U000e0100"])
    shown = CliRunner().invoke(cli, ["--no-cache", "show", str(run)]).stdout
    assert "train/loss\\ufe0e" in shown and "train/loss\\U000e0100" in shown
    document = json.loads(CliRunner().invoke(cli, ["--no-cache", "show", "--json", str(run)]).stdout)
    assert {"train/loss", "train/loss\ufe0e", "train/loss\U000e0100"} <= set(document["runs"][0]["scalars"])


def _replayed_run_with_a_newline_in_a_file_name(tmp_path: Path) -> tuple[Path, str]:
    """e2_rollback (two event files overlapping at 51-75) with its second event file's host part holding a newline
    that tries to forge a ``check`` line; returns the run and that file's name as surfaces must show it."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "e2_rollback", run, symlinks=True)
    second = sorted(run.glob("events.out.tfevents.*"))[1]
    forged = second.name.replace("sdfampere012", "h\nrun0 info all.clear nothing found\n")
    second.rename(run / forged)
    return run, forged.replace("\n", "\\n")


def test_a_file_name_quoted_in_a_finding_cannot_forge_a_line(tmp_path: Path) -> None:
    """Was: ``steps.replayed``'s explanation quotes the event files by name, and ``check`` printed a newline of a
    name as a line break (``run0 info all.clear ...`` on a line of its own). Every surface now writes the names a
    finding quotes (its ``paths``) by the one name escape: ``safe_text.finding_text``."""
    run, shown = _replayed_run_with_a_newline_in_a_file_name(tmp_path)
    check = CliRunner().invoke(cli, ["--no-cache", "check", str(run)]).stdout
    assert not re.search(r"(?m)^\s*run0 info", check), check
    assert shown in check.replace("\n      ", "")  # wrapped by the terminal width: joined back
    markdown = CliRunner().invoke(cli, ["--no-cache", "report", str(run), "-o", "-", "--format", "md"]).stdout
    assert not re.search(r"(?m)^run0 info", markdown) and shown in markdown
    from pimm_inspect.report.safe_text import finding_text

    assert finding_text("a\\b and x\ny", ["x\ny", "a\\b"]) == "a\\\\b and x\\ny"
    assert finding_text("nothing special", ["train.log"]) == "nothing special"


@pytest.mark.slow
@pytest.mark.asyncio
async def test_ui_finding_detail_quotes_the_file_name_escaped(tmp_path: Path) -> None:
    pytest.importorskip("textual")
    from textual.widgets import Static

    from tests.tui_support import opened, settle

    run, shown = _replayed_run_with_a_newline_in_a_file_name(tmp_path)
    async with opened(run, (120, 36), tab="5") as (app, pilot):
        for _ in range(6):  # the steps.replayed row: open each finding until its detail names the files
            await pilot.press("enter")
            await settle(pilot)
            explanation = str(app.screen.query_one("#finding-explanation", Static).render())
            if "holds steps" in explanation:
                break
            await pilot.press("escape", "down")
            await settle(pilot)
        assert shown in explanation.replace("\n", "") and "\nrun0 info" not in explanation


@pytest.mark.slow
def test_report_of_the_hostile_tree_in_chromium_runs_nothing_and_links_nothing(tree: dict[str, Path],
                                                                              tmp_path: Path) -> None:
    """The round-four tree's HTML report opened from disk in Debian's Chromium, scripts on and off: no dialog, no
    console error, no request but the page, no image, frame or form, and no link but the page's own anchors."""
    playwright_api = pytest.importorskip("playwright.sync_api")
    chromium = Path(os.environ.get("PIMM_INSPECT_CHROMIUM", "/usr/bin/chromium"))
    if not chromium.exists():
        pytest.skip(f"no Chromium at {chromium}")
    page_file = tmp_path / "tree.html"
    result = CliRunner().invoke(cli, ["--no-cache", "report", str(tree["root"]), "-o", str(page_file)])
    assert result.exit_code == 0, result.output
    with playwright_api.sync_playwright() as play:
        browser = play.chromium.launch(executable_path=str(chromium), args=["--no-sandbox", "--headless",
                                                                            "--disable-gpu"])
        try:
            for scripts in (True, False):
                context = browser.new_context(java_script_enabled=scripts)
                page = context.new_page()
                seen: list[str] = []
                page.on("console", lambda m: seen.append(f"console {m.type}: {m.text}"))
                page.on("pageerror", lambda e: seen.append(f"pageerror: {e}"))
                page.on("dialog", lambda d: (seen.append(f"dialog: {d.message}"), d.dismiss()))
                page.on("request", lambda r: seen.append(f"request {r.url}") if r.url != page_file.as_uri() else None)
                page.goto(page_file.as_uri())
                page.wait_for_load_state("load")
                targets = page.evaluate("Array.from(document.querySelectorAll('[href],[src],[action],[formaction]'))"
                                        ".map(e => e.getAttribute('href') || e.getAttribute('src') || 'form')")
                counts = page.evaluate("['img','iframe','object','embed','form','script'].map("
                                       "t => document.getElementsByTagName(t).length)")
                context.close()
                assert seen == [], seen
                assert all(t.startswith("#") for t in targets), targets
                assert counts == [0, 0, 0, 0, 0, 1], counts
        finally:
            browser.close()
