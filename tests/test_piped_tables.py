"""Issue 24: when stdout is not a terminal, text tables never drop, shrink or cut a column (no hidden 140-column
page) and no line ends in padding spaces. Real processes writing into a real pipe."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "fixtures" / "runs"
LONG = "sweep-" + "lr3e-4-bs256-warmup2000-" * 5 + "seed1"  # 131 characters: the table is wider than 140


def _piped(tmp_path: Path, *args: str, columns: str | None = None, color: bool = False) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "NO_COLOR")}
    env.update(PYTHONPATH=str(REPO), PIMM_INSPECT_CACHE_DIR=str(tmp_path / "cache"))
    env.update({"FORCE_COLOR": "1"} if color else {"NO_COLOR": "1"})
    if columns:
        env["COLUMNS"] = columns
    proc = subprocess.run([sys.executable, "-P", "-m", "pimm_inspect", *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _no_padding(text: str) -> None:
    padded = [line for line in text.splitlines() if line != line.rstrip()]
    assert not padded, padded[:3]


def test_ls_piped_keeps_every_column_of_a_wide_table(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(RUNS / "e2_wandb", tree / LONG)
    shutil.copytree(RUNS / "e2_clean", tree / "e2_clean")
    listed = json.loads(_piped(tmp_path, "ls", "--json", str(tree)))["runs"]
    (wandb_id,) = next(run["wandb_run_ids"] for run in listed if run["path"] == LONG)
    for columns in (None, "80"):  # COLUMNS only sets where prose wraps, never a table's width
        text = _piped(tmp_path, "ls", str(tree), columns=columns)
        _no_padding(text)
        header, *rows = text.splitlines()
        assert header.split() == ["run", "kind", "era", "status", "attempts", "last", "step", "W&B", "id", "findings"]
        long_row = next(row for row in rows if row.startswith(LONG))  # the name whole, on one line
        assert long_row.split()[6] == wandb_id, long_row  # the W&B id column is there (it was dropped at 140)
        assert len(long_row) > 140 and len(rows) == 2
        assert rows[1].split()[-1] == "-"  # the last column is there, unpadded


def test_show_piped_keeps_whole_cells_and_no_padding(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(RUNS / "e2_rollback", tree / LONG)
    text = _piped(tmp_path, "show", str(tree / LONG), columns="60")
    _no_padding(text)
    lines = text.splitlines()
    header = lines[lines.index("attempts") + 1]
    assert header.split() == ["#", "started", "steps", "origin", "ended", "lost", "restored"]
    first, second = lines[lines.index("attempts") + 2:lines.index("attempts") + 4]
    assert "killed: Slurm signalled submitit attempt 1/2" in first and first.split()[-2:] == ["51-75", "-"]
    assert second.split()[-2:] == ["model/last", "@50"]  # `restored` whole, on the attempt's own line
    assert "…" not in text
    checkpoints = lines[lines.index("checkpoints") + 1]
    assert checkpoints.split()[-3:] == ["resume", "restored", "by"]


def test_check_piped_wraps_prose_but_never_pads(tmp_path: Path) -> None:
    text = _piped(tmp_path, "check", "--fail-on", "never", str(RUNS / "e2_crashed"))
    _no_padding(text)
    assert max(map(len, text.splitlines())) <= 140  # prose (messages, explanations) still wraps at the page width


def test_coloured_piped_output_has_no_padding_either(tmp_path: Path) -> None:
    text = _piped(tmp_path, "show", str(RUNS / "e2_rollback"), color=True)  # FORCE_COLOR: Rich styles the padding
    assert "\x1b[" in text
    _no_padding(re.sub(r"\x1b\[[0-9;]*m", "", text))
    assert "completed" in text and "model/last @50" in re.sub(r"\x1b\[[0-9;]*m", "", text)
