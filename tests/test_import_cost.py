"""Start-up contracts: `show --json` and `ls --json` import only what they use (issue 10's targets are whole
processes, so every module imported on the way counts), and the helpers that keep numpy.ma out agree with numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pimm_inspect import arrays
from pimm_inspect.arrays import median, median_gap, unique_sorted
from tests.import_probe import all_modules_after, cli_code

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
NEVER = {"textual", "rich", "plotext", "textual_plotext", "pandas", "pyarrow", "duckdb", "wandb", "torch"}
"""Libraries a JSON command on a run without a W&B folder never needs (the UI, tables, plots, exports)."""
DEFERRED = {
    "numpy.ma": "plain np.unique and np.median of floats import it (~40 ms): pimm_inspect.arrays avoids both",
    "crc32c": "imported at the first record of 256 bytes or more (importing it reads package metadata)",
    "pimm_inspect.sources.wandb.links": "W&B link rules (and configparser), for runs with a W&B folder or run id",
    "pimm_inspect.report.text": "the Rich renderings, for output without --json",
    "pimm_inspect.cli.cmd_export": "another command's module", "pimm_inspect.cli.cmd_curves": "another command's module",
    "pimm_inspect.cli.cmd_config": "another command's module", "pimm_inspect.cli.cmd_ui": "another command's module",
}


@pytest.mark.parametrize("cache", ["cold", "warm"])
@pytest.mark.parametrize("command", ["show", "ls"])
def test_json_commands_import_only_what_they_use(command: str, cache: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # e2_clean: train.log, an event file of scalars (records under 256 bytes), checkpoints, sbatch, configs.
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    code = cli_code(command, "--json", str(FIXTURES / "e2_clean"))
    if cache == "warm":
        all_modules_after(code)  # the first process fills the cache; the one below reads it
    loaded = all_modules_after(code)
    assert f"pimm_inspect.cli.cmd_{command}" in loaded  # the probe ran the real command
    if command == "show" and cache == "warm":
        # The run's document comes from the cache: nothing that loads, analyses or decodes series is imported.
        assert "pimm_inspect.session.store.doc_cache" in loaded
        served = {"numpy", "pimm_inspect.analysis", "pimm_inspect.load.assemble", "pimm_inspect.report.json_doc",
                  "pimm_inspect.session.store.cache", "pimm_inspect.session.staged", "pimm_inspect.model"}
        assert not served & loaded, sorted(served & loaded)
    else:
        assert "numpy" in loaded
    tops = {name.split(".")[0] for name in loaded}
    assert not tops & NEVER, sorted(tops & NEVER)
    wrongly = {name: why for name, why in DEFERRED.items() if name in loaded}
    assert not wrongly, wrongly


def test_help_still_lists_every_command_and_runs_each() -> None:
    from click.testing import CliRunner

    from pimm_inspect.cli.main import _COMMANDS, cli

    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    listed = result.output.split("Commands:\n", 1)[1]
    assert [line.split()[0] for line in listed.splitlines() if line.strip()] == sorted(_COMMANDS)
    for name in _COMMANDS:
        sub = CliRunner().invoke(cli, [name, "--help"])
        assert sub.exit_code == 0 and f"Usage: cli {name} " in sub.output, (name, sub.output)


def test_crc32c_package_is_looked_up_on_first_long_record() -> None:
    code = ("from pimm_inspect.sources.tensorboard import _tfrecord\n"
            "import sys\n"
            "assert 'crc32c' not in sys.modules\n"
            "short = _tfrecord.crc32c(bytes(range(200)))\n"
            "assert 'crc32c' not in sys.modules\n"
            "long = _tfrecord.crc32c(bytes(1000))\n"
            "import crc32c\n"
            "assert _tfrecord._native_crc32c is crc32c.crc32c and long == crc32c.crc32c(bytes(1000))\n"
            "assert short == crc32c.crc32c(bytes(range(200)))\n")
    pytest.importorskip("crc32c")
    assert "crc32c" in all_modules_after(code)


_FLOATS = hnp.arrays(np.float64, st.integers(1, 40), elements=st.floats(allow_nan=True, allow_infinity=True,
                                                                      width=64) | st.sampled_from([0.0, -0.0, 1.0]))
_INTS = hnp.arrays(np.int64, st.integers(1, 40), elements=st.integers(-5, 5))


@settings(max_examples=300, deadline=None)
@given(st.one_of(_FLOATS, _INTS, hnp.arrays(np.float32, st.integers(1, 9), elements=st.floats(width=32)),
                 _INTS.map(np.sort), _INTS.map(lambda a: np.concatenate([np.sort(a), np.sort(a)]))))
def test_helpers_equal_numpy_bit_for_bit(values: np.ndarray) -> None:
    with np.errstate(all="ignore"):
        expected_median, got_median = np.median(values), median(values)
    assert type(got_median) is type(expected_median)
    assert np.asarray(got_median).tobytes() == np.asarray(expected_median).tobytes()
    scratch = values.copy()  # partitioned in place: the same middle values, so the same bits
    with np.errstate(all="ignore"):
        in_place = median(scratch, overwrite=True)
    assert type(in_place) is type(expected_median)
    assert np.asarray(in_place).tobytes() == np.asarray(expected_median).tobytes()
    expected, got = np.unique(values), unique_sorted(values)
    # Equal values, NaNs as one (which of 0.0 and -0.0 stands for both may differ: they compare equal).
    assert got.dtype == expected.dtype and np.array_equal(got, expected, equal_nan=True)


def test_helpers_on_empty_arrays_match_numpy() -> None:
    assert unique_sorted(np.zeros(0, dtype=np.int64)).dtype == np.int64
    assert unique_sorted(np.zeros(0)).shape == (0,)
    with pytest.warns(RuntimeWarning):
        assert np.isnan(median(np.zeros(0)))


@settings(max_examples=200, deadline=None)
@given(st.one_of(hnp.arrays(np.int64, st.integers(2, 60), elements=st.integers(-2**62, 2**62)),
                 hnp.arrays(np.int64, st.integers(2, 60), elements=st.integers(-300, 300)).map(np.sort),
                 hnp.arrays(np.uint32, st.integers(2, 60), elements=st.integers(0, 2**32 - 1)),
                 hnp.arrays(np.int16, st.integers(2, 60))))
def test_median_gap_equals_numpy_bit_for_bit(values: np.ndarray) -> None:
    expected = np.median(np.diff(values))
    for slice_size in (arrays._GAP_SLICE, 7):  # the differences found slice by slice, across slice edges too
        arrays._GAP_SLICE = slice_size
        try:
            got = median_gap(values)
        finally:
            arrays._GAP_SLICE = 1 << 20
        assert type(got) is type(expected) and np.asarray(got).tobytes() == np.asarray(expected).tobytes()
