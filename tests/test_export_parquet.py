"""The Parquet dataset of a tree of runs (``export ROOT --format parquet -o DIR``), read back with DuckDB."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import struct
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import pimm_inspect
from pimm_inspect.analysis.configs import flatten_config, query_config
from pimm_inspect.cli.main import cli
from pimm_inspect.report.dataset import TABLES
from pimm_inspect.report.dataset_store import MANIFEST, decode_partition, encode_partition

duckdb = pytest.importorskip("duckdb")

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "fixtures" / "runs"
FIXTURES = sorted(Path(os.path.relpath(d, RUNS)).as_posix() for d in pimm_inspect.discover(RUNS))


def export(root: Path, out: Path, *args: str):
    return CliRunner().invoke(cli, ["export", str(root), "--format", "parquet", "-o", str(out), *args])


def query(sql: str) -> list[tuple]:
    return duckdb.connect().execute(sql).fetchall()


def table(out: Path, name: str) -> str:
    return f"read_parquet('{out}/{name}/*/*.parquet', hive_partitioning = true)"


@pytest.fixture(scope="module")
def fixture_export(tmp_path_factory):
    out = tmp_path_factory.mktemp("dataset") / "ds"
    result = export(RUNS, out)
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def loaded():
    return {name: pimm_inspect.load_run(RUNS / name) for name in FIXTURES}


def test_every_fixture_run_has_its_rows_in_every_table(fixture_export, loaded):
    out = fixture_export
    counts = {name: {row[0]: row[1] for row in query(f"SELECT run_id, count(*) FROM {table(out, name)} GROUP BY ALL")}
              for name in TABLES}
    assert set(counts["runs"]) == set(FIXTURES) and set(counts["runs"].values()) == {1}
    for name, run in loaded.items():
        assert counts["attempts"].get(name, 0) == len(run.attempts), name
        assert counts["findings"].get(name, 0) == len(run.findings), name
        assert counts["scalars"].get(name, 0) == len(run.scalars()), name
    points = dict(query(f"SELECT run_id, scalar_points FROM {table(out, 'runs')}"))
    assert points == {name: counts["scalars"].get(name, 0) for name in FIXTURES}
    # Every run has all four partition files, empty ones included (a glob always matches).
    for name in TABLES:
        assert len(list((out / name).glob("run=*/part-0.parquet"))) == len(FIXTURES)


def test_runs_rows_carry_the_facts_of_show(fixture_export, loaded):
    rows = duckdb.connect().execute(f"SELECT * FROM {table(fixture_export, 'runs')}").fetchdf()
    by_id = {r["run_id"]: r for r in rows.to_dict("records")}
    for name, run in loaded.items():
        row = by_id[name]
        assert (row["kind"], row["status"], row["attempts"]) == (run.kind, run.status, len(run.attempts))
        assert (None if row["last_step"] is None or row["last_step"] != row["last_step"] else int(row["last_step"])) \
            == run.summary.last_step
        assert row["errors"] + row["warnings"] + row["infos"] == len(run.findings)
        assert list(row["wandb_run_ids"]) == list(run.wandb.run_ids)
        assert row["run_path"] == str(run.root) and row["run"] == name  # DuckDB decodes the partition value
    rollback = by_id["e2_rollback"]
    assert (rollback["best_metric_name"], rollback["best_metric_value"]) == ("mIoU", 0.7646)
    assert rollback["config_kind"] == "resolved_config" and rollback["config_path"] == "resolved_config.json"
    raw = json.loads((RUNS / "e2_rollback" / "resolved_config.json").read_text())
    assert json.loads(rollback["config_json"]) == raw
    assert dict(rollback["config_number"])["optimizer.lr"] == raw["optimizer"]["lr"]
    assert dict(rollback["config_flat"])["optimizer.type"] == raw["optimizer"]["type"]
    assert by_id["hf_clean"]["config_kind"] == "hf_training_args"
    assert dict(by_id["hf_clean"]["config_number"])["learning_rate"] == 0.001


def test_secrets_are_masked_in_the_config_columns(fixture_export):
    raw = (RUNS / "e2_secret_in_config" / "resolved_config.json").read_text()
    key = re.search(r"[0-9a-f]{40}", raw)
    assert key
    (config_json, flat), = query(f"SELECT config_json, config_flat::VARCHAR FROM {table(fixture_export, 'runs')} "
                                 "WHERE run_id = 'e2_secret_in_config'")
    assert "****" in config_json and key.group(0) not in config_json and key.group(0) not in flat


@pytest.mark.parametrize("name", ["e2_rollback", "hf_resumed", "wandb_clean", "e2_nan_loss", "rw_tbx_add_scalars/runs/exp1"])
def test_scalars_equal_the_runs_series_exactly(fixture_export, loaded, name):
    run = loaded[name]
    got = query(f"SELECT tag, step, value, wall_time, attempt, source FROM {table(fixture_export, 'scalars')} "
                f"WHERE run_id = '{name}' ORDER BY tag, step, attempt NULLS FIRST")
    frame = run.scalars().sort_values(["tag", "step", "attempt"], na_position="first", kind="stable")
    want = [(r.tag, int(r.step), float(r.value), None if math.isnan(r.wall_time) else float(r.wall_time),
             None if pd.isna(r.attempt) else int(r.attempt), r.source)
            for r in frame.astype(object).itertuples()]
    assert len(got) == len(want) > 0

    def same(a, b):
        return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
    for g, w in zip(got, want):
        assert all(same(x, y) for x, y in zip(g, w)), (g, w)
    # And against the raw series: the rows of a tag are exactly the points of its series in the files they name
    # (when no (step, attempt) repeats, so the overlap policy drops nothing).
    checked = 0
    for tag in {row[0] for row in got}:
        rows = sorted((row[1], -1 if row[4] is None else row[4], row[5], row[2]) for row in got if row[0] == tag)
        files = {row[2] for row in rows}
        points = sorted((step, -1 if s.attempt is None else s.attempt, s.source, value)
                        for s in run.series if s.tag == tag and s.source in files
                        for step, value in zip(s.steps.tolist(), s.values.tolist()))
        if len({p[:2] for p in points}) == len(points):
            assert len(rows) == len(points)
            assert all(r[:3] == p[:3] and same(r[3], p[3]) for r, p in zip(rows, points)), tag
            checked += 1
    assert checked


def test_nan_values_are_kept_and_missing_wall_times_are_null(fixture_export):
    (nan_rows,), = query(f"SELECT count(*) FROM {table(fixture_export, 'scalars')} "
                         "WHERE run_id = 'e2_nan_loss' AND isnan(value)")
    assert nan_rows > 0


def test_a_hive_partition_query_groups_by_run(fixture_export, loaded):
    rows = dict(query(f"SELECT run, count(*) FROM read_parquet('{fixture_export}/scalars/*/*.parquet', "
                      "hive_partitioning = true) GROUP BY run"))
    assert rows == {name: len(run.scalars()) for name, run in loaded.items() if len(run.scalars())}


def _readme_query() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Parquet dataset"):]
    return re.search(r"```sql\n(.*?)```", section, re.S).group(1)


def test_the_readme_query_returns_the_final_miou_of_every_run_with_lr_above_1e_3(fixture_export, loaded):
    sql = _readme_query().replace("runs_dataset/", f"{fixture_export}/")
    got = query(sql)
    want = []
    for name, run in loaded.items():
        doc = query_config(run)
        lr = flatten_config(dict(doc.data)).get("optimizer.lr") if doc is not None else None
        frame = run.scalars(tags=("val/mIoU",))
        if not isinstance(lr, float) or lr <= 1e-3 or frame.empty:
            continue
        last = frame.assign(a=frame["attempt"].fillna(-1)).sort_values(["step", "a"]).iloc[-1]
        want.append((name, lr, int(last["step"]), float(last["value"])))
    assert want and sorted(got, key=lambda r: (-r[3], r[0])) == sorted(want, key=lambda r: (-r[3], r[0]))
    assert got == sorted(got, key=lambda r: -r[3])  # ORDER BY final_miou DESC
    # The e0 run has no resolved_config.json: its train.log Config: dump gives the lr.
    assert "e0_legacy" in {r[0] for r in got}


# --- appending -------------------------------------------------------------------------------------------------

def _append_events(event_file: Path, tag: str, steps: range) -> None:
    """Append ``tag`` scalars at ``steps`` to an event file, written by TensorBoard's own writer."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    with tempfile.TemporaryDirectory() as scratch:
        writer = EventFileWriter(scratch, max_queue_size=1000, flush_secs=3600)
        for step in steps:
            value = summary_pb2.Summary.Value(tag=tag, simple_value=1.0 / step)
            writer.add_event(event_pb2.Event(wall_time=1784541600.0 + step, step=step,
                                             summary=summary_pb2.Summary(value=[value])))
        writer.close()
        data = next(Path(scratch).glob("events.out.tfevents.*")).read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    with open(event_file, "ab") as fh:
        fh.write(data[8 + 4 + length + 4:])  # without the writer's own file_version record


