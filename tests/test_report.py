"""``pimm-inspect report``: the HTML and Markdown audit files, their escaping, masking, redaction and bounds."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from pimm_inspect.analysis import analyze
from pimm_inspect.cli.main import cli
from pimm_inspect.load.safe import load_safely
from pimm_inspect.model import Attempt, Run, make_series
from pimm_inspect.report.audit.charts import PLOT_COLUMNS, chart_for
from pimm_inspect.report.audit.document import build_report
from pimm_inspect.report.audit.html import render_html
from pimm_inspect.report.audit.markdown import code, render_markdown, sparkline
from pimm_inspect.report.audit.redact import Redactor
from pimm_inspect.report.audit.svg import chart_svg, nice_ticks, path_data
from pimm_inspect.report.safe_text import clean

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "fixtures" / "runs"
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
HOSTILE_TAGS = ("<img src=x onerror=\"window.__pwned=1\">", "<script>window.__pwned=2</script>",
                "![x](http://tracker.example/p.png)", "@team ping", "a|b|c", "``tick`` and `one`",
                "[click](javascript:alert(1))", "x&amp;y", "train/\u200bloss\x1b[31m")
"""Tag names a hostile writer could choose: markup, script, Markdown image/link, mention, pipe, backticks."""
HOSTILE_NAME = "<img src=y onerror=window.__pwned=4> & co"


def write_events(folder: Path, points: dict[str, list[tuple[int, float]]]) -> None:
    """Scalar events through TensorBoard's own writer (the real bytes a SummaryWriter writes)."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(folder))
    for tag, pairs in points.items():
        for step, value in pairs:
            summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)])
            writer.add_event(event_pb2.Event(wall_time=1.8e9 + step, step=step, summary=summary))
    writer.close()


def hostile_run(parent: Path) -> Path:
    """A run whose folder name, tag names and config hold markup, Markdown and a secret."""
    run = parent / HOSTILE_NAME
    run.mkdir(parents=True)
    write_events(run, {tag: [(s, float(s % 7) + i) for s in range(1, 40)] for i, tag in enumerate(HOSTILE_TAGS)})
    (run / "resolved_config.json").write_text(json.dumps({
        "github_token": SECRET, "note": "<script>window.__pwned=3</script>", "lr": 0.1}))
    return run


def load(path: Path) -> Run:
    return analyze(load_safely(path))


def report_of(paths: list[Path], **options) -> tuple[object, list[Run]]:
    runs = [load(p) for p in paths]
    base = paths[0] if len(paths) == 1 else paths[0].parent
    return build_report(iter(runs), base, len(runs), **options), runs


def run_cli(*args: str):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def _inline(page: str, element: str) -> str:
    (body,) = re.findall(rf"<{element}>(.*?)</{element}>", page, flags=re.S)
    return body


def _sha(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_html_shows_hostile_strings_as_text_masks_secrets_and_allows_only_its_own_script(tmp_path: Path) -> None:
    report, _ = report_of([hostile_run(tmp_path)])
    page = render_html(report)
    for tag in HOSTILE_TAGS:
        shown = clean(tag, newlines=False)  # invisible and control characters as visible escapes, as everywhere
        escaped = shown.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&#34;")
        assert escaped in page, tag
    assert "train/\\u200bloss\\x1b[31m" in page and "\u200b" not in page and "\x1b" not in page
    assert "<img" not in page and page.count("<script>") == 1 and "__pwned=3</script>" not in page
    assert "&lt;img src=y onerror=window.__pwned=4&gt; &amp; co" in page
    assert SECRET not in page and "****" in page
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page).group(1)
    policy = dict(part.strip().split(" ", 1) for part in csp.split(";"))
    assert policy["default-src"] == "'none'" and policy["connect-src"] == "'none'" and policy["img-src"] == "'none'"
    assert policy["script-src"] == _sha(_inline(page, "script"))
    assert policy["style-src"] == _sha(_inline(page, "style"))
    assert policy["form-action"] == "'none'" and policy["base-uri"] == "'none'"
    assert not re.search(r"\sstyle=", page), "a style attribute would be blocked by the policy"
    assert not re.search(r"(?:src|href)=\"(?:https?:)?//", page), "nothing may be fetched"


