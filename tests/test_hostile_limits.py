"""Issue 14, "bombs past the caps": deep values and JSON documents that are small on disk but huge once parsed.

Each case runs the CLI in a fresh process under a hard address-space limit and asserts its peak resident
memory (500 MB) and wall time, plus the finding that names the file. Inputs: tests/data/hostile/depth
(W&B config values nested 500 and 600 deep); the 63 MiB JSON is generated at test time.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.hostile_support import HOSTILE, RUNS, run_cli, wandb_folder

MAX_RSS_MB = 500
MAX_SECONDS = 60


def _deep_wandb_run(tmp_path: Path, depth: int) -> Path:
    run = tmp_path / f"deep{depth}"
    value = (HOSTILE / "depth" / f"value_{depth}.json").read_text()
    wandb_folder(run / "wandb", "deep0001", {"deep": value, "lr": 0.001})
    return run


@pytest.mark.parametrize("depth", [500, 600])
@pytest.mark.parametrize("args", [["config"], ["config", "--json"], ["config", "--flat"], ["show", "--json"],
                                  ["check", "--json", "--fail-on", "never"]], ids=" ".join)
def test_deep_wandb_config_value_is_cut_with_a_finding(tmp_path, depth, args):
    run = _deep_wandb_run(tmp_path, depth)
    outcome = run_cli(*args, str(run), timeout=MAX_SECONDS)
    assert outcome.returncode in (0, 1), outcome.stderr[-2000:]
    assert "RecursionError" not in outcome.stderr and "Traceback" not in outcome.stderr
    assert outcome.max_rss_mb < MAX_RSS_MB, outcome.max_rss_mb
    if args[0] == "config":
        assert "nested deeper than 50 levels" in outcome.stdout, outcome.stdout[-500:]
        assert "deepSECRET" not in outcome.stdout  # the part below the cap is not read at all
    if args[0] == "check":
        findings = json.loads(outcome.stdout)["runs"][0]["findings"]
        limit = [f for f in findings if f["code"] == "file.over-limit"]
        assert limit and limit[0]["paths"] == ["wandb/offline-run-20260101_000000-deep0001/run-deep0001.wandb"]
        assert "nested deeper than 50 levels at deep.a.a" in limit[0]["message"]


def test_deep_config_in_the_ui_loads_and_renders(tmp_path):
    """The UI's Config tab on the 600-deep value: it renders and returns (it used to spin at 100% CPU)."""
    pytest.importorskip("textual")
    import asyncio
    import time

    from textual.widgets import Tree

    from tests.tui_support import opened

    run = _deep_wandb_run(tmp_path, 600)

    async def scenario() -> str:
        async with opened(run, (120, 36), tab="3") as (app, pilot):
            tree = app.screen.query_one("#config-tree", Tree)
            tree.root.expand_all()
            await pilot.pause()
            labels, stack = [], [tree.root]
            while stack:
                node = stack.pop()
                labels.append(str(node.label))
                stack += list(node.children)
            return "\n".join(labels)

    start = time.monotonic()
    labels = asyncio.run(scenario())
    assert time.monotonic() - start < MAX_SECONDS
    assert "nested deeper than 50 levels" in labels


