"""One rule for "has this run changed since it was last read" (``load.read_record``), kept by both of its callers:
the ``ls`` row cache (``session.store.row_cache``) and the Parquet export (``session.dataset_sync``, only changed runs are
rewritten). Every change a run's read depends on makes both read the run again and give what a fresh read gives;
an unchanged tree is not read again by either; on every fixture both record the same dependencies.

The export's earlier rule (a digest of the run directory's listing plus the outside files its sources named)
missed what the row cache saw: a new W&B folder or ``settings`` file in pimm's launch directory, a new
code-snapshot marker (``code/`` was skipped) and the Slurm log it leads to, a Slurm log that appeared after the
export, a live run turning stopped, a same-size rewrite within one mtime tick of the read. Each has a test here.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

import pimm_inspect
from pimm_inspect.load import assemble, read_record
from pimm_inspect.report.dataset import TABLES
from pimm_inspect.report.dataset_store import MANIFEST, PART_FILE, encode_partition, partition_dir
from pimm_inspect.session import Session, Settings, rows
from pimm_inspect.session.dataset_sync import DatasetReport, run_id_of
from pimm_inspect.session.store import disk_cache, row_cache
from tests.cache_support import DAY_AGO, age, quiet_copy

pq = pytest.importorskip("pyarrow.parquet")

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "fixtures" / "runs"


def _copy(name: str, tmp_path: Path) -> Path:
    """A quiet copy of a fixture folder under ``tmp_path/root``."""
    return quiet_copy(RUNS / name, tmp_path / "root" / name, DAY_AGO)


def _export(root: Path, out: Path) -> DatasetReport:
    return Session().export_dataset(root, out, run_dirs=pimm_inspect.discover(root))


def _tables(out: Path, run_id: str) -> dict[str, list[dict]]:
    """The run's partitions as rows (the export time left out: it is when, not what)."""
    value = encode_partition(run_id)
    found = {}
    for table in TABLES:
        data = pq.read_table(partition_dir(out, table, value) / PART_FILE)
        if "exported_at" in data.column_names:
            data = data.drop_columns(["exported_at"])
        found[table] = data.to_pylist()
    return found


def _both_read_again(root: Path, run: Path, change: Callable[[], None], tmp_path: Path, monkeypatch,
                     differs: bool | None = None) -> None:
    """Export ROOT and list RUN with the disk cache; nothing is read again while unchanged; after ``change``
    both read RUN again, and the export's partitions and the row equal those of a fresh read (``differs``: whether
    the partitions change too; None: not asserted, the tables need not carry the changed fact)."""
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    out, run_id = tmp_path / "ds", run_id_of(run, root)
    assert run_id in _export(root, out).added
    again = _export(root, out)
    assert again.rewritten == [] and run_id in again.unchanged  # an unchanged tree: nothing rewritten
    before_tables = _tables(out, run_id)
    disk = Session().disk
    assert disk is not None
    before_row = Session().row(run)
    assert row_cache.stored_row(disk, run.absolute()) == before_row
    change()
    assert row_cache.stored_row(disk, run.absolute()) is None, "the row cache would serve a stale row"
    assert run_id in _export(root, out).rewritten, "the export would keep a stale run"
    after_row = Session().row(run)
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", "off")
    fresh = tmp_path / "fresh"
    _export(root, fresh)
    assert _tables(out, run_id) == _tables(fresh, run_id)
    assert after_row == rows.build_row(run.absolute())[0]
    if differs is not None:
        assert (_tables(out, run_id) != before_tables) is differs


# -- what the export's old rule missed ------------------------------------------------------------------------

def test_new_wandb_folder_in_the_launch_directory(tmp_path, monkeypatch):
    launch = _copy("rw_launch_cwd_wandb", tmp_path)
    run = launch / "exp" / "panda" / "semseg" / "semseg-drift"
    source = sorted((launch / "wandb").iterdir())[-1]

    def add() -> None:
        shutil.copytree(source, launch / "wandb" / source.name.replace("081404", "091500"))

    _both_read_again(launch, run, add, tmp_path, monkeypatch, differs=True)