def test_markdown_puts_every_run_string_in_code_and_makes_no_link(tmp_path: Path) -> None:
    from markdown_it import MarkdownIt

    report, _ = report_of([hostile_run(tmp_path)])
    text = render_markdown(report)
    assert SECRET not in text and "****" in text
    html = MarkdownIt("commonmark").enable("table").render(text)
    assert "<img" not in html and "<a " not in html and "<script" not in html and "<b>" not in html
    outside = re.sub(r"<code>.*?</code>|<pre>.*?</pre>", "", html, flags=re.S)
    for needle in ("tracker", "@team", "onerror", "javascript", "__pwned"):
        assert needle not in outside, needle
    for table in re.findall(r"<table>.*?</table>", html, flags=re.S):
        widths = {row.count("<td") + row.count("<th") for row in re.findall(r"<tr>.*?</tr>", table, flags=re.S)}
        assert len(widths) == 1, widths  # no `|` of a run string split a cell
    assert "<code>a|b|c</code>" in html and "<code>``tick`` and `one`</code>" in html


@pytest.mark.parametrize("text, span", [("plain", "`plain`"), ("a`b", "``a`b``"), ("`x", "`` `x ``"),
                                        ("", "-"), ("two\nlines", "`two\\nlines`")])
def test_code_span_holds_its_text(text: str, span: str) -> None:
    assert code(text) == span


def test_code_span_in_a_table_escapes_the_pipe() -> None:
    assert code("a|b", table=True) == "`a\\|b`"


def test_rollback_report_has_every_section() -> None:
    report, (run,) = report_of([RUNS / "e2_rollback"])
    page = render_html(report)
    facts = report.runs[0]
    assert [a.index for a in facts.attempts] == [1, 2] and facts.attempts[0].lost == (51, 75)
    assert page.count('class="logged"') == 2 and page.count('class="lost"') == 1
    assert 'data-step="50"' in page  # the checkpoint saved at step 50 and attempt 2's restore point
    series = sum(len(line.x) > 0 for group in facts.charts for chart in group.charts for line in chart.lines)
    assert page.count('class="series"') == series == 2 * 14
    assert page.count('class="seam"') == 14  # one resume seam per chart, at attempt 2's first step
    assert [f.code for f in facts.findings] == [f.code for f in sorted(run.findings, key=lambda f: -f.severity)]
    assert "rolled back 25 steps" in page and "save more often" in page
    assert "model/last" in page and "run_metadata.json" in page and "train.log (log_config)" in page
    assert "Config: attempt 1 vs attempt 2" in page
    targets = re.findall(r'href="#([^"]+)"', page)
    assert len(targets) == 7 and all(f'id="{t}"' in page for t in targets)  # the section links land
    ids = re.findall(r'\sid="([^"]+)"', page)
    assert len(ids) == len(set(ids))


def test_replayed_ranges_are_shaded_with_their_copy_counts() -> None:
    """Run.replayed (set by analysis) is drawn as it is: a band per range on each chart and on the timeline."""
    report, (run,) = report_of([RUNS / "e2_requeued_twice"])
    assert [(r.first_step, r.last_step, r.copies, r.attempts) for r in run.replayed] == [
        (51, 75, 3, (1, 2, 3)), (76, 90, 2, (2, 3))]
    page = render_html(report)
    charts = sum(len(group.charts) for group in report.runs[0].charts)
    assert charts >= 10
    assert page.count('class="band" data-first="51" data-last="75" data-copies="3"') == charts
    assert page.count('class="band" data-first="76" data-last="90" data-copies="2"') == charts
    assert page.count('class="tl-band"') == 2 and page.count('class="seam" data-step="51"') == charts
    assert "<b>51-75</b>: 3 copies (#1 #2 #3)" in page and "<b>76-90</b>: 2 copies (#2 #3)" in page
    assert "Steps written more than once: 51-75: 3 copies (#1 #2 #3); 76-90: 2 copies (#2 #3)" in page
    text = render_markdown(report)
    assert "replayed **51-75**: 3 copies (attempts 1, 2, 3)" in text and "replayed 76-90 ×2" in text
    assert not re.search(r"#\d", re.sub(r"```.*?```|`[^`]*`", "", text, flags=re.S)), "GitHub links #N to issue N"


