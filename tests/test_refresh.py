"""A live run refreshed through a ReadCache reads only appended bytes and equals a full read."""

import shutil
from pathlib import Path

import numpy as np

from pimm_inspect.load import load_run
from pimm_inspect.session.store.cache import ReadCache

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def _grow_copy(tmp_path: Path) -> tuple[Path, bytes, bytes, Path, bytes]:
    """A copy of e2_rollback whose train.log and second event file are cut at half, plus the cut-off tails."""
    run = tmp_path / "live"
    shutil.copytree(RUNS / "e2_rollback", run, symlinks=True)
    log = run / "train.log"
    data = log.read_bytes()
    cut = data.index(b"\n", len(data) * 2 // 3) + 1
    log.write_bytes(data[:cut])
    events = sorted(run.glob("events.out.tfevents.*"))[-1]
    ev = events.read_bytes()
    events.write_bytes(ev[: len(ev) // 2 + 7])  # inside a record: a half-written tail
    return log, data[cut:], ev[len(ev) // 2 + 7:], events, ev


def _summary(run):
    return ([(a.index, a.first_step, a.last_step, a.origin, a.ended) for a in run.attempts],
            sorted((s.tag, s.source, s.attempt, len(s), float(np.nansum(s.values))) for s in run.series),
            sorted(f.code for f in run.findings))


def test_incremental_refresh_equals_full_read(tmp_path):
    log, log_tail, ev_tail, events, _ = _grow_copy(tmp_path)
    cache = ReadCache()
    partial = load_run(log.parent, cache=cache)
    assert "file.truncated" in {f.code for f in partial.findings}
    with open(log, "ab") as fh:
        fh.write(log_tail)
    with open(events, "ab") as fh:
        fh.write(ev_tail)
    refreshed = load_run(log.parent, cache=cache)
    assert cache.incremental_reads == 2
    full = load_run(log.parent)
    assert _summary(refreshed) == _summary(full)
    assert [a.last_step for a in refreshed.attempts] == [75, 100]


def test_unchanged_files_are_not_read_again(tmp_path, monkeypatch):
    cache = ReadCache()
    load_run(RUNS / "e2_clean", cache=cache)
    import pimm_inspect.sources.tensorboard.reader as tb

    def fail(*args, **kwargs):
        raise AssertionError("re-read an unchanged file")

    monkeypatch.setattr(tb, "read_event_file", fail)
    again = load_run(RUNS / "e2_clean", cache=cache)
    assert again.status == "finished"


def _wandb_view(result):
    return (result.run_id, result.exit_code, result.status, list(result.history_steps),
            sorted((s.tag, len(s), float(np.nansum(s.values)), float(np.nansum(s.steps))) for s in result.series),
            [(line.stream, line.text) for line in result.console], result.console_line_count,
            sorted(f.code for f in result.findings), dict(result.config), dict(result.summary))


def test_growing_wandb_log_is_decoded_from_where_it_stopped(tmp_path, monkeypatch):
    """A live run's .wandb grows in three steps; each refresh decodes only the appended records."""
    import pimm_inspect.sources.wandb._batches as batches
    import pimm_inspect.sources.wandb._bulk as bulk
    from pimm_inspect.sources.wandb.reader import read_wandb_run

    source = next((RUNS / "wandb_clean" / "wandb").glob("offline-run-*"))
    folder = tmp_path / source.name
    shutil.copytree(source, folder)
    log = next(folder.glob("run-*.wandb"))
    data = log.read_bytes()
    starts = []
    real = batches.frame_batches

    def spy(fh, state, start=0):
        starts.append(start)
        return real(fh, state, start)

    monkeypatch.setattr(bulk, "frame_batches", spy)
    cache = ReadCache()
    results = []
    for cut in (len(data) * 3 // 10, len(data) * 6 // 10, len(data)):
        log.write_bytes(data[:cut])
        results.append(cache.wandb_run(folder, "wandb/run").value)
    first, middle, final = results
    assert "file.truncated" in {f.code for f in first.findings} and first.exit_code is None
    assert 0 < first.end_offset < middle.end_offset < final.end_offset == len(data)
    assert starts == [0, first.end_offset, middle.end_offset]  # each refresh began at the previous record end
    assert cache.incremental_reads == 2
    assert final.log_state is None  # the exit record is in: nothing more will be appended
    assert _wandb_view(final) == _wandb_view(read_wandb_run(folder, "wandb/run"))
    assert len(first.history_steps) < len(middle.history_steps) < len(final.history_steps)
