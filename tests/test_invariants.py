"""Cross-view invariants on every fixture run: the surfaces agree, and every claim follows from the files.

The surfaces are read through the real CLI (``show``/``ls``/``check --json`` over the whole fixtures tree, then
``export --policy all --format json`` with and without ``--all-sources``, ``config --json`` and ``url --json`` per
run), the API (``pimm_inspect.load_run``) and the runs table's row functions, and, on at most 10 runs, through the UI
(a Textual pilot: the Overview and the Log tab). The rules are in
``tests/invariants_support.py`` (``INVARIANTS`` says what each asserts); ``bench/realworld_invariants.py`` runs the
same rules over a corpus of public runs kept outside the repository.

A case that fails today because of a defect issue 19 lists (another branch fixes it), or a new defect these
invariants found and reported, is in ``KNOWN``: its test is a strict xfail, so it turns into a failure
(XPASS(strict)) the moment the fix lands; then remove it from ``KNOWN``. Every other case must hold.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import pimm_inspect
from tests.invariants_support import INVARIANTS, Check, Surfaces, check_run, gather
from tests.invariants_ui import check_ui, ui_facts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RUN_DIRS = pimm_inspect.discover(FIXTURES)
"""Every run ``discover`` finds under fixtures/ (runs/, tb_shapes/, wandb_shapes/, checkpoints/)."""

KNOWN: dict[tuple[str, str], str] = {
}
"""(invariant, run relative to fixtures/) -> the defect that makes it fail on main today: an issue-19 item another
helper is fixing, or a new defect these invariants found (reported; marked so the suite stays green until it is
routed)."""


def _rel(path: Path) -> str:
    return path.relative_to(FIXTURES).as_posix()


UI_RUNS = ("runs/e2_rollback", "runs/e1_legacy_cursor", "runs/rw_e0_epoch_skip", "runs/rw_pimm_tester_config",
           "runs/e2_tb_gap", "runs/hf_resumed", "runs/wandb_resumed_offline", "runs/rw_tb_restart/runs/baseline")
"""Runs through the UI: several attempts from train.log (rollback, E1 then E2, epoch skip, a tester's config line,
lost log tail), HF, W&B and a TensorBoard restart."""


def _no_config_line_log(run_dir: Path) -> bool:
    """A train.log with Train: lines and no ``=> Loading config`` (Pointcept-style starts): the shape where the Log
    tab and the Overview disagreed."""
    log = run_dir / "train.log"
    if not log.is_file() or log.stat().st_size > 4 << 20:
        return False
    text = log.read_bytes()
    return b"Train:" in text and b"=> Loading config" not in text


UI_PICKED = [*UI_RUNS, *sorted(_rel(d) for d in RUN_DIRS if _rel(d) not in UI_RUNS and _no_config_line_log(d))][:10]
"""At most 10: the list above, then any fixture whose train.log starts attempts without a config line."""


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of fixtures/ whose files were all written just now. Whether a run may still be running depends on how
    long ago its newest file changed (``load.assemble.LIVE_WINDOW_S``): on the checkout itself a run such as
    e3a_running turns from running to stopped 15 minutes after the clone, and a test whose surfaces were read on
    either side of that moment saw them disagree. On the copy every surface reads the same side."""
    copy = tmp_path_factory.mktemp("invariants") / "fixtures"
    shutil.copytree(FIXTURES, copy, symlinks=True, copy_function=shutil.copyfile)
    return copy


@pytest.fixture(scope="module")
def surfaces(tree: Path) -> dict[str, Surfaces]:
    return {s.rel: s for s in gather(tree, [tree / _rel(d) for d in RUN_DIRS])}


@pytest.fixture(scope="module")
def checks(surfaces: dict[str, Surfaces]) -> dict[str, list[Check]]:
    return {rel: check_run(s) for rel, s in surfaces.items()}


def _report(failed: list[Check]) -> str:
    return "\n".join(f"{c.invariant} on {c.run}: {c.detail}" for c in failed)


@pytest.mark.parametrize("run", [_rel(p) for p in RUN_DIRS])
def test_surfaces_agree_and_claims_follow_from_files(run: str, checks: dict[str, list[Check]]) -> None:
    """Every invariant that applies to the run holds, except the known issue-19 cases (tested one by one below)."""
    assert run in checks, f"{run} was not gathered"
    failed = [c for c in checks[run] if not c.ok and (c.invariant, run) not in KNOWN]
    assert not failed, _report(failed)


@pytest.mark.parametrize("invariant,run", [
    pytest.param(invariant, run, marks=pytest.mark.xfail(strict=True, reason=reason), id=f"{invariant}-{run}")
    for (invariant, run), reason in KNOWN.items()])