def test_checkpoints_say_which_attempts_restarted_from_them() -> None:
    report, _ = report_of([RUNS / "e2_requeued_twice"])
    (last,) = [ck for ck in report.runs[0].checkpoints if ck.path == "model/model_last.pth"]
    assert last.restored_by == ((2, 50), (3, 50))
    cell = "attempt 2 (step 50), attempt 3 (step 50)"
    assert f'<td class="restored-by">{cell}</td>' in render_html(report)
    assert f"| {cell} |" in render_markdown(report)


def test_redact_removes_hosts_account_paths_and_users() -> None:
    report, (run,) = report_of([RUNS / "e2_rollback"], redact=True)
    page, text = render_html(report), render_markdown(report)
    for leak in ("sdfampere012", "neutrino:ml-dev", "/sdf/", str(RUNS)):
        assert leak not in page and leak not in text, leak
    assert "&lt;host&gt;" in page and "events.out.tfevents.1784212209.&lt;host&gt;" in page
    assert "<dd>pimm E2</dd>" in page and "| launch command | `pimm submit configs/" in text  # `/user/pimm/` is no home
    plain, _ = report_of([RUNS / "e2_rollback"])
    assert "sdfampere012" in render_html(plain)  # the same report unredacted names the host


def test_redactor_rules() -> None:
    run = Run(root=Path("/data/home/a/alice/exp/run1"), kind="pimm", era=None, status="finished",
              run_metadata={"user": "alice", "host": "gpu-node-17.cluster.org", "cwd": "/home/alice/code",
                            "save_path": "exp/run1"})
    redact = Redactor.for_run(run)
    assert redact("pushed by alice@lab.org to git@github.com:lab/secret-repo.git") == "pushed by <email> to <git remote>"
    assert redact("https://gitlab.lab.org/team/repo.git cloned") == "<git remote> cloned"
    assert redact("on gpu-node-17.cluster.org (gpu-node-17)") == "on <host> (<host>)"
    assert redact("cwd=/home/alice/code/exp/run1/model/last") == "cwd=model/last"
    assert redact("log in /data/home/a/alice/exp/run1/train.log") == "log in train.log"
    assert redact("python /opt/envs/bin/python -u") == "python <path>/python -u"
    assert redact("user alice ran train/loss 1/2 at https://wandb.ai/x/y") == "user <user> ran train/loss 1/2 at https://wandb.ai/x/y"


def test_chart_keeps_min_max_per_column_and_exact_ends() -> None:
    """A 1M-point line is drawn from at most two points per pixel column plus its ends; spikes survive."""
    steps = np.arange(1_000_000, dtype=np.int64)
    values = np.sin(steps / 5000.0)
    values[123_457] = 50.0
    values[777_777] = -50.0
    run = Run(root=Path("/r"), kind="tensorboard", era=None, status="finished",
              attempts=(Attempt(1, first_step=0, last_step=599_999), Attempt(2, first_step=500_000, last_step=999_999)),
              series=(make_series("loss", steps[:600_000], values[:600_000], None, "a", 1),
                      make_series("loss", steps[500_000:], values[500_000:], None, "b", 2)))
    chart = chart_for(run, "loss", "all", "loss")
    first, second = chart.lines
    assert first.x[0] == 0 and first.x[-1] == 599_999 and second.x[0] == 500_000 and second.x[-1] == 999_999
    assert len(first.x) <= 2 * PLOT_COLUMNS * 0.6 + 4 and len(second.x) <= 2 * PLOT_COLUMNS * 0.5 + 4
    assert first.y.max() == 50.0 and second.y.min() == -50.0
    assert chart.seams == ((500_000, 2),)
    svg = chart_svg(chart, "c1")
    assert svg.count('class="series"') == 2 and len(svg) < 60_000


