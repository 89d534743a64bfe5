"""``export ROOT --format parquet -o DIR --shard K/N``: N processes (a Slurm job array) build one dataset at once,
without a lock, each writing only its own runs' partitions and its own manifest part; the next unsharded export
merges the parts. The rows are those of one unsharded export."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import pimm_inspect
from pimm_inspect.cli.main import cli
from pimm_inspect.report.dataset import TABLES
from pimm_inspect.report.dataset_store import MANIFEST, part_name
from pimm_inspect.session.dataset_sync import shard_of

duckdb = pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "fixtures" / "runs"
NAMES = ("e2_clean", "hf_resumed", "tb_plain", "wandb_clean")
"""Four fixture folders, five runs (tb_plain holds two)."""
SHARDS = 3


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "exp"
    for name in NAMES:
        shutil.copytree(RUNS / name, root / name, symlinks=True)
    return root


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-P", "-m", "pimm_inspect", "--no-cache", *args]


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1")


def _rows(out: Path, table: str, hive: bool = True) -> list[tuple]:
    """Every row of a table, sorted, without the export timestamp (the only column that differs between exports)."""
    con = duckdb.connect()
    relation = f"read_parquet('{out}/{table}/*/*.parquet', hive_partitioning = {str(hive).lower()})"
    columns = [c for (c, *_rest) in con.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall() if c != "exported_at"]
    rows = con.execute(f"SELECT {', '.join(columns)} FROM {relation}").fetchall()
    return sorted(rows, key=repr)


def _parts(out: Path) -> dict[Path, tuple[int, int]]:
    return {p.relative_to(out): (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.glob("*/run=*/part-0.parquet")}


def test_the_shard_of_a_run_is_the_sha256_of_its_relative_path_mod_n() -> None:
    for run_id in ("e2_clean", "tb_plain/runs/baseline", "a b/ü", "."):
        want = int.from_bytes(hashlib.sha256(run_id.encode()).digest(), "big") % 7
        assert shard_of(run_id, 7) == want
    # A deterministic split, not Python's per-process randomised hash: fixed values, whatever PYTHONHASHSEED.
    assert [shard_of(f"run_{i}", 4) for i in range(8)] == [
        int(hashlib.sha256(f"run_{i}".encode()).hexdigest(), 16) % 4 for i in range(8)]


def test_n_shards_started_at_once_give_the_rows_of_one_unsharded_export(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    count = len(pimm_inspect.discover(root))
    sharded, whole = tmp_path / "sharded", tmp_path / "whole"
    procs = [subprocess.Popen(_cli("export", str(root), "--format", "parquet", "-o", str(sharded),
                                   "--shard", f"{k}/{SHARDS}"), env=_env(), stderr=subprocess.PIPE, text=True)
             for k in range(SHARDS)]
    unsharded = CliRunner().invoke(cli, ["--no-cache", "export", str(root), "--format", "parquet", "-o", str(whole)])
    errs = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * SHARDS and unsharded.exit_code == 0, errs
    added = sum(int(e.split(": ")[-1].split(" added")[0]) for e in errs[:SHARDS])
    assert added == count, errs  # every run in exactly one shard
    assert not (sharded / MANIFEST).exists() and not (sharded / ".pimm-inspect.lock").exists()  # no lock taken
    found = {}
    for k in range(SHARDS):
        part = json.loads((sharded / part_name((k, SHARDS))).read_text())
        assert part["shard"] == [k, SHARDS]
        for value, entry in part["runs"].items():
            assert shard_of(entry["run_id"], SHARDS) == k  # each part lists only its own shard's runs
            found[value] = entry["run_id"]
    assert len(found) == count and len({shard_of(r, SHARDS) for r in found.values()}) > 1
    assert not list(sharded.rglob(".*tmp-*"))  # no temporary file left behind
    for table in TABLES:
        assert _rows(sharded, table) == _rows(whole, table), table
    # The merge: a later unsharded export reads nothing again (each part's runs are known), removes the parts.
    before = _parts(sharded)
    merged = CliRunner().invoke(cli, ["--no-cache", "export", str(root), "--format", "parquet", "-o", str(sharded)])
    assert merged.exit_code == 0 and f"0 added, 0 rewritten, {count} unchanged" in merged.stderr, merged.stderr
    assert _parts(sharded) == before
    assert sorted(p.name for p in sharded.glob("_pimm_inspect_manifest*")) == [MANIFEST]
    manifest = json.loads((sharded / MANIFEST).read_text())
    assert {v: e["run_id"] for v, e in manifest["runs"].items()} == found and "shard" not in manifest


def test_a_shard_touches_only_its_own_runs_and_what_a_part_lists_is_kept(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    out = tmp_path / "ds"
    export = ["--no-cache", "export", str(root), "--format", "parquet", "-o", str(out)]
    assert CliRunner().invoke(cli, export).exit_code == 0
    before, manifest = _parts(out), (out / MANIFEST).read_bytes()
    with open(root / "e2_clean" / "train.log", "a") as log:
        log.write("\n")  # e2_clean changed
    mine = shard_of("e2_clean", SHARDS)
    again = CliRunner().invoke(cli, [*export, "--shard", f"{mine}/{SHARDS}"])
    assert again.exit_code == 0 and "0 added, 1 rewritten" in again.stderr, again.stderr
    after = _parts(out)
    for part, stamp in before.items():
        assert (after[part] != stamp) == (part.parts[1] == "run=e2_clean"), part  # the other runs' files untouched
    assert (out / MANIFEST).read_bytes() == manifest  # a shard writes its own part, never the manifest
    # The run leaves ROOT: the next merge keeps it (its part listed it), it is not pruned.
    shutil.rmtree(root / "e2_clean")
    merged = CliRunner().invoke(cli, export)
    assert merged.exit_code == 0 and "kept 1 run(s) no longer under" in merged.stderr, merged.stderr
    assert (out / "scalars" / "run=e2_clean" / "part-0.parquet").is_file()
    assert not (out / part_name((mine, SHARDS))).exists()


def test_a_shard_part_that_is_a_link_is_refused(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    out = tmp_path / "ds"
    victim = tmp_path / "victim.json"
    victim.write_text("precious\n")
    out.mkdir()
    os.symlink(victim, out / part_name((0, 2)))
    result = CliRunner().invoke(cli, ["--no-cache", "export", str(root), "--format", "parquet", "-o", str(out),
                                      "--shard", "0/2"])
    assert result.exit_code == 2 and "link" in result.stderr, result.stderr
    assert victim.read_text() == "precious\n" and not (out / "runs").exists()


def test_a_folder_with_other_files_is_still_refused_and_bad_shards_are_usage_errors(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine\n")
    base = ["--no-cache", "export", str(root), "--format", "parquet"]
    refused = CliRunner().invoke(cli, [*base, "-o", str(other), "--shard", "0/2"])
    assert refused.exit_code == 2 and "holds no pimm-inspect dataset" in refused.stderr
    for shard in ("2/2", "-1/2", "1", "a/b", "0/0"):
        assert CliRunner().invoke(cli, [*base, "-o", str(tmp_path / "ds"), "--shard", shard]).exit_code == 2, shard
    pruned = CliRunner().invoke(cli, [*base, "-o", str(tmp_path / "ds"), "--shard", "0/2", "--prune"])
    assert pruned.exit_code == 2 and "--prune" in pruned.stderr
    csv = CliRunner().invoke(cli, ["export", str(RUNS / "e2_clean"), "--shard", "0/2"])
    assert csv.exit_code == 2 and "--shard is for the Parquet dataset" in csv.stderr
    assert not (tmp_path / "ds").exists()


def _compact_rows(out: Path, table: str) -> list[tuple]:
    con = duckdb.connect()
    columns = [c for (c, *_rest) in con.execute(f"DESCRIBE SELECT * FROM '{out}/{table}.parquet'").fetchall()
               if c != "exported_at"]
    return sorted(con.execute(f"SELECT {', '.join(columns)} FROM '{out}/{table}.parquet'").fetchall(), key=repr)


def test_compact_tables_hold_the_partitions_rows_and_never_go_stale(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    out = tmp_path / "ds"
    victim = tmp_path / "victim.parquet"
    victim.write_text("precious\n")
    export = ["--no-cache", "export", str(root), "--format", "parquet", "-o", str(out)]
    assert CliRunner().invoke(cli, [*export, "--shard", "0/2"]).exit_code == 0
    out.joinpath("runs.parquet").symlink_to(victim)  # a planted link is replaced, never written through
    merged = CliRunner().invoke(cli, [*export, "--compact"])
    assert merged.exit_code == 0 and "compact tables rebuilt" in merged.stderr, merged.stderr
    assert victim.read_text() == "precious\n"
    for table in TABLES:
        assert _compact_rows(out, table) == _rows(out, table, hive=False), table
    # The README's query gives the same answer over the compact files as over the partitions.
    parts = "read_parquet('{0}/{1}/*/*.parquet', hive_partitioning = true)"
    query = ("SELECT r.run_id, s.step, s.value FROM {runs} AS r JOIN {scalars} AS s USING (run_id) "
             "WHERE s.tag = 'val/mIoU' QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY s.step DESC) = 1 "
             "ORDER BY run_id")
    over_parts = duckdb.sql(query.format(runs=parts.format(out, "runs"), scalars=parts.format(out, "scalars")))
    over_compact = duckdb.sql(query.format(runs=f"'{out}/runs.parquet'", scalars=f"'{out}/scalars.parquet'"))
    assert over_parts.fetchall() == over_compact.fetchall() != []
    section = (REPO / "README.md").read_text().split("## Parquet dataset", 1)[1]
    first, second = (q.replace("runs_dataset/", f"{out}/") for q in re.findall(r"```sql\n(.*?)```", section, re.S)[:2])
    assert duckdb.sql(first).fetchall() == duckdb.sql(second).fetchall()  # the README's two queries agree
    # An export that changes the partitions without --compact removes them; so does a shard.
    assert CliRunner().invoke(cli, export).exit_code == 0
    assert not any(out.glob("*.parquet"))
    assert CliRunner().invoke(cli, [*export, "--compact"]).exit_code == 0 and (out / "scalars.parquet").is_file()
    assert CliRunner().invoke(cli, [*export, "--shard", "1/2"]).exit_code == 0
    assert not any(out.glob("*.parquet"))
    assert CliRunner().invoke(cli, [*export, "--shard", "1/2", "--compact"]).exit_code == 2