def test_known_issue_19_case(invariant: str, run: str, checks: dict[str, list[Check]]) -> None:
    """The case holds (or no longer applies) once its issue-19 fix is merged: then drop it from KNOWN."""
    failed = [c for c in checks[run] if c.invariant == invariant and not c.ok]
    assert not failed, _report(failed)


def test_every_fixture_run_is_gathered_and_every_invariant_is_exercised(surfaces: dict[str, Surfaces],
                                                                        checks: dict[str, list[Check]]) -> None:
    """No run is missing from a surface, and each invariant applies to some fixture (so none is vacuous here)."""
    assert len(surfaces) == len(RUN_DIRS) >= 70
    assert all(s.show and s.ls and s.check for s in surfaces.values())
    applied = {c.invariant for run_checks in checks.values() for c in run_checks}
    assert set(INVARIANTS) <= applied, sorted(set(INVARIANTS) - applied)
    assert all(run in surfaces for _invariant, run in KNOWN)


def test_a_contradiction_is_caught(surfaces: dict[str, Surfaces]) -> None:
    """The rules fail on surfaces that disagree: a show document whose attempt is both saved and lost at step 8,
    and an ls row with one attempt fewer."""
    import copy

    s = copy.copy(surfaces["runs/e2_rollback"])
    s.show = copy.deepcopy(s.show)
    s.ls = dict(s.ls, attempts=s.ls["attempts"] - 1)
    s.show["attempts"][0]["saved_steps"] = [60]
    failed = {c.invariant for c in check_run(s) if not c.ok}
    assert {"attempts.agree", "saved.not-lost"} <= failed


def test_a_lost_step_a_complete_checkpoint_keeps_is_caught(surfaces: dict[str, Surfaces]) -> None:
    """model_best.pth.prev at step 80 of e2_requeued_twice is attempt 3's: an attempt 3 that lost 51-100 (or never
    saved 80) contradicts it."""
    import copy

    s = copy.copy(surfaces["runs/e2_requeued_twice"])
    assert {c.invariant: c.ok for c in check_run(s)}["checkpoint.kept"]
    s.show = copy.deepcopy(s.show)
    s.show["attempts"][2]["lost_steps"] = [51, 100]
    assert "checkpoint.kept" in {c.invariant for c in check_run(s) if not c.ok}
    s.show["attempts"][2].update(lost_steps=None, saved_steps=[100])
    assert "checkpoint.kept" in {c.invariant for c in check_run(s) if not c.ok}


@pytest.mark.asyncio
@pytest.mark.parametrize("run", [r for r in UI_PICKED if (FIXTURES / r).is_dir()])
async def test_ui_overview_and_log_tab_agree_with_show(run: str, surfaces: dict[str, Surfaces]) -> None:
    """Overview attempts = show --json attempts; the Log tab's attempt starts = the model's attempts that start in
    train.log (every attempt read from train.log has one)."""
    from tests.tui_support import fixed_loader

    s = surfaces[run]
    ui = await ui_facts(s.root, fixed_loader)
    failed = [c for c in check_ui(s, ui) if not c.ok and (c.invariant, run) not in KNOWN]
    assert not failed, _report(failed)


def test_known_cases_are_real_runs_and_invariants() -> None:
    assert {invariant for invariant, _run in KNOWN} <= set(INVARIANTS)
    assert all((FIXTURES / run).is_dir() for _invariant, run in KNOWN)


@pytest.mark.asyncio
async def test_ui_runs_table_rows_agree_with_ls(surfaces: dict[str, Surfaces], tree: Path) -> None:
    """The runs table on fixtures/runs (the real app and loader, the clock ls uses) shows each run's status, attempts
    and last step as ls --json gives them."""
    from tests.tui_support import settle
    from pimm_inspect.tui.app import make_app
    from pimm_inspect.tui.widgets.runs_table import RunsTable

    root = tree / "runs"
    app = make_app(root, follow_interval_s=0)
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RunsTable)
        shown = [c.key for c in table.columns_shown()]
        differ, compared = [], 0
        for rel, s in surfaces.items():
            if not rel.startswith("runs/"):
                continue
            compared += 1
            key = s.root.as_posix()
            assert key in table.runs, f"{rel} is not a loaded row of the runs table"
            cells = dict(zip(shown, (str(c) for c in table.cells(key))))
            want = {"status": s.ls["status"], "att": str(s.ls["attempts"]),
                    "step": "-" if s.ls["last_step"] is None else str(s.ls["last_step"])}
            got = {k: cells.get(k) for k in want}
            if got != want:
                differ.append(f"{rel}: table {got}, ls {want}")
        assert not differ, "\n".join(differ)
        assert compared >= 50

