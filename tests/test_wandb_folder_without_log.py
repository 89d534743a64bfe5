"""A W&B run folder whose ``.wandb`` log is gone (GitHub refuses files over 100 MB; a copy left it out) but whose
``files/`` holds W&B's metadata and summary is still a run: found, started when ``startedAt`` says, and its end told
from what the folder holds (found in the public AuroraEchos/TinyLM repository: a second training of 6,270 s up to
step 53,560 was not shown at all)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from pimm_inspect.cli.main import cli
from pimm_inspect.load.discover import classify_dir

FOLDER = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "wandb_online" / "wandb" / \
    "run-20261201_080216-online01"


def _launch_dir(tmp_path: Path) -> tuple[Path, Path]:
    """A launch folder whose wandb/ holds the real-writer folder and a second id's folder reduced to files/."""
    launch = tmp_path / "launch"
    shutil.copytree(FOLDER, launch / "wandb" / FOLDER.name, symlinks=True)
    bare = launch / "wandb" / "run-20261201_093000-second02"
    (bare / "files").mkdir(parents=True)
    for name in ("config.yaml", "wandb-metadata.json", "wandb-summary.json"):
        shutil.copy(FOLDER / "files" / name, bare / "files" / name)
    summary = json.loads((bare / "files" / "wandb-summary.json").read_text())
    summary.update({"_step": 53560, "_runtime": 6270.05})
    (bare / "files" / "wandb-summary.json").write_text(json.dumps(summary))
    return launch, bare


def test_a_folder_without_its_log_is_found_and_says_what_it_holds(tmp_path: Path) -> None:
    launch, bare = _launch_dir(tmp_path)
    assert classify_dir(bare) == "wandb"  # was None: only a .wandb log made a W&B run folder
    assert classify_dir(bare / "files") is None
    listed = json.loads(CliRunner().invoke(cli, ["--no-cache", "ls", "--json", str(launch)]).stdout)
    assert sorted(r["path"] for r in listed["runs"]) == [f"wandb/{FOLDER.name}", f"wandb/{bare.name}"]
    shown = json.loads(CliRunner().invoke(cli, ["--no-cache", "show", "--json", str(bare)]).stdout)["runs"][0]
    started = json.loads((bare / "files" / "wandb-metadata.json").read_text())["startedAt"]
    attempt = shown["attempts"][0]
    # The start from files/wandb-metadata.json's startedAt (UTC): was none, the folder's stamp alone cannot be placed.
    assert attempt["started_at_iso"].startswith(started[:19])
    assert attempt["end_detail"] == ("no .wandb log: how the run ended is not recorded "
                                     "(files/wandb-summary.json: last _step 53,560 after 6,270 s)")


def test_a_files_folder_alone_needs_a_wandb_file(tmp_path: Path) -> None:
    """Not any folder named like a W&B run: its files/ must hold W&B's metadata or summary (a regular file)."""
    other = tmp_path / "run-20261201_093000-xyz"
    (other / "files").mkdir(parents=True)
    (other / "files" / "notes.txt").write_text("x")
    assert classify_dir(other) is None
    (other / "files" / "wandb-summary.json").symlink_to(FOLDER / "files" / "wandb-summary.json")
    assert classify_dir(other) is None  # a link is not W&B's own file