def _parts(out: Path) -> dict[Path, tuple[int, int]]:
    """Every partition file with its (inode, mtime_ns)."""
    return {p.relative_to(out): (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.glob("*/run=*/part-0.parquet")}


def _tree(tmp_path: Path, *names: str) -> Path:
    root = tmp_path / "exp"
    for name in names:
        shutil.copytree(RUNS / name, root / name, symlinks=True)
    return root


def test_a_second_export_rewrites_only_the_grown_run_and_adds_the_new_one(tmp_path):
    root = _tree(tmp_path, "tb_plain", "e2_clean", "wandb_clean")
    out = tmp_path / "ds"
    assert export(root, out).exit_code == 0
    first = _parts(out)
    assert len(first) == 4 * len(TABLES)  # tb_plain holds two runs
    again = export(root, out)
    assert again.exit_code == 0 and "0 added, 0 rewritten, 4 unchanged" in again.stderr
    assert _parts(out) == first  # nothing touched
    event_file = next((root / "tb_plain/runs/baseline").glob("events.out.tfevents.*"))
    _append_events(event_file, "loss", range(51, 61))
    shutil.copytree(RUNS / "hf_clean", root / "hf_clean", symlinks=True)
    result = export(root, out)
    assert result.exit_code == 0 and "1 added, 1 rewritten, 3 unchanged" in result.stderr, result.stderr
    second = _parts(out)
    grown = {p for p in first if p.parts[1] == "run=tb_plain%2Fruns%2Fbaseline"}
    assert len(grown) == len(TABLES)
    for part, stamp in first.items():
        if part in grown:
            assert second[part][0] != stamp[0]  # a new file renamed into place
        else:
            assert second[part] == stamp, part  # same inode, same mtime: untouched
    assert {p for p in second if p.parts[1] == "run=hf_clean"} == {Path(t, "run=hf_clean", "part-0.parquet")
                                                                     for t in TABLES}
    (steps,), = query(f"SELECT max(step) FROM {table(out, 'scalars')} "
                      "WHERE run_id = 'tb_plain/runs/baseline' AND tag = 'loss'")
    assert steps == 60
    manifest = json.loads((out / MANIFEST).read_text())
    assert {e["run_id"] for e in manifest["runs"].values()} == {"tb_plain/runs/baseline", "tb_plain/runs/lr-0.1",
                                                                 "e2_clean", "wandb_clean", "hf_clean"}


def test_a_file_the_reader_does_not_list_still_counts_as_a_change(tmp_path):
    root = _tree(tmp_path, "hf_clean", "e2_clean")
    out = tmp_path / "ds"
    assert export(root, out).exit_code == 0
    before = _parts(out)
    config = root / "hf_clean" / "config.json"
    os.utime(config, ns=(config.stat().st_atime_ns, config.stat().st_mtime_ns + 1_000_000_000))
    result = export(root, out)
    assert "0 added, 1 rewritten, 1 unchanged" in result.stderr
    after = _parts(out)
    assert all(after[p] == s for p, s in before.items() if p.parts[1] == "run=e2_clean")


def test_runs_gone_from_the_tree_are_kept_unless_pruned(tmp_path):
    root = _tree(tmp_path, "e2_clean", "wandb_clean")
    out = tmp_path / "ds"
    assert export(root, out).exit_code == 0
    shutil.rmtree(root / "wandb_clean")
    kept = export(root, out)
    assert kept.exit_code == 0 and "kept 1 run(s) no longer under" in kept.stderr and "wandb_clean" in kept.stderr
    assert {r[0] for r in query(f"SELECT run_id FROM {table(out, 'runs')}")} == {"e2_clean", "wandb_clean"}
    pruned = export(root, out, "--prune")
    assert pruned.exit_code == 0 and "1 pruned" in pruned.stderr
    assert {r[0] for r in query(f"SELECT run_id FROM {table(out, 'runs')}")} == {"e2_clean"}
    assert not any(out.glob("*/run=wandb_clean"))


def test_other_options_rewrite_every_run(tmp_path):
    root = _tree(tmp_path, "e2_rollback", "e2_clean")
    out = tmp_path / "ds"
    assert export(root, out).exit_code == 0
    result = export(root, out, "--policy", "newest")
    assert result.exit_code == 0 and "every run was rewritten" in result.stderr and "2 rewritten" in result.stderr
    dupes = query(f"SELECT count(*) FROM {table(out, 'scalars')} GROUP BY run_id, tag, step HAVING count(*) > 1")
    assert dupes == []


# --- hostile names, bad runs, refusals ---------------------------------------------------------------------------

HOSTILE = ["a=b", "dots..", "x=1/y=2", "sp ace", "tab\tname", "new\nline", "esc\x1b[31mred", "ünï©ode", "per%41cent",
           "~tilde", "__HIVE_DEFAULT_PARTITION__", "é" * 120, os.fsdecode(b"bytes\xff\xfe")]
"""Run folder names (``/`` makes a nested folder): separators, ``=``, controls, unicode, undecodable bytes, a name
whose encoding is too long for one path component."""


def _listing(root: Path) -> list[tuple[bytes, int, int]]:
    out = []
    for folder, dirs, files in os.walk(os.fsencode(root)):
        for name in dirs + files:
            st = os.lstat(os.path.join(folder, name))
            out.append((os.path.join(folder, name), st.st_size, st.st_mtime_ns))
    return sorted(out)


def test_hostile_run_names_become_safe_reversible_partitions(tmp_path):
    root = tmp_path / "exp"
    names = HOSTILE
    for name in names:
        shutil.copytree(RUNS / "e2_clean", root / name, symlinks=True)
    before = _listing(root)
    out = tmp_path / "ds"
    result = export(root, out)
    assert result.exit_code == 0, result.output
    assert _listing(root) == before  # nothing written inside the tree
    values = sorted(p.name[len("run="):] for p in (out / "runs").iterdir())
    assert len(values) == len(names)
    for value in values:
        assert re.fullmatch(r"[A-Za-z0-9._%~-]+", value) and len(value) <= 200
    for table_name in TABLES:  # one folder level per table, nothing else anywhere
        for path in (out / table_name).rglob("*"):
            assert path.relative_to(out / table_name).parts[0].startswith("run=")
            assert len(path.relative_to(out / table_name).parts) <= 2
    ids = {r[0]: r[1] for r in query(f"SELECT run_id, run FROM {table(out, 'runs')}")}
    from pimm_inspect.report.safe_text import name_text

    assert set(ids) == {name_text(n) for n in names}  # the run id is the path by the one name escape
    for name in names:
        run_id = name_text(name)
        value = encode_partition(run_id)
        if "~~" in value:
            assert name == "é" * 120  # shortened: the run_id column carries the id
            continue
        assert decode_partition(value) == run_id
        assert ids[run_id] == run_id  # DuckDB decodes the partition value back to the id (bytes ff fe too)
    (count,), = query(f"SELECT count(*) FROM {table(out, 'scalars')} WHERE run_id = 'esc\x1b[31mred'")
    assert count == len(pimm_inspect.load_run(RUNS / "e2_clean").scalars())


def test_partition_encoding_roundtrips_any_bytes():
    from urllib.parse import unquote_to_bytes

    from hypothesis import given, settings

    from pimm_inspect.report.json_doc import safe_str

    from hypothesis import strategies as st

    @settings(max_examples=300, deadline=None)
    @given(st.binary(min_size=1, max_size=80))
    def check(raw: bytes) -> None:
        name = os.fsdecode(raw)
        value = encode_partition(name)
        assert re.fullmatch(r"[A-Za-z0-9._%~-]+", value)  # ASCII, no separator, no control character
        component = f"run={value}"  # never "." or "..": the value always follows "run="
        assert os.path.normpath(os.path.join("t", component)) == os.path.join("t", component)
        assert decode_partition(value) == name
        unquote_to_bytes(value).decode("utf-8")  # what Hive readers decode is always text (DuckDB requires it)
        assert (unquote_to_bytes(value).decode() == name) == (name == safe_str(name))

    check()
    assert encode_partition("a/b=c") == "a%2Fb%3Dc" and encode_partition("e2_clean") == "e2_clean"
    assert encode_partition("x" * 300) != encode_partition("x" * 301)
    assert encode_partition(os.fsdecode(b"a\xffb")) == "a~FFb" and encode_partition("a~b") == "a%7Eb"


def test_bad_runs_give_findings_and_an_export_bug_costs_one_run(tmp_path, monkeypatch):
    root = _tree(tmp_path, "e2_clean", "wandb_clean")
    event_file = next((root / "e2_clean").glob("events.out.tfevents.*"))
    data = event_file.read_bytes()
    event_file.write_bytes(data[: len(data) // 2] + b"\0" * 64)
    os.utime(event_file, (1.7e9, 1.7e9))  # damaged long ago: a file written just before a read is read again
    from pimm_inspect.report import dataset

    real = dataset.scalars_table

    def broken(run, run_id, *args):
        if run_id == "wandb_clean":
            raise RuntimeError("boom")
        return real(run, run_id, *args)

    monkeypatch.setattr(dataset, "scalars_table", broken)
    out = tmp_path / "ds"
    result = export(root, out)
    assert result.exit_code == 0 and "wandb_clean: its tables could not be built" in result.stderr
    codes = {tuple(r) for r in query(f"SELECT run_id, code FROM {table(out, 'findings')}")}
    assert ("e2_clean", "file.corrupt") in codes or ("e2_clean", "file.truncated") in codes
    assert ("wandb_clean", "internal.export-failed") in codes
    assert query(f"SELECT count(*) FROM {table(out, 'runs')}") == [(2,)]
    monkeypatch.setattr(dataset, "scalars_table", real)
    retry = export(root, out)  # the failed run is not recorded as exported: it is tried again
    assert "1 rewritten, 1 unchanged" in retry.stderr
    assert ("wandb_clean", "internal.export-failed") not in {
        tuple(r) for r in query(f"SELECT run_id, code FROM {table(out, 'findings')}")}


def test_refuses_to_write_inside_a_run_or_over_something_else(tmp_path):
    root = _tree(tmp_path, "e2_clean", "wandb_clean")
    before = _listing(root)
    inside = export(root, root / "e2_clean" / "ds")
    assert inside.exit_code == 2 and "is inside the run" in inside.stderr and "nothing is written inside" in inside.stderr
    deeper = export(root / "e2_clean", root / "e2_clean" / "model" / "ds")
    assert deeper.exit_code == 2 and "is inside the run" in deeper.stderr
    holder = export(root, root)
    assert holder.exit_code == 2 and "holds the run" in holder.stderr
    link = tmp_path / "link"
    link.symlink_to(root / "wandb_clean")
    linked = export(root, link / "ds")  # a path that reaches the run through a link is inside it all the same
    assert linked.exit_code == 2 and "is inside the run" in linked.stderr
    assert _listing(root) == before
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    other = export(root, busy)
    assert other.exit_code == 2 and "holds no pimm-inspect dataset" in other.stderr
    assert sorted(os.listdir(busy)) == ["notes.txt"]
    out = tmp_path / "ds"
    assert export(root, out).exit_code == 0
    elsewhere = export(root / "e2_clean", out)
    assert elsewhere.exit_code == 2 and "is the dataset of" in elsewhere.stderr


def test_a_single_file_is_still_one_runs_table_and_a_tree_asks_for_a_directory(tmp_path):
    single = CliRunner().invoke(cli, ["export", str(RUNS / "e2_rollback"), "--format", "parquet",
                                      "-o", str(tmp_path / "one.parquet")])
    assert single.exit_code == 0 and (tmp_path / "one.parquet").is_file()
    tree = CliRunner().invoke(cli, ["export", str(RUNS), "--format", "parquet", "-o", str(tmp_path / "all.parquet")])
    assert tree.exit_code == 2 and "give -o a directory" in tree.stderr


def test_without_pyarrow_the_dataset_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # `import pyarrow` raises ImportError
    result = export(RUNS / "e2_clean", tmp_path / "ds")
    assert result.exit_code == 2 and "pip install 'pimm-inspect[parquet]'" in result.stderr
    assert not (tmp_path / "ds").exists()


def test_a_lone_surrogate_in_a_config_is_exported_escaped(tmp_path):
    """``"\\udd00"`` in resolved_config.json (found by a hypothesis test, by chance) made the run's tables fail."""
    run = tmp_path / "run"
    shutil.copytree(RUNS / "e2_clean", run, symlinks=True)
    doc = json.loads((run / "resolved_config.json").read_text(encoding="utf-8"))
    doc["note"] = "x\udd00y"
    (run / "resolved_config.json").write_text(json.dumps(doc), encoding="utf-8")  # ASCII: the escape as JSON has it
    out = tmp_path / "ds"
    result = CliRunner().invoke(cli, ["export", str(run), "--format", "parquet", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "export-failed" not in result.stderr
    import pyarrow.parquet as pq

    (row,) = pq.read_table(out / "runs").to_pylist()
    assert dict(row["config_flat"])["note"] == "x\\udd00y"  # the escape, as text: every other leaf as it was
    assert dict(row["config_flat"])["optimizer.lr"] == str(doc["optimizer"]["lr"])