def test_wandb_settings_appearing_in_the_launch_directory(tmp_path, monkeypatch):
    """The W&B reader looks for ``settings`` beside the run folders (where a synced run's server is named): a
    dependency of both, though this offline run's tables do not change with it."""
    launch = _copy("rw_launch_cwd_wandb", tmp_path)
    run = launch / "exp" / "panda" / "semseg" / "semseg-drift"

    def settings() -> None:
        (launch / "wandb" / "settings").write_text("[default]\nbase_url = https://wandb.example.org\nentity = team-x\n")

    _both_read_again(launch, run, settings, tmp_path, monkeypatch, differs=False)


def test_wandb_sync_marker_in_the_launch_directory(tmp_path, monkeypatch):
    launch = _copy("rw_launch_cwd_wandb", tmp_path)
    run = launch / "exp" / "panda" / "semseg" / "semseg-drift"

    def synced() -> None:
        for folder in (launch / "wandb").iterdir():
            if folder.is_dir():
                (folder / (next(folder.glob("run-*.wandb")).name + ".synced")).write_text("")

    _both_read_again(launch, run, synced, tmp_path, monkeypatch)


def _repo_with_outside_slurm_log(tmp_path: Path, *, marker: bool, log: bool) -> tuple[Path, Path, Path]:
    """e2_rollback as pimm leaves it on a cluster: ``launch.sbatch`` sends the log to ``<repo>/slurm_logs/``, the
    job id is in the code snapshot's marker. Returns (repo, run, where the log was put aside when ``not log``)."""
    repo = tmp_path / "root" / "repo"
    run = repo / "exp" / "e2_rollback"
    shutil.copytree(RUNS / "e2_rollback", run, symlinks=True)
    (repo / "slurm_logs").mkdir()
    aside = tmp_path / "aside.out"
    shutil.move(str(run / "slurm-41877302.out"), repo / "slurm_logs" / "slurm-41877302.out" if log else aside)
    (run / "code").mkdir()
    if marker:
        (run / "code" / ".pimm_snapshot_complete_41877302").write_text("")
    sbatch = run / "launch.sbatch"
    sbatch.write_text(sbatch.read_text().replace("/sdf/group/neutrino/user/pimm/particle-imaging-models", str(repo)))
    age(repo, DAY_AGO)
    os.utime(aside if not log else repo, (DAY_AGO, DAY_AGO))
    return repo, run, aside


def test_new_code_snapshot_marker_leads_to_the_slurm_log(tmp_path, monkeypatch):
    """``code/`` is never searched for runs, but its snapshot markers name the job whose log is read."""
    repo, run, _ = _repo_with_outside_slurm_log(tmp_path, marker=False, log=True)

    def mark() -> None:
        (run / "code" / ".pimm_snapshot_complete_41877302").write_text("")

    _both_read_again(repo, run, mark, tmp_path, monkeypatch, differs=True)


def test_slurm_log_appearing_in_the_launch_directory(tmp_path, monkeypatch):
    repo, run, aside = _repo_with_outside_slurm_log(tmp_path, marker=True, log=False)

    def arrive() -> None:
        shutil.move(str(aside), repo / "slurm_logs" / "slurm-41877302.out")

    _both_read_again(repo, run, arrive, tmp_path, monkeypatch, differs=True)


def test_outside_slurm_log_growing(tmp_path, monkeypatch):
    repo, run, _ = _repo_with_outside_slurm_log(tmp_path, marker=True, log=True)

    def grow() -> None:
        with open(repo / "slurm_logs" / "slurm-41877302.out", "a") as fh:
            fh.write("slurmstepd: error: *** JOB 41877302 ON sdfampere012 CANCELLED AT 2026-07-16T12:00:00 ***\n")

    _both_read_again(repo, run, grow, tmp_path, monkeypatch)


