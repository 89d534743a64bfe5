"""Every file kind's reader follows ``sources.protocol``: ``read(path, rel_path) -> Read[T]``, never raising."""

from __future__ import annotations

from pathlib import Path

import pytest

from pimm_inspect.load.kinds import KINDS
from pimm_inspect.sources.protocol import Read, run_root

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "runs"
FOLDER_KINDS = {"checkpoint", "wandb", "hf_trainer"}
"""Kinds whose reader takes a folder (``model/``, a W&B run folder, an HF output dir)."""
GARBAGE = b"\x00\xff\xfe garbage \x80\x81 {\"unterminated\": [1, 2,\n" * 50



@pytest.mark.parametrize("kind", KINDS, ids=[f"{i}-{k.source_kind}" for i, k in enumerate(KINDS)])
@pytest.mark.parametrize("content", ["garbage", "empty", "missing"])
def test_reader_returns_a_read_naming_its_file_on_bad_input(kind, content: str, tmp_path: Path) -> None:
    reader = kind.reader()
    target = tmp_path / "run" / ("thing" if kind.source_kind in FOLDER_KINDS else "thing.file")
    target.parent.mkdir()
    if content != "missing":
        if kind.source_kind in FOLDER_KINDS:
            target.mkdir()
            if content == "garbage":
                for name in ("last", "run-x.wandb", "trainer_state.json", "model_best.pth", "last.ckpt"):
                    (target / name).write_bytes(GARBAGE)
        else:
            target.write_bytes(GARBAGE if content == "garbage" else b"")
    result = reader(target, "thing" if kind.source_kind in FOLDER_KINDS else "thing.file")
    assert isinstance(result, Read)
    for finding in result.findings:  # every finding names the file it is about, within what was read
        assert finding.paths and all(p.startswith("thing") for p in finding.paths), finding
    if content == "garbage" and kind.source_kind not in FOLDER_KINDS and target.is_file():
        assert 0 <= result.bytes_read <= target.stat().st_size
    if content == "garbage":
        assert result.findings, f"{kind.source_kind}: garbage read without a finding saying so"


def test_resumable_readers_report_where_they_stopped() -> None:
    """train.log and event files: ``bytes_read`` is the offset a refresh continues from (the whole file here)."""
    from pimm_inspect.sources import tensorboard, train_log

    run = FIXTURES / "e2_rollback"
    log = train_log.read(run / "train.log", "train.log")
    assert log.value is not None and log.bytes_read == (run / "train.log").stat().st_size
    event = next(run.glob("events.out.tfevents.*"))
    events = tensorboard.read(event, event.name)
    assert events.value is not None and events.bytes_read == event.stat().st_size and events.value.series


def test_run_root_undoes_rel_path(tmp_path: Path) -> None:
    assert run_root(tmp_path / "model", "model") == tmp_path
    assert run_root(tmp_path / "wandb" / "run-1", "wandb/run-1") == tmp_path
    assert run_root(tmp_path, ".") == tmp_path


def test_every_file_kind_is_read_somewhere_in_the_fixtures() -> None:
    """The table is not dead code: each kind's source kind appears among the sources of some fixture run."""
    from pimm_inspect.load.assemble import load_run
    from pimm_inspect.load.discover import iter_runs

    seen: set[str] = set()
    for root in iter_runs(FIXTURES):
        seen |= {s.kind for s in load_run(root).sources}
    assert {k.source_kind for k in KINDS} <= seen, {k.source_kind for k in KINDS} - seen


@pytest.mark.parametrize("family", ["train_log", "tensorboard", "checkpoint", "wandb"])
def test_the_cached_path_reads_through_the_protocol_reader(family: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a read cache handed in, a file is still read by its kind's ``read`` (never a side door), once."""
    import importlib

    from pimm_inspect.load.assemble import load_run
    from pimm_inspect.session.store.cache import ReadCache

    module = importlib.import_module(f"pimm_inspect.sources.{family}")
    real = module.read
    calls: list[str] = []

    def spy(path: Path, rel_path: str) -> Read:
        calls.append(rel_path)
        return real(path, rel_path)

    monkeypatch.setattr(module, "read", spy)
    run = FIXTURES / ("wandb_clean" if family == "wandb" else "e2_rollback")
    cache = ReadCache()
    first = load_run(run, cache=cache)
    assert calls, f"{family}: read without its protocol reader"
    seen = len(calls)
    again = load_run(run, cache=cache)
    assert len(calls) == seen  # unchanged files come from the cache
    assert sorted(s.tag for s in again.series) == sorted(s.tag for s in first.series)
    load_run(run)  # no cache: the same reader
    assert len(calls) == 2 * seen
