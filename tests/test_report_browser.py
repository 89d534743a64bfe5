"""The HTML report opened in a real browser (Debian's Chromium driven by Playwright): what a reader sees.

Each report is written to a file and opened from disk, as someone who was sent it would: no console error, no
network request, the series, attempts, replayed bands and findings drawn are the run's, hostile strings are
text and nothing of theirs runs, and the page fits 1280x800 and a phone's width. Screenshots are saved under
tests/output/report/ (git-ignored) for a person to look at.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from test_report import HOSTILE_TAGS, RUNS, hostile_run, load

from pimm_inspect.report.audit.document import build_report
from pimm_inspect.report.audit.html import render_html
from pimm_inspect.report.safe_text import clean

CHROMIUM = Path(os.environ.get("PIMM_INSPECT_CHROMIUM", "/usr/bin/chromium"))
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
OUTPUT = Path(__file__).resolve().parent / "output" / "report"
SIZES = {"desktop": (1280, 800), "phone": (390, 844)}
FIXTURES = ["e2_rollback", "e2_requeued_twice",
            "hf_resumed", "wandb_resumed_offline", "wandb_online"]

playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the test extra)")
if not CHROMIUM.exists():
    pytest.skip(f"no Chromium at {CHROMIUM}: `apt-get install -y chromium` (Debian) runs the report's browser tests",
                allow_module_level=True)


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as play:
        launched = play.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        launched.close()


class Opened:
    """A report open in a page, with what the page logged and requested."""

    def __init__(self, browser, path: Path, size: tuple[int, int], scripts: bool = True) -> None:
        self.context = browser.new_context(viewport={"width": size[0], "height": size[1]}, java_script_enabled=scripts)
        self.page = self.context.new_page()
        self.console: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.url = path.as_uri()
        self.page.goto(self.url)
        self.page.wait_for_load_state("load")

    def count(self, selector: str) -> int:
        return int(self.page.locator(selector).count())

    def texts(self, selector: str) -> list[str]:
        return [str(t) for t in self.page.locator(selector).all_text_contents()]

    def fits(self) -> bool:
        return bool(self.page.evaluate("document.documentElement.scrollWidth <= window.innerWidth && "
                                       "document.body.scrollWidth <= window.innerWidth"))

    def close(self) -> None:
        self.context.close()


def _write(name: str, run_dir: Path, tmp_path: Path):
    run = load(run_dir)
    report = build_report(iter([run]), run_dir, 1)
    path = tmp_path / f"{name}.html"
    path.write_text(render_html(report), encoding="utf-8")
    return run, report.runs[0], path


def _shoot(opened: Opened, name: str) -> None:
    OUTPUT.mkdir(parents=True, exist_ok=True)
    opened.page.screenshot(path=str(OUTPUT / f"{name}.png"), full_page=False)


@pytest.mark.parametrize("fixture", FIXTURES)
def test_report_of_a_fixture_in_the_browser(browser, fixture: str, tmp_path: Path) -> None:
    run, facts, path = _write(fixture, RUNS / fixture, tmp_path)
    opened = Opened(browser, path, SIZES["desktop"])
    try:
        assert opened.console == [], opened.console
        assert opened.requests == [opened.url], opened.requests
        drawn = sum(1 for group in facts.charts for chart in group.charts for line in chart.lines if line.x.size)
        assert opened.count("svg.chart path.series") == drawn
        assert drawn >= len(run.attempts) > 0 or not run.series
        assert opened.count("table.attempts tr.attempt") == len(run.attempts)
        assert opened.count("svg.timeline rect.logged") == sum(a.first_step is not None for a in run.attempts)
        bands = {(int(b.get_attribute("data-first")), int(b.get_attribute("data-last")))
                 for b in opened.page.locator("svg.chart rect.band").all()}
        assert bands == {(r.first_step, r.last_step) for r in run.replayed}
        assert opened.texts(".replayed li b") == [f"{r.first_step}-{r.last_step}" for r in run.replayed]
        assert opened.texts(".finding .message") == [f.message for f in facts.findings]
        assert opened.texts(".finding code.code") == [f.code for f in facts.findings]
        if run.wandb.url:
            assert opened.page.locator("a.wandb").get_attribute("href") == run.wandb.url
        if run.wandb.sync_command and not run.wandb.url:
            assert opened.texts("pre.sync") == [run.wandb.sync_command]
        assert opened.fits()
        _shoot(opened, f"{fixture}-desktop")
        if drawn:
            chart = opened.page.locator("svg.chart").first
            chart.scroll_into_view_if_needed()
            box = chart.bounding_box()
            chart.hover(position={"x": box["width"] * 0.6, "y": box["height"] * 0.5})
            assert opened.texts("figure .readout")[0].startswith("step ≈ ")
            assert opened.console == [], opened.console
    finally:
        opened.close()
    phone = Opened(browser, path, SIZES["phone"])
    try:
        assert phone.fits(), "the body scrolls sideways at a phone's width"
        _shoot(phone, f"{fixture}-phone")
    finally:
        phone.close()


def test_rollback_replayed_band_is_drawn_where_the_copies_are(browser, tmp_path: Path) -> None:
    run, facts, path = _write("rollback", RUNS / "e2_rollback", tmp_path)
    opened = Opened(browser, path, SIZES["desktop"])
    try:
        firsts = {b.get_attribute("data-first") + "-" + b.get_attribute("data-last")
                  for b in opened.page.locator("svg.chart rect.band").all()}
        assert firsts == {"51-75"}
    finally:
        opened.close()


def test_hostile_run_shows_its_strings_as_text_and_runs_nothing(browser, tmp_path: Path) -> None:
    run_dir = hostile_run(tmp_path / "runs")
    run, facts, path = _write("hostile", run_dir, tmp_path)
    for scripts in (True, False):
        opened = Opened(browser, path, SIZES["desktop"], scripts=scripts)
        try:
            assert opened.console == [] and opened.requests == [opened.url], (opened.console, opened.requests)
            assert opened.page.evaluate("typeof window.__pwned") == "undefined"
            assert opened.count("img") == 0 and opened.count("script") == 1
            assert set(opened.texts("figcaption code")) == {clean(tag, newlines=False) for tag in HOSTILE_TAGS}
            assert opened.page.locator("h1 span").text_content() == run_dir.name
            assert opened.count("svg.chart path.series") == len(HOSTILE_TAGS)
            assert "****" in opened.page.content()
            if scripts:
                _shoot(opened, "hostile-desktop")
        finally:
            opened.close()


def test_tree_report_links_and_overlays_in_the_browser(browser, tmp_path: Path) -> None:
    names = ("e2_rollback", "e2_clean", "hf_resumed")
    for name in names:
        shutil.copytree(RUNS / name, tmp_path / "tree" / name)
    runs = [load(tmp_path / "tree" / name) for name in sorted(names)]
    report = build_report(iter(runs), tmp_path / "tree", len(runs), tags=("train/loss", "train_loss", "loss"))
    path = tmp_path / "tree.html"
    path.write_text(render_html(report), encoding="utf-8")
    opened = Opened(browser, path, SIZES["desktop"])
    try:
        assert opened.console == [] and opened.requests == [opened.url]
        assert opened.texts("table.summary a") == sorted(names)
        opened.page.locator("table.summary a").nth(2).click()
        assert opened.page.evaluate("location.hash") == "#run-3"
        assert opened.count("figure.overlay") == len(report.overlays) >= 1
        assert opened.count("section.run") == 3 and opened.fits()
        _shoot(opened, "tree-desktop")
    finally:
        opened.close()


def test_hover_readout_names_the_lines_under_the_cursor(browser, tmp_path: Path) -> None:
    """Hovering a chart reads the values back from the drawing: only the attempts drawn at that step."""
    _run, _facts, path = _write("hover", RUNS / "e2_rollback", tmp_path)
    opened = Opened(browser, path, SIZES["desktop"])
    try:
        figure = opened.page.locator("figure", has_text="train_batch/loss")
        chart = figure.locator("svg.chart")
        chart.scroll_into_view_if_needed()
        data = chart.evaluate("s => [s.dataset.x0, s.dataset.x1, s.dataset.left, s.dataset.pw, s.viewBox.baseVal.width]")
        x0, x1, left, plot_width, view_width = (float(v) for v in data)
        box = chart.bounding_box()
        readouts = []
        for step in (20, 90):
            x = (left + (step - x0) / (x1 - x0) * plot_width) * box["width"] / view_width
            chart.hover(position={"x": x, "y": box["height"] / 2})
            readouts.append(figure.locator(".readout").text_content())
        assert readouts[0].startswith("step ≈ 20: attempt 1 ≈ ") and "attempt 2" not in readouts[0]
        assert readouts[1].startswith("step ≈ 90: attempt 2 ≈ ") and "attempt 1" not in readouts[1]
        assert opened.console == []
    finally:
        opened.close()
