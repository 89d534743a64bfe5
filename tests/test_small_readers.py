"""run_metadata.json, configs, launch.sbatch, structured logs, Slurm logs: content and damage."""

import json
import os

import pytest

from pimm_inspect.sources.config.json_docs import read_config_json, read_run_metadata, read_text_doc
from pimm_inspect.sources.slurm.sbatch import read_sbatch
from pimm_inspect.sources.slurm.slurm_log import read_slurm_log
from pimm_inspect.sources.slurm.rank_logs import read_rank_log

META = {
    "created_at": "2026-07-14T21:30:00+00:00", "launch_command": "pimm submit --train.config x",
    "command": ["python", "pimm/train.py", "--config-file", "configs/x.py"], "cwd": "/sdf/repo",
    "host": "sdfampere012", "git": {"commit": "abc123", "branch": "main", "is_dirty": True,
                                    "dirty_check": "tracked_files_only"},
}


def test_run_metadata_to_provenance(tmp_path):
    path = tmp_path / "run_metadata.json"
    path.write_text(json.dumps(META))
    result = read_run_metadata(path, "run_metadata.json")
    prov = result.value.provenance
    assert (prov.git_commit, prov.git_branch, prov.git_dirty, prov.host) == ("abc123", "main", True, "sdfampere012")
    assert prov.command == "python pimm/train.py --config-file configs/x.py"
    assert prov.created_at == "2026-07-14T21:30:00+00:00" and prov.source == "run_metadata.json"
    assert result.findings == ()


@pytest.mark.parametrize("content,code", [(b"", "file.empty"), (b'{"a": ', "file.invalid-json"),
                                          (b"[1, 2]", "file.invalid-json"), (b"\xff\xfe{}", "file.corrupt"),
                                          (b"[" * 500 + b"]" * 500, "file.invalid-json")])
def test_damaged_json_gives_findings(tmp_path, content, code):
    path = tmp_path / "resolved_config.json"
    path.write_bytes(content)
    got = read_config_json(path, "resolved_config.json", "resolved_config")
    doc, findings = got.value, got.findings
    assert doc is None
    assert code in {f.code for f in findings}
    assert all(f.paths == ("resolved_config.json",) for f in findings)


def test_json_with_nan_is_read(tmp_path):
    path = tmp_path / "resolved_config.json"
    path.write_text('{"lr": NaN, "epoch": 3}')
    got = read_config_json(path, "resolved_config.json", "resolved_config")
    doc, findings = got.value, got.findings
    assert doc.data["epoch"] == 3 and findings == ()


def test_fifo_never_blocks(tmp_path):
    fifo = tmp_path / "run_metadata.json"
    os.mkfifo(fifo)
    result = read_run_metadata(fifo, "run_metadata.json")
    assert result.value.raw is None
    assert [f.code for f in result.findings] == ["file.unreadable"]


def test_config_py_kept_as_text(tmp_path):
    path = tmp_path / "config.py"
    path.write_text("import os\nos.system('echo never run')\nepoch = 3\n")
    got = read_text_doc(path, "config.py", "config_py")
    doc, findings = got.value, got.findings
    assert doc.text.startswith("import os") and doc.data is None and findings == ()


def test_sbatch_directives(tmp_path):
    path = tmp_path / "launch.sbatch"
    path.write_text("#!/bin/bash\n#SBATCH --job-name=semseg-fft\n#SBATCH --nodes=2\n#SBATCH -t 04:00:00\n"
                    "#SBATCH --gres=gpu:4\n#SBATCH --requeue\necho hi\n#SBATCH --partition ampere\n")
    got = read_sbatch(path, "launch.sbatch")
    info, findings = got.value, got.findings
    assert info.job_name == "semseg-fft" and info.requeue
    assert info.directives["nodes"] == "2" and info.directives["time"] == "04:00:00"
    assert info.directives["gres"] == "gpu:4" and info.directives["partition"] == "ampere"


def _record(**kw):
    base = {"schema_version": 1, "rank": 0, "world_size": 2, "attempt": 2, "job_id": "123", "host_name": "n1",
            "time": 100.0, "log_type": "event"}
    base.update(kw)
    return json.dumps(base, separators=(",", ":"))