def test_a_live_run_that_stopped_is_rewritten_though_no_file_changed(tmp_path, monkeypatch):
    """Its status changed with the clock alone: the row cache never kept its row, the export must not keep it."""
    run = _copy("e3a_running", tmp_path)
    root, out = run.parent, tmp_path / "ds"
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", "off")
    real = assemble._looks_live
    monkeypatch.setattr(assemble, "_looks_live", lambda c, now: True)
    _export(root, out)
    assert _tables(out, "e3a_running")["runs"][0]["status"] == "running"
    monkeypatch.setattr(assemble, "_looks_live", real)  # a quarter of an hour later, not one file touched
    assert _export(root, out).rewritten == ["e3a_running"]
    _export(root, tmp_path / "fresh")
    assert _tables(out, "e3a_running") == _tables(tmp_path / "fresh", "e3a_running")
    assert _tables(out, "e3a_running")["runs"][0]["status"] != "running"
    assert _export(root, out).unchanged == ["e3a_running"]


def test_a_same_size_rewrite_within_one_mtime_tick_of_the_read_is_not_missed(tmp_path, monkeypatch):
    """A file written just before the export read it may be rewritten again within the same mtime tick (same
    size, same inode): no stat can tell, so such a read is never reused, by the export as by the row cache."""
    run = _copy("e2_clean", tmp_path)
    root, out = run.parent, tmp_path / "ds"
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", "off")
    meta = run / "run_metadata.json"
    text = meta.read_text()
    assert '"host": "sdfampere012"' in text
    with open(meta, "r+") as fh:
        fh.write(text.replace("sdfampere012", "sdfampere013"))
    tick = meta.stat().st_mtime_ns
    _export(root, out)
    assert _tables(out, "e2_clean")["runs"][0]["host"] == "sdfampere013"
    with open(meta, "r+") as fh:  # the writer's last word, in place, within the same tick
        fh.write(text.replace("sdfampere012", "sdfampere014"))
    os.utime(meta, ns=(tick, tick))
    assert _export(root, out).rewritten == ["e2_clean"]
    assert _tables(out, "e2_clean")["runs"][0]["host"] == "sdfampere014"


def test_new_checkpoint_in_the_model_dir_a_model_link_leads_to(tmp_path, monkeypatch):
    """pimm's ``model`` link to ``$MODEL_DIR/.../model``: a checkpoint written there is a change of the run."""
    run = _copy("e2_clean", tmp_path)
    store = tmp_path / "model_store" / "e2_clean" / "model"  # outside the exported tree
    store.parent.mkdir(parents=True)
    shutil.move(str(run / "model"), store)
    (run / "model").symlink_to(store)
    age(tmp_path / "model_store", DAY_AGO)
    age(run, DAY_AGO)
    pth = next(p for p in sorted((RUNS / "e2_unsafe_checkpoint" / "model").rglob("*.pth")) if p.is_file())
    _both_read_again(run.parent, run, _copy_in(pth, store / "model_last.pth"), tmp_path, monkeypatch)


# -- every file kind (load/kinds.py), the same for both callers ----------------------------------------------

def _append(path: Path, text: str) -> Callable[[], None]:
    def change() -> None:
        with open(path, "a") as fh:
            fh.write(text)
    return change


def _edit_json(path: Path, edit: Callable[[dict], None]) -> Callable[[], None]:
    def change() -> None:
        data = json.loads(path.read_text())
        edit(data)
        path.write_text(json.dumps(data, indent=1))
    return change


def _grow_train_log(run: Path) -> Callable[[], None]:
    log = run / "train.log"
    last = next(line for line in reversed(log.read_text().splitlines()) if "Train: [" in line)
    return _append(log, last.replace("09:01:00", "09:01:02").replace("[3/3][25/25]", "[4/4][5/25]") + "\n")


