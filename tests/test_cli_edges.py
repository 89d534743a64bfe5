"""Issue 24's script edges: `config --diff` of lists shows only the differing elements, `<absent>` never reads as a
string, global options after the command, `show` on a clean git tree, `show --max-depth/--follow-links`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from pimm_inspect.analysis.configs import ConfigDifference, config_differences
from pimm_inspect.cli.main import cli

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def run_cli(*args: object, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, [str(a) for a in args], env=env, catch_exceptions=False)


def test_list_differences_are_the_differing_elements_with_their_index() -> None:
    left = {"hooks": [{"type": "A"}, {"type": "B", "freq": 25}], "crop": [1, 2, 3], "tags": [1], "x": [1, 2]}
    right = {"hooks": [{"type": "A"}, {"type": "B", "freq": 10}], "crop": [1, 9, 3, 4], "tags": "one", "x": [1, 2]}
    assert config_differences(left, right) == [
        ConfigDifference("crop[1]", 2, 9, True, True),
        ConfigDifference("crop[3]", None, 4, False, True),  # the element the left list lacks is absent there
        ConfigDifference("hooks[1].freq", 25, 10, True, True),
        ConfigDifference("tags", [1], "one", True, True),  # a list against a string: the whole values
    ]


def test_config_diff_prints_only_the_changed_list_element() -> None:
    args = ("config", RUNS / "e2_clean", "--diff", RUNS / "e2_config_drift")
    lines = run_cli(*args).stdout.splitlines()
    assert "hooks[4].save_freq: 25 -> 10" in lines  # one element of the 6-hook list, with its index
    assert not [line for line in lines if line.startswith("hooks:")]  # never the whole list
    differences = json.loads(run_cli(*args, "--json").stdout)["differences"]
    assert differences["hooks[4].save_freq"] == {"left": 25, "right": 10, "in_left": True, "in_right": True}
    assert "hooks" not in differences


def _run_with_config(tmp_path: Path, name: str, **changes: object) -> Path:
    run = tmp_path / name
    shutil.copytree(RUNS / "e2_clean", run)
    config_path = run / "resolved_config.json"
    config = json.loads(config_path.read_text())
    config.update(changes)
    config_path.write_text(json.dumps(config))
    return run


def test_absent_is_not_the_string_absent(tmp_path: Path) -> None:
    left = _run_with_config(tmp_path, "left", note="<absent>", extra=None)
    right = _run_with_config(tmp_path, "right", note="x", only_right=1)
    lines = run_cli("config", left, "--diff", right, env={"NO_COLOR": "1"}).stdout.splitlines()
    assert 'note: "<absent>" -> "x"' in lines  # a string value: quoted, as every JSON value
    assert "only_right: <absent> -> 1" in lines and "extra: null -> <absent>" in lines  # absent: unquoted
    colored = run_cli("config", left, "--diff", right, env={"FORCE_COLOR": "1", "NO_COLOR": ""}).stdout
    assert "only_right: \x1b[2m<absent>\x1b[0m -> 1" in colored  # dim on a terminal
    doc = json.loads(run_cli("config", left, "--diff", right, "--json").stdout)["differences"]
    assert doc["only_right"] == {"left": None, "right": 1, "in_left": False, "in_right": True}
    assert doc["note"]["left"] == "<absent>" and doc["note"]["in_left"] is True


def test_no_cache_is_accepted_after_the_command_too(tmp_path: Path) -> None:
    env = {"PIMM_INSPECT_CACHE_DIR": str(tmp_path / "cache")}
    after = run_cli("ls", "--no-cache", RUNS / "e2_clean", env=env)
    before = run_cli("--no-cache", "ls", RUNS / "e2_clean", env=env)
    assert after.exit_code == before.exit_code == 0 and after.stdout == before.stdout
    assert not (tmp_path / "cache").exists()  # neither wrote the cache
    assert run_cli("ls", RUNS / "e2_clean", env=env).exit_code == 0 and (tmp_path / "cache").exists()
    for name in ("show", "check", "config", "curves", "export", "url", "report"):
        assert "global option" in run_cli(name, "--help").stdout, name


def test_show_says_the_git_tree_was_clean(tmp_path: Path) -> None:
    assert "(clean)" in run_cli("show", RUNS / "e2_clean").stdout.splitlines()[1]
    dirty = tmp_path / "dirty"
    shutil.copytree(RUNS / "e2_clean", dirty)
    meta = json.loads((dirty / "run_metadata.json").read_text())
    meta["git"]["is_dirty"] = True
    (dirty / "run_metadata.json").write_text(json.dumps(meta))
    assert "(dirty)" in run_cli("show", dirty).stdout.splitlines()[1]
    del meta["git"]["is_dirty"]
    (dirty / "run_metadata.json").write_text(json.dumps(meta))
    line = run_cli("show", dirty).stdout.splitlines()[1]
    assert line.startswith("git 9f44d8d4e895  host") and "clean" not in line  # not recorded: nothing claimed


def test_show_has_max_depth_and_follow_links(tmp_path: Path) -> None:
    root = tmp_path / "a"
    shutil.copytree(RUNS / "e2_clean", root / "b" / "c" / "run")
    outside = tmp_path / "outside"
    shutil.copytree(RUNS / "e2_rollback", outside / "rollback")
    (root / "link").symlink_to(outside)
    shallow = run_cli("show", root, "--max-depth", "1", "--json")
    assert shallow.exit_code == 2 and "deeper than --max-depth 1 not searched" in shallow.stderr
    default = run_cli("show", root, "--json")
    assert [r["path"] for r in json.loads(default.stdout)["runs"]] == ["b/c/run"]
    followed = run_cli("show", root, "--follow-links", "--json")
    assert sorted(r["path"] for r in json.loads(followed.stdout)["runs"]) == ["b/c/run", "link/rollback"]


def test_every_no_run_message_says_what_a_run_is_one_way(tmp_path):
    """`ls`, the Python API and the UI (above) name the run markers by discover's one text, Lightning's CSV included."""
    import pytest

    import pimm_inspect
    from pimm_inspect.load.discover import RUN_MARKERS_TEXT

    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(cli, ["ls", str(tmp_path / "empty")])
    assert result.exit_code == 2 and RUN_MARKERS_TEXT in result.output
    with pytest.raises(pimm_inspect.NotARunError, match="metrics.csv"):
        pimm_inspect.load_run(tmp_path / "empty")