def test_path_data_breaks_at_non_finite_values() -> None:
    d = path_data(np.array([0.0, 1.0, 2.0, 3.0]), np.array([1.0, np.nan, 2.0, 3.0]))
    assert d == "M0 1M2 2L3 3"
    assert path_data(np.array([0.0]), np.array([np.nan])) == ""


def test_nice_ticks_cover_the_range() -> None:
    assert nice_ticks(0, 100, 5) == [0, 20, 40, 60, 80, 100]
    assert nice_ticks(0.37, 0.41, 4) == pytest.approx([0.37, 0.38, 0.39, 0.4, 0.41])
    assert nice_ticks(5, 5) == [5]
    assert nice_ticks(4.5, 20.5, 6, integer=True) == [5, 10, 15, 20]
    assert nice_ticks(0, 3, 6, integer=True) == [0, 1, 2, 3]


def test_sparkline_places_attempts_on_a_shared_axis() -> None:
    line = sparkline(np.array([50.0, 75.0, 100.0]), np.array([0.0, 0.5, 1.0]), (0.0, 100.0), (0.0, 1.0), 10)
    assert line == "     ▁ ▅ █"


def test_cli_writes_html_md_and_stdout(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = run_cli("report", RUNS / "e2_rollback", "-o", out)
    assert result.exit_code == 0 and out.read_text().startswith("<!DOCTYPE html>")
    assert "wrote" in result.stderr and result.stdout == ""
    result = run_cli("report", RUNS / "e2_rollback", "-o", tmp_path / "r.md")
    assert (tmp_path / "r.md").read_text().startswith("# Training run audit: `e2_rollback`")
    result = run_cli("report", RUNS / "e2_rollback", "-o", "-", "--format", "md")
    assert result.exit_code == 0 and result.stdout.startswith("# Training run audit")


def test_cli_never_writes_inside_a_run(tmp_path: Path) -> None:
    run = hostile_run(tmp_path)
    before = sorted(p.name for p in run.iterdir())
    result = run_cli("report", run, "-o", run / "report.html")
    assert result.exit_code == 2 and "inside the run" in result.stderr
    assert sorted(p.name for p in run.iterdir()) == before


def test_tree_report_has_a_summary_linking_each_run_and_overlays(tmp_path: Path) -> None:
    import shutil

    for name in ("e2_rollback", "e2_clean", "e2_crashed"):
        shutil.copytree(RUNS / name, tmp_path / "tree" / name)
    out = tmp_path / "tree.html"
    result = run_cli("report", tmp_path / "tree", "-o", out, "--tag", "train/loss")
    page = out.read_text()
    assert result.exit_code == 0
    anchors = re.findall(r'<tr><td><a href="#(run-\d+)">([^<]+)</a>', page)
    assert [label for _, label in anchors] == ["e2_clean", "e2_crashed", "e2_rollback"]
    for anchor, _ in anchors:
        assert f'<section class="run" id="{anchor}">' in page
    overlay = re.search(r'<figure class="overlay">.*?</figure>', page, flags=re.S).group(0)
    assert overlay.count('class="series"') == 3 and "<code>train/loss</code>" in overlay
    md = run_cli("report", tmp_path / "tree", "-o", "-", "--format", "md", "--tag", "train/loss").stdout
    assert "## Summary: 3 runs" in md and "### `train/loss` across runs" in md


def test_report_is_documented_with_its_screenshot() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "pimm-inspect report RUN... -o FILE" in readme and "](docs/report.png)" in readme
    shot = ROOT / "docs" / "report.png"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size < 200_000
    assert "Example:" in run_cli("report", "--help").stdout


def test_every_fixture_run_gets_a_report() -> None:
    """Each committed fixture: the page and the Markdown are written, every attempt is drawn and listed, every
    line drawn is a series of the page, and each finding's message is shown."""
    for run_dir in sorted(p for p in RUNS.iterdir() if p.is_dir()):
        report, (run,) = report_of([run_dir])
        page, text = render_html(report), render_markdown(report)
        facts = report.runs[0]
        drawn = sum(1 for group in facts.charts for chart in group.charts for line in chart.lines if line.x.size)
        assert page.count('class="series"') == drawn, run_dir.name
        assert page.count('<tr class="attempt">') == len(run.attempts), run_dir.name
        assert page.count('class="finding ') == len(run.findings) == text.count("\n**" ), run_dir.name
        assert len(page.encode()) < 2_000_000 and text.startswith("# Training run audit"), run_dir.name


def test_many_attempts_are_all_listed_and_the_timeline_stays_bounded() -> None:
    attempts = tuple(Attempt(i, first_step=10 * i, last_step=10 * i + 9) for i in range(1, 61))
    series = tuple(make_series("loss", np.arange(10 * i, 10 * i + 10), np.ones(10) * i, None, f"f{i}", i)
                   for i in range(1, 61))
    run = Run(root=Path("/r/many"), kind="tensorboard", era=None, status="finished", attempts=attempts, series=series)
    page = render_html(build_report(iter([run, run]), Path("/r"), 2))
    assert page.count('class="logged"') == 2 * 40 and page.count('<tr class="attempt">') == 2 * 60
    assert "draws the first 40 of 60 attempts" in page
    ids = re.findall(r'<pattern id="([^"]+)"', page)
    assert len(ids) == len(set(ids)) > 0, "pattern ids must be unique in the page"


def test_tree_report_holds_one_run_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tree of many big runs is reported run by run: only display facts and downsampled overlays are kept."""
    import tracemalloc

    import pimm_inspect.analysis
    import pimm_inspect.session.rows
    import pimm_inspect.session.staged  # these two bind their own loader and analysis: imported before the patches
    from pimm_inspect.load import safe

    for i in range(40):
        (tmp_path / f"run{i:02d}").mkdir()
        (tmp_path / f"run{i:02d}" / "train.log").write_text("")

    def big_run(path: Path, cache: object = None, now: object = None, progress: object = None) -> Run:
        steps = np.arange(1_000_000)  # 24 MB of steps, values and wall times per run
        return Run(root=Path(path).absolute(), kind="pimm", era="E2", status="finished", name=Path(path).name,
                   attempts=(Attempt(1, first_step=0, last_step=999_999, ended="completed"),),
                   series=(make_series("loss", steps, steps * 0.5, steps * 1.0, "train.log", 1),))

    monkeypatch.setattr(safe, "load_safely", big_run)
    monkeypatch.setattr(pimm_inspect.analysis, "analyze", lambda run: run)  # memory, not check speed, is under test
    tracemalloc.start()
    try:
        result = run_cli("report", tmp_path, "-o", tmp_path / "tree.html", "--tag", "loss")
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    page = (tmp_path / "tree.html").read_text()
    assert result.exit_code == 0 and page.count('<section class="run"') == 40
    assert page.count('class="series"') == 24  # the overlay's first 24 runs; no per-run curves in a 40-run tree
    assert peak < 200 * 1024 * 1024, f"peak {peak / 2**20:.0f} MiB: runs were kept in memory (all: ~960 MiB)"


def test_attempts_resuming_at_one_step_share_a_seam_and_stack_their_labels() -> None:
    steps = np.arange(1, 101)
    run = Run(root=Path("/r"), kind="pimm", era="E2", status="finished",
              attempts=(Attempt(1, first_step=1, last_step=75), Attempt(2, first_step=51, last_step=90),
                        Attempt(3, first_step=51, last_step=100)),
              series=(make_series("loss", steps[:75], np.ones(75), None, "a", 1),
                      make_series("loss", steps[50:90], np.ones(40), None, "b", 2),
                      make_series("loss", steps[50:], np.ones(50), None, "c", 3)))
    svg = chart_svg(chart_for(run, "loss", "all", "loss"), "c")
    assert svg.count('class="seam"') == 1 and "resume #2 #3</text>" in svg
    labels = re.findall(r'<text x="[\d.]+" y="([\d.]+)" class="mark"[^>]*>(#\d)</text>', svg)
    y = {tag: float(top) for top, tag in labels}
    assert y["#3"] == y["#2"] - 13  # the same start point: #3's label above #2's
