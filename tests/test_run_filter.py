"""The runs filter (``analysis.run_filter``): one implementation below the front ends, evaluated on the row."""

from __future__ import annotations

import shutil
from pathlib import Path

import pimm_inspect
from pimm_inspect.analysis.run_filter import compile_run_filter, row_text
from pimm_inspect.analysis.summary import run_row
from pimm_inspect.session import Session

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def test_cfg_filter_matches_an_e0_run_by_its_train_log_config_dump():
    """An E0 run's only config is train.log's ``Config:`` dump: the filter must see it (issue 22, N6)."""
    row = run_row(pimm_inspect.load_run(RUNS / "e0_legacy"))
    assert compile_run_filter("cfg.batch_size = 4")("", row)
    assert compile_run_filter("cfg.batch_size >= 3")("", row)
    assert not compile_run_filter("cfg.batch_size > 4")("", row)
    assert compile_run_filter("!cfg.batch_size = 8")("", row)
    assert not compile_run_filter("cfg.batch_size = 4")("", None)  # no row yet: never a config match


def test_the_cached_row_filters_as_the_fresh_one():
    """The UI's table filters the session's cached rows: a row read back from the disk cache keeps its config."""
    session = Session()
    fresh = session.row(RUNS / "e2_rollback")
    cached = Session().stored_rows([RUNS / "e2_rollback"])[RUNS / "e2_rollback"]
    assert cached == fresh and cached.config
    key, value = next((k, v) for k, v in cached.config if isinstance(v, (int, float)) and not isinstance(v, bool))
    assert compile_run_filter(f"cfg.{key} = {value}")("", cached)


def test_text_filter_searches_codes_status_and_ids():
    row = run_row(pimm_inspect.load_run(RUNS / "e2_rollback"))
    text = row_text("e2_rollback", row)
    assert row.status in text and all(f.code in text for f in row.findings)
    assert compile_run_filter(row.findings[0].code)(text, row)



SECRET = "deadbeefdeadbeefdeadbeefdeadbeefdeadbeef"
"""The W&B key fixtures/runs/e2_secret_in_config's files hold (its config and launch command)."""
OTHER = "feedface0123feedface0123feedface01234567"


def test_cfg_filter_never_matches_a_secret_value(tmp_path: Path):
    """A filter cannot probe a secret: it sees the masked document (``analysis.secrets``), fresh or cached. The
    same run holding another key answers every probe alike (on the unmasked document ``< e`` would tell them apart)."""
    path = RUNS / "e2_secret_in_config"
    raw = next(doc.data for doc in pimm_inspect.load_run(path).configs if doc.kind == "resolved_config")
    assert raw["wandb_api_key"] == SECRET  # the file does hold it
    other = tmp_path / "e2_other_key"
    shutil.copytree(path, other)
    for name in ("config.py", "resolved_config.json", "run_metadata.json", "launch.sbatch", "train.log"):
        file = other / name
        file.write_bytes(file.read_bytes().replace(SECRET.encode(), OTHER.encode()))
    rows = [run_row(pimm_inspect.load_run(path)), Session().stored_rows([path]).get(path) or Session().row(path),
            Session().row(other)]
    probes = [f"cfg.wandb_api_key = {SECRET}", f"cfg.wandb_api_key == '{SECRET}'", f"cfg.wandb_api_key = {OTHER}",
              "cfg.wandb_api_key ~ dead", "cfg.launch_command ~ deadbeef", f"!cfg.wandb_api_key != {SECRET}",
              *(f"cfg.wandb_api_key {op} {c}" for op in ("<", ">", "<=", ">=") for c in "0123456789abcdef"),
              *(f"cfg.launch_command {op} WANDB_API_KEY={c}" for op in ("<", ">") for c in "0123456789abcdef")]
    for row in rows:
        assert dict(row.config)["wandb_api_key"] == "****"
        assert not any(key in str(value) for _key, value in row.config for key in (SECRET, OTHER))
        for probe in probes[:6]:
            assert not compile_run_filter(probe)("", row), probe
        assert compile_run_filter("cfg.wandb_api_key = ****")("", row)  # only the mask, the same for any key
    answers = [[compile_run_filter(probe)("", row) for probe in probes] for row in rows]
    assert answers[0] == answers[1] == answers[2]