def _copy_in(source: Path, target: Path) -> Callable[[], None]:
    return lambda: (shutil.copytree if source.is_dir() else shutil.copy2)(source, target)


def _new_eval(run: Path) -> Callable[[], None]:
    def change() -> None:
        stamp = next((run / "eval").iterdir())
        new = run / "eval" / "20990101T000000Z"
        shutil.copytree(stamp, new)
        _edit_json(new / "test_metrics.json", lambda d: d.update({k: 0.5 for k, v in d.items()
                                                                   if isinstance(v, float)}))()
    return change


def _hf_log(data: dict) -> None:
    data["log_history"].append({"epoch": 3.5, "step": 35, "loss": 1.25, "learning_rate": 1e-5})
    data["global_step"] = 35


KIND_CHANGES: dict[str, tuple[str, str, Callable[[Path], Callable[[], None]]]] = {
    "run_metadata.json": ("e2_clean", ".", lambda r: _edit_json(r / "run_metadata.json",
                                                                lambda d: d.update(host="elsewhere01"))),
    "resolved_config.json": ("e2_clean", ".", lambda r: _edit_json(r / "resolved_config.json",
                                                                   lambda d: d.update(seed=4242))),
    "model_config.json": ("e2_clean", ".", lambda r: _edit_json(r / "model_config.json",
                                                                lambda d: d.update(extra_layer=7))),
    "config.py": ("e2_clean", ".", lambda r: _append(r / "config.py", "\nextra_setting = 7\n")),
    "config.py deleted": ("e2_clean", ".", lambda r: (r / "config.py").unlink),
    "hparams.yaml": ("rw_lightning", "lightning_logs/version_0",
                     lambda r: _append(r / "hparams.yaml", "extra_setting: 7\n")),
    "train.log grown": ("e2_clean", ".", _grow_train_log),
    "new event file": ("e2_clean", ".", lambda r: _copy_in(next((RUNS / "e2_rollback").glob("events.out.*")),
                                                           r / next((RUNS / "e2_rollback").glob("events.out.*")).name)),
    "event file deleted": ("e2_rollback", ".", lambda r: sorted(r.glob("events.out.tfevents.*"))[-1].unlink),
    "new checkpoint": ("e2_clean", ".", lambda r: _copy_in(
        next(p for p in sorted((RUNS / "e2_unsafe_checkpoint" / "model").rglob("*.pth")) if p.is_file()),
        r / "model" / "model_last.pth")),
    "launch.sbatch": ("e2_rollback", ".", lambda r: _append(r / "launch.sbatch", "#SBATCH --time=02:00:00\n")),
    "new eval": ("e2_clean", ".", _new_eval),
    "rank log deleted": ("e3a_hung_rank", ".", lambda r: sorted((r / "structured_logs").iterdir())[0].unlink),
    "slurm log grown": ("e2_rollback", ".", lambda r: _append(
        next(r.glob("slurm-*.out")), "slurmstepd: error: *** JOB 41877302 CANCELLED AT 2026-07-16T12:00:00 ***\n")),
    "new wandb folder": ("e2_wandb", ".", lambda r: _copy_in(
        next((RUNS / "wandb_clean" / "wandb").iterdir()),
        r / "wandb" / next((RUNS / "wandb_clean" / "wandb").iterdir()).name.replace("clean001", "other002"))),
    "trainer_state.json": ("hf_clean", ".", lambda r: _edit_json(r / "trainer_state.json", _hf_log)),
    "HF event file in runs/": ("hf_clean", ".", lambda r: _copy_in(
        next(p for p in sorted((RUNS / "hf_resumed" / "runs").rglob("events.out.*"))),
        next((r / "runs").iterdir()) / "events.out.tfevents.1895946989.vm.99999.0")),
}


@pytest.mark.parametrize("case", sorted(KIND_CHANGES))
def test_every_file_kind_change_is_read_again_by_both(case, tmp_path, monkeypatch):
    name, inner, change = KIND_CHANGES[case]
    top = _copy(name, tmp_path)
    run = top / inner if inner != "." else top
    _both_read_again(top.parent, run, change(run), tmp_path, monkeypatch)