def _write_bomb(path: Path, mib: int = 63) -> None:
    """A JSON array of empty lists, ``mib`` MiB on disk: ~22 million Python lists once parsed."""
    with open(path, "w") as fh:
        fh.write('{"model": [')
        chunk = "[]," * (1024 * 1024 // 3)
        for _ in range(mib):
            fh.write(chunk)
        fh.write("[]]}")


@pytest.mark.parametrize("args", [["show", "--json"], ["check", "--json", "--fail-on", "never"], ["config", "--json"]],
                         ids=" ".join)
def test_63_mib_resolved_config_is_refused_by_value_count(tmp_path, args):
    run = tmp_path / "bomb"
    shutil.copytree(RUNS / "e2_clean", run, symlinks=True)
    _write_bomb(run / "resolved_config.json")
    assert 60 * 2**20 < (run / "resolved_config.json").stat().st_size < 64 * 2**20  # under the byte cap
    outcome = run_cli(*args, str(run), timeout=MAX_SECONDS)
    assert outcome.returncode in (0, 1), outcome.stderr[-2000:]
    assert outcome.max_rss_mb < MAX_RSS_MB, outcome.max_rss_mb
    assert outcome.seconds < MAX_SECONDS
    if args[0] == "check":
        findings = json.loads(outcome.stdout)["runs"][0]["findings"]
        limit = [f for f in findings if f["code"] == "file.over-limit"]
        assert [f["paths"] for f in limit] == [["resolved_config.json"]]
        assert "more than the 1,000,000 read; not parsed" in limit[0]["message"]


def test_json_limits_unit():
    from pimm_inspect.sources._limits import DEPTH_CUT, cap_depth, estimate_json_values, parse_json_bounded

    assert estimate_json_values('[1,2,{"x":[3]}]') == 7 == 1 + 2 + 1 + 1 + 1 + 1
    value, code, reason = parse_json_bounded("[" * 100_000)
    assert value is None and code == "file.over-limit" and "nested deeper" in reason
    value, code, _ = parse_json_bounded('{"a": 1, "b": [2, 3]}')
    assert value == {"a": 1, "b": [2, 3]} and code is None
    deep = cur = []
    for _ in range(10_000):
        cur.append([])
        cur = cur[0]
    cur.append("x")
    cut, paths = cap_depth(deep, 3)
    assert cut == [[[DEPTH_CUT]]] and paths == ["[0][0][0]"]
    shallow = {"a": [1, {"b": 2}]}
    assert cap_depth(shallow)[0] is shallow  # nothing copied when nothing is too deep
    # A separator-heavy string inside a small document does not count against it.
    text = json.dumps({"s": "," * 2_000_000})
    assert estimate_json_values(text) == 3 and parse_json_bounded(text)[1] is None
    # An unterminated string of escaped quotes stays linear (the estimate drops escapes first).
    assert estimate_json_values('"' + '\\"' * 600_000 + ",:" * 600_000) > 1_000_000


def test_huge_sparse_slurm_log_is_streamed(tmp_path):
    """A 2 GiB sparse Slurm log (one endless line of NULs after a marker) beside a run: scanned to the cap in
    bounded memory, cut long line and cap both reported; the marker before the long line still counts."""
    run = tmp_path / "slurm_bomb"
    shutil.copytree(RUNS / "e2_clean", run, symlinks=True)
    log = run / "slurm-4242.out"
    with open(log, "wb") as fh:
        fh.write(b"pimm submitit attempt 1/2: semseg\n")
        fh.truncate(2 * 1024**3)
    outcome = run_cli("check", "--json", "--fail-on", "never", str(run), timeout=MAX_SECONDS)
    assert outcome.returncode == 0, outcome.stderr[-2000:]
    assert outcome.max_rss_mb < MAX_RSS_MB, outcome.max_rss_mb
    messages = [f["message"] for f in json.loads(outcome.stdout)["runs"][0]["findings"]
                if f["paths"] == ["slurm-4242.out"]]
    assert "slurm-4242.out is larger than 256 MiB; only the start was read" in messages
    assert "slurm-4242.out: 1 line(s) longer than 1024 KiB cut there" in messages


def test_slurm_reader_is_the_same_in_any_chunking(tmp_path, monkeypatch):
    """Markers, requeues and problem lines are found the same whether a chunk ends mid-file or not at all."""
    from pimm_inspect.sources.slurm import slurm_log as slurm

    text = ("srun: setup\npimm submitit attempt 1/3: x\nCUDA out of memory here\n"
            "Requeueing pimm submitit attempt 2/3\n*** JOB 7 ON n1 CANCELLED AT 2026-01-01T00:00:00 DUE TO TIME LIMIT ***\n"
            "pimm submitit attempt 2/3: x\nERROR: NCCL error: unhandled\npimm submitit attempt 3/3: x\ndone")
    path = tmp_path / "slurm-7.out"
    path.write_text(text)
    results = []
    for chunk in (4 * 1024 * 1024, 16, 5):
        monkeypatch.setattr(slurm, "CHUNK_BYTES", chunk)
        got = slurm.read_slurm_log(path, "slurm-7.out")
        log, findings = got.value, got.findings
        assert findings == ()
        results.append(log)
    assert results[0] == results[1] == results[2]
    log = results[0]
    assert log.attempts == ((1, 3, False), (2, 3, True), (2, 3, False), (3, 3, False))
    assert [(s.k, s.requeued, [k for k, _ in s.problems]) for s in log.segments] == [
        (None, False, []), (1, True, ["time-limit", "cancelled", "oom"]), (2, False, ["nccl", "pimm-error"]), (3, False, [])]
    assert dict(log.problems)["time-limit"].startswith("*** JOB 7")


def test_hostile_config_py_is_masked_in_bounded_time(tmp_path):
    """16 MiB of ``password: '`` (a secret-shaped assignment every 11 bytes) as config.py: only 4 MiB is read,
    and masking it for check and for config stays within the time ceiling."""
    run = tmp_path / "cfg"
    shutil.copytree(RUNS / "e2_clean", run, symlinks=True)
    (run / "config.py").write_text("password: '" * (16 * 2**20 // 11))
    for args in (["check", "--json", "--fail-on", "never"], ["config", "--kind", "config_py"]):
        outcome = run_cli(*args, str(run), timeout=MAX_SECONDS)
        assert outcome.returncode in (0, 1), outcome.stderr[-2000:]
        assert outcome.max_rss_mb < MAX_RSS_MB and outcome.seconds < MAX_SECONDS, outcome
        if args[0] == "check":
            messages = {f["message"] for f in json.loads(outcome.stdout)["runs"][0]["findings"]}
            assert "config.py is larger than 4 MiB; only the start was read" in messages
        else:
            assert outcome.stdout.startswith("password: '****'")