def test_structured_log_summary_and_truncated_tail(tmp_path):
    folder = tmp_path / "structured_logs"
    folder.mkdir()
    path = folder / "training.global_rank_1.20260714-143000-123456-AB12CD.jsonl"
    lines = [_record(log_type_name="step_start", step=7), _record(log_type_name="data_fetch_start", step=7),
             _record(log_type_name="data_fetch_end", step=7, value=3.5),
             _record(log_type_name="forward_start", step=7, time=101.5)]
    path.write_text("\n".join(lines) + '\n{"schema_version":1,"rank"')
    got = read_rank_log(path, "structured_logs/" + path.name)
    summary, findings = got.value, got.findings
    assert summary.rank == 1 and summary.source == "training" and summary.started == "20260714-143000-123456"
    assert summary.records == 4 and summary.truncated_last_line and summary.malformed == 1
    assert summary.attempts == (2,) and summary.job_ids == ("123",) and summary.world_size == 2
    assert summary.last_step == 7 and summary.last_event == "forward_start"
    assert summary.open_spans == ("step", "forward")
    assert [f.code for f in findings] == ["file.truncated"]


def test_slurm_log_markers(tmp_path):
    path = tmp_path / "slurm-4242.out"
    path.write_text("Experiment dir: exp/run\npimm submitit attempt 1/3: run\nRequeueing pimm submitit attempt 2/3\n"
                    "slurmstepd: error: *** JOB 4242 ON n1 CANCELLED AT 2026-07-14T18:00:00 DUE TO TIME LIMIT ***\n"
                    "pimm submitit attempt 2/3: run\n[rank0]: torch.OutOfMemoryError: CUDA out of memory.\n")
    got = read_slurm_log(path, "slurm-4242.out")
    log, findings = got.value, got.findings
    assert log.job_id == "4242"
    assert log.attempts == ((1, 3, False), (2, 3, True), (2, 3, False))
    assert dict(log.problems)["time-limit"].startswith("slurmstepd")
    before, first, second = log.segments
    assert (before.k, before.requeued, before.problems) == (None, False, ())
    assert (first.k, first.n, first.requeued) == (1, 3, True) and "time-limit" in dict(first.problems)
    assert (second.k, second.requeued) == (2, False) and set(dict(second.problems)) == {"oom"}


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

VALID_METADATA = json.dumps(META).encode()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=400), cut=st.integers(min_value=0, max_value=len(VALID_METADATA)),
       flips=st.lists(st.integers(min_value=0, max_value=len(VALID_METADATA) - 1), max_size=4))
def test_small_readers_never_raise(tmp_path, data, cut, flips):
    """Any bytes, any prefix or mutation of a valid document: what could be read plus findings, never an exception."""
    mutated = bytearray(VALID_METADATA)
    for i in flips:
        mutated[i] ^= 0xA5
    for content in (data, VALID_METADATA[:cut], bytes(mutated)):
        for name in ("run_metadata.json", "launch.sbatch", "slurm-1.out", "config.py",
                     "training.global_rank_0.20260714-143000-123456-AB12CD.jsonl"):
            path = tmp_path / name
            path.write_bytes(content)
            read_run_metadata(path, name)
            read_config_json(path, name, "resolved_config")
            read_text_doc(path, name, "config_py")
            read_sbatch(path, name)
            read_slurm_log(path, name)
            read_rank_log(path, name)


def test_slurm_output_patterns_expand_like_slurm():
    from pimm_inspect.load.slurm_paths import _expand

    assert _expand("/repo/slurm_logs/slurm-%j.out", "4242", "run") == "/repo/slurm_logs/slurm-4242.out"
    assert _expand("slurm_logs/%j_%n_%x_%a.txt", "4242", "semseg") == "slurm_logs/4242_*_semseg_*.txt"  # E0
    assert _expand("logs/%x-%A.out", "4242", None) == "logs/*-4242.out"
    assert _expand("100%%-%j.out", "7", None) == "100%-7.out"