# -- both callers keep the same record -----------------------------------------------------------------------

def _row_deps(disk: disk_cache.DiskCache, run: Path) -> set[tuple[str, str, str]]:
    stored = row_cache.stored_entry(disk, run.absolute())
    assert stored is not None
    record = read_record.from_flat(stored[0], stored[1])
    assert record is not None
    return set(record.deps)


def _export_deps(out: Path, run_id: str) -> set[tuple[str, str, str]]:
    entry = json.loads((out / MANIFEST).read_text())["runs"][encode_partition(run_id)]
    parts = entry["read"]["deps"].split("\0")  # kind, path, fingerprint, kind, ...
    return set(zip(parts[0::3], parts[1::3], parts[2::3]))


def test_both_callers_record_the_same_read_of_every_fixture_run_and_of_a_changed_copy(tmp_path, monkeypatch):
    tree = tmp_path / "runs"
    shutil.copytree(RUNS, tree, symlinks=True)
    age(tree, DAY_AGO)
    runs = pimm_inspect.discover(tree)
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    disk = Session().disk
    assert disk is not None
    out = tmp_path / "ds"
    Session().export_dataset(tree, out, run_dirs=runs)
    listed = list(Session(Settings.from_env(jobs=1)).rows(runs))
    assert len(listed) == len(runs) > 40
    for run in runs:
        deps = _row_deps(disk, run)
        assert deps == _export_deps(out, run_id_of(run, tree)), run
        assert ("d", str(run.absolute())) in {(kind, path) for kind, path, _fp in deps}  # its listing
    # A changed copy: in every run, the first file its read opened grew by one byte (a day-old mtime kept).
    changed = set()
    for run in runs:
        first = next(p for k, p, _f in sorted(_row_deps(disk, run)) if k == "f" and os.path.isfile(p)
                     and Path(p).is_relative_to(tree))
        with open(first, "ab") as fh:
            fh.write(b"\n")
        os.utime(first, (DAY_AGO, DAY_AGO))
        changed.add(run_id_of(run, tree))
    for run in runs:
        assert row_cache.stored_row(disk, run.absolute()) is None, run
    report = Session().export_dataset(tree, out, run_dirs=runs)
    assert set(report.rewritten) == changed and report.unchanged == []
    list(Session(Settings.from_env(jobs=1)).rows(runs))
    for run in runs:
        assert _row_deps(disk, run) == _export_deps(out, run_id_of(run, tree)), run
    assert Session().export_dataset(tree, out, run_dirs=runs).rewritten == []


def test_a_manifest_without_read_records_rewrites_each_run_once_and_a_damaged_one_is_refused(tmp_path, monkeypatch):
    """A dataset written by the earlier rule (a ``tree`` digest per run) is brought under this one: every run is
    rewritten once, then left alone; a read record cut short is damage."""
    from pimm_inspect.report.dataset_store import DatasetProblem

    run = _copy("e2_clean", tmp_path)
    root, out = run.parent, tmp_path / "ds"
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", "off")
    _export(root, out)
    manifest = json.loads((out / MANIFEST).read_text())
    good = json.dumps(manifest)
    entry = manifest["runs"]["e2_clean"]
    del entry["read"]
    entry.update(tree="0" * 64, outside=[])
    (out / MANIFEST).write_text(json.dumps(manifest))
    assert _export(root, out).rewritten == ["e2_clean"]
    assert _export(root, out).unchanged == ["e2_clean"]
    damaged = json.loads(good)
    damaged["runs"]["e2_clean"]["read"]["deps"] += "\0f"  # a dependency cut short
    (out / MANIFEST).write_text(json.dumps(damaged))
    with pytest.raises(DatasetProblem, match="cannot be read"):
        _export(root, out)
