"""Cross-view invariants: what every surface says about a run must agree, and every claim must follow from evidence.

Shared by ``tests/test_invariants.py`` (every fixture run) and ``bench/realworld_invariants.py`` (a corpus of public
runs kept outside the repository). ``gather(root)`` reads the surfaces of every run under ``root`` once, through the
real CLI (click's CliRunner, ``--json``) and the Python API; ``check_run(surfaces)`` returns one ``Check`` per
invariant that applies to the run, each failed one carrying the evidence (``gather`` and the surfaces live in
``tests/invariants_surfaces.py``). UI surfaces (the Overview and the Log tab through a Textual pilot) are in
``tests/invariants_ui.py`` because they need an event loop.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from pimm_inspect.model import Run
from tests.invariants_surfaces import Check, Surfaces, gather, invoke

__all__ = ["INVARIANTS", "Check", "Surfaces", "check_run", "gather", "invoke"]

FILTER_KEY = re.compile(r"[\w.\-\[\]]+")
"""Keys the ``cfg.<key>`` filter syntax accepts (README: ``cfg.optimizer.lr>0.001``)."""

NOT_USED = "not used by this run"
NOT_THERE = re.compile(r"not (used by this run|here)\b")
"""What a W&B view may say without a W&B folder: not used, or not here (the run names a W&B run, no folder of it)."""
DROPS = re.compile(r"\bdrop(s|ped)?\b", re.IGNORECASE)
"""A W&B view saying W&B dropped steps: backed only by the steps a W&B folder recorded as dropped."""
HEDGED = re.compile(r"\bmay\b", re.IGNORECASE)
FIGURE = re.compile(r"differ by up to (?P<x>[-+0-9.eE]+) in (?P<tag>[^\s(]+?)[.,;]?(\s|$)")
"""The replay check's figure in a steps.replayed explanation (the tag it comes from, and the largest difference)."""
KINDS = ("tb_events", "wandb", "hf_trainer", "train_log")
"""Source kinds whose copies a replay check compares (each within its own kind)."""
PROGRESS = re.compile(r"(^|/)(epoch|learning_rate|lr|global_step|step)$|^(time|params)/")
"""Progress and schedule tags (epoch, learning rate, step counters, timings): not what a replay check compares."""
"""What a view says of W&B when the run has no W&B folder (the Overview's words too)."""

INVARIANTS: dict[str, str] = {
    "attempts.agree": "show --json, ls --json and the runs-table row give the same number of attempts",
    "row.agree": "ls --json, show --json and the runs-table row give the same last step, status and W&B ids",
    "attempts.order": "attempts are numbered 1..n in the order of their UTC start times",
    "status.ended": "a finished / crashed / running run's last attempt ended completed / crashed / running, and a run "
                    "whose last attempt completed is finished",
    "lost.evidence": "lost steps only with checkpoint evidence (a checkpoint, or a restore point)",
    "url.agree": "url --json gives the W&B link fields show --json gives",
    "restore.checkpoint": "an attempt whose log names the checkpoint it resumed from carries that checkpoint "
                          "(Attempt.restored_checkpoint), as a path of the run (or, when the run holds no checkpoint "
                          "of that name, as the log names it)",
    "replay.figure": "a replay's 'copies differ by up to X in TAG' is X recomputed from the copies of TAG, and TAG has "
                     "the most steps written twice in the range (per-step tags before epoch means and summaries)",
    "hf.trainings": "trainer_state.json files with different max_steps / batch size (two trainings in one output dir) "
                    "give as many attempts, or a finding that names max_steps",
    "saved.not-lost": "no step is both in an attempt's saved_steps and inside its lost_steps",
    "checkpoint.kept": "a step kept by a complete checkpoint is never lost: it is in the saved_steps of the attempt "
                       "that wrote the checkpoint (saved_by_attempt) and outside that attempt's lost_steps",
    "lost.trained": "an attempt's lost_steps lie inside the steps it trained (restore point + 1 to its last step)",
    "export.attempts": "every attempt an export row names exists",
    "candidate.not-lost": "the picked checkpoint's (resume_candidate) step is not lost by the newest attempt that "
                          "trained it",
    "finding.steps": "every finding's steps lie inside the run's logged step range",
    "finding.attempts": "every attempt a finding names exists, and for a replay holds a point in the replayed steps",
    "replayed.ranges": "Run.replayed covers every steps.replayed range, each range's attempts wrote points in it",
    "wandb.view": "a W&B view claims W&B facts only when the run has W&B folders ('not used by this run' or 'not "
                  "here' otherwise), "
                  "and says W&B dropped steps only when a folder recorded dropped steps",
    "points.export": "show --json point counts per tag = rows of export --policy all --format json",
    "export.every-record": "export --policy all --all-sources writes every record as read (rows per tag and file = "
                           "the points the API's series hold)",
    "findings.agree": "check --json findings per severity = show --json and ls --json findings counts",
    "cfg.filter": "the cfg. filter of the runs table sees the document config RUN --json prints",
    "finding.paths": "every path a finding names exists (inside the run, or absolute outside it)",
    "checkpoint.one-finding": "a checkpoint folder is named by at most one checkpoint.incomplete finding (what is "
                              "missing and what a resume does without it, in one place)",
    "wandb.origin": "a W&B attempt is 'fresh' only when its folder's records say the server continued nothing, and "
                    "is never a folder a second wandb.init left inside a live process",
    "sources.paths": "every file the model says it read (Run.sources, each series' source) exists as given: relative "
                     "to the run root, or absolute",
}
"""Invariant id -> what it asserts (the ids are the test ids and the bench's counts)."""


def _show_last_step(show: dict[str, Any]) -> int | None:
    """The last step ``show --json`` implies: its attempts' last steps, else its tags' (the summary's rule)."""
    steps = [a["last_step"] for a in show.get("attempts", []) if a["last_step"] is not None]
    if steps:
        return max(steps)
    steps = [t["last_step"] for t in show.get("scalars", {}).values() if t["last_step"] is not None]
    return max(steps) if steps else None


def _inside(step: int, span: list[int] | tuple[int, int] | None) -> bool:
    return bool(span) and span[0] <= step <= span[1]  # type: ignore[index]


def _trained(attempt: dict[str, Any]) -> tuple[int, int] | None:
    """The steps a ``show --json`` attempt trained: from its restore point + 1 (else its first step) to its last."""
    if attempt["last_step"] is None:
        return None
    first = attempt["resume_step"] + 1 if attempt["resume_step"] is not None else attempt["first_step"]
    return (min(first, attempt["last_step"]) if first is not None else attempt["last_step"], attempt["last_step"])


def _logged_range(run: Run) -> tuple[int, int] | None:
    """Smallest and largest step any series of the run holds (every source), any attempt spans, a rank's
    structured log reached or a checkpoint was saved at (``checkpoint-1400`` is evidence of step 1400)."""
    steps = [s for series in run.series if len(series) for s in (series.first_step, series.last_step)]
    steps += [s for a in run.attempts for s in (a.first_step, a.last_step) if s is not None]
    steps += [log.last_step for log in run.rank_logs if log.last_step is not None]
    steps += [ck.global_step for ck in run.checkpoints if ck.global_step is not None]
    steps = [s for s in steps if s is not None]
    return (min(steps), max(steps)) if steps else None


def _copies(run: Run, tag: str, first: int, last: int, attempts: set[int],
            kind: str | None = None) -> dict[int, list[float]]:
    """Step -> the values the given attempts wrote for ``tag`` (first value per attempt) in sources of ``kind`` (every
    kind when None), where two or more did."""
    per: dict[int, dict[int, float]] = {}
    for series in run.series:
        if series.tag != tag or series.attempt not in attempts or (kind is not None and series.source_kind != kind):
            continue
        inside = (series.steps >= first) & (series.steps <= last)
        for step, value in zip(series.steps[inside].tolist(), series.values[inside].tolist()):
            per.setdefault(step, {}).setdefault(series.attempt, value)
    return {step: list(values.values()) for step, values in per.items() if len(values) > 1}


def _figure(text: str, run: Run) -> dict[str, str] | None:
    """The replay check's figure: ``{"x": largest difference, "tag": the tag it names}`` (the longest of the run's tags
    the text names there, as tags may hold spaces), or None when the explanation gives none."""
    match = FIGURE.search(text)
    if match is None:
        return None
    rest = text[match.start("tag"):]
    tags = [t for t in run.tags() if rest.startswith(t)]
    return {"x": match["x"], "tag": max(tags, key=len) if tags else match["tag"]}


def _hf_trainings(root: Path) -> dict[str, list[str]]:
    """(max_steps, train_batch_size) of each ``trainer_state.json`` of an HF output dir (read with ``json``, the
    writer's own format) -> the files that say it."""
    out: dict[str, list[str]] = {}
    for path in sorted([root / "trainer_state.json", *root.glob("checkpoint-*/trainer_state.json")]):
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict):
            key = f"{doc.get('max_steps')}, {doc.get('train_batch_size')}"
            out.setdefault(key, []).append(path.relative_to(root).as_posix())
    return out


def _attempt_points(run: Run, first: int, last: int) -> set[int]:
    """Attempts that hold a point in steps ``first``..``last`` (any tag, any source)."""
    out: set[int] = set()
    for series in run.series:
        if series.attempt is None or series.attempt in out or not len(series):
            continue
        if ((series.steps >= first) & (series.steps <= last)).any():
            out.add(series.attempt)
    return out


def _wandb_folders(run: Run) -> list[str]:
    """The run's W&B folders, as the model holds them (each ``WandbRunFacts.path``) and the sources read."""
    return sorted({w.path for w in run.wandb_runs} | {s.path for s in run.sources if s.kind == "wandb"})


def _flat(doc: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _flat(value, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, doc


def config_probes(config: dict[str, Any], limit: int = 6) -> list[tuple[str, Any]]:
    """Leaves of the printed config document a ``cfg.`` filter can name and compare exactly: numbers and plain
    words (no masked value, no key with characters the filter's key syntax refuses), spread over the document."""
    leaves = []
    for key, value in _flat(config.get("config")):
        if not key or isinstance(value, bool) or FILTER_KEY.fullmatch(key) is None:
            continue
        if isinstance(value, (int, float)) and value == value and abs(value) < 1e15:
            leaves.append((key, value))
        elif isinstance(value, str) and value.replace("_", "").replace("-", "").isalnum() and "*" not in value:
            leaves.append((key, value))
    if len(leaves) <= limit:
        return leaves
    stride = len(leaves) / limit
    return [leaves[int(i * stride)] for i in range(limit)]



Add = Callable[[str, bool, str], None]
"""Records one checked invariant: (id, held, evidence when it did not)."""


def check_run(s: Surfaces) -> list[Check]:
    """Every invariant that applies to the run, checked."""
    out: list[Check] = []

    def add(invariant: str, ok: bool, detail: str = "") -> None:
        out.append(Check(invariant, s.rel, bool(ok), "" if ok else detail))

    for error in s.errors:
        add("surfaces", False, error)
    for group in (_rows, _attempts, _restores, _findings, _replays, _wandb_views, _exports, _config, _paths,
                  _sources):
        group(s, add)
    return out


def _rows(s: Surfaces, add: Add) -> None:
    """Attempts, last step, status and W&B ids on every surface that lists runs."""
    from pimm_inspect.analysis.summary import run_row  # the row ls prints and the runs table shows
    from pimm_inspect.tui.facts import last_step as ui_last_step

    run, show, ls = s.run, s.show, s.ls
    row = run_row(run)
    ui_row = {"attempts": row.attempts, "status": row.status, "last_step": ui_last_step(row)}

    if show and ls:
        counts = {"show": len(show["attempts"]), "ls": ls["attempts"], "ui row": ui_row["attempts"],
                  "API": len(run.attempts)}
        add("attempts.agree", len(set(counts.values())) == 1, f"attempts: {counts}")
        last = {"show": _show_last_step(show), "ls": ls["last_step"], "ui row": ui_row["last_step"]}
        status = {"show": show["status"], "ls": ls["status"], "ui row": ui_row["status"]}
        ids = {"show": tuple(show["wandb"]["run_ids"]), "ls": tuple(ls["wandb_run_ids"]),
               "ui row": tuple(row.wandb_run_ids)}
        agree = all(len(set(values.values())) == 1 for values in (last, status, ids))
        add("row.agree", agree, f"last step: {last}; status: {status}; W&B ids: {ids}")


def _attempts(s: Surfaces, add: Add) -> None:
    """The attempts' order, ends, and lost / saved / picked steps."""
    show = s.show
    attempts = show.get("attempts", [])
    if attempts:
        numbered = [a["index"] for a in attempts] == list(range(1, len(attempts) + 1))
        starts = [datetime.fromisoformat(a["started_at_iso"]) for a in attempts
                  if a["started_at_iso"] and a["started_at_iso"].endswith("+00:00")]
        add("attempts.order", numbered and starts == sorted(starts), "attempt (index, UTC start) out of order: "
            f"{[(a['index'], a['started_at_iso']) for a in attempts][:8]}")
        last_ended = attempts[-1]["ended"]
        want = {"finished": "completed", "crashed": "crashed", "running": "running"}.get(show["status"])
        add("status.ended", (want is None or last_ended == want) and (last_ended != "completed"
                                                                     or show["status"] == "finished"),
            f"run status {show['status']!r}, last attempt ended {last_ended!r}")
        if any(a["lost_steps"] for a in attempts):
            evidence = bool(show["checkpoints"]) or any(a["resume_step"] is not None for a in attempts)
            add("lost.evidence", evidence, f"lost steps {[(a['index'], a['lost_steps']) for a in attempts]} "
                "without a checkpoint or a restore point")
    if any(a["saved_steps"] and a["lost_steps"] for a in attempts):
        both = {a["index"]: [x for x in a["saved_steps"] if _inside(x, a["lost_steps"])] for a in attempts}
        both = {k: v for k, v in both.items() if v}
        add("saved.not-lost", not both, f"saved and lost at once (attempt: steps): {both}; lost ranges: "
            f"{ {a['index']: a['lost_steps'] for a in attempts} }")
    picked = [c for c in show.get("checkpoints", []) if c["resume_candidate"] and c["global_step"] is not None]
    if picked and any(a["lost_steps"] for a in attempts):
        hit = []
        for c in picked:  # the newest attempt that trained the step wrote the checkpoint there now
            owner = next((a for a in reversed(attempts) if _inside(c["global_step"], _trained(a))), None)
            if owner is not None and _inside(c["global_step"], owner["lost_steps"]):
                hit.append((c["path"], c["global_step"], owner["index"], owner["lost_steps"]))
        add("candidate.not-lost", not hit, "the picked checkpoint's step is inside the lost range of the newest "
            f"attempt that trained it (checkpoint, step, attempt, lost): {hit}")
    written = [c for c in show.get("checkpoints", []) if c["complete"] and c.get("saved_by_attempt") is not None
               and c["global_step"] is not None]
    if written:
        by_index = {a["index"]: a for a in attempts}
        bad = [(c["path"], c["global_step"], c["saved_by_attempt"],
                by_index[c["saved_by_attempt"]]["saved_steps"] if c["saved_by_attempt"] in by_index else "no attempt",
                by_index[c["saved_by_attempt"]]["lost_steps"] if c["saved_by_attempt"] in by_index else None)
               for c in written if c["saved_by_attempt"] not in by_index
               or c["global_step"] not in by_index[c["saved_by_attempt"]]["saved_steps"]
               or _inside(c["global_step"], by_index[c["saved_by_attempt"]]["lost_steps"])]
        add("checkpoint.kept", not bad, "complete checkpoints whose step their writer does not keep (checkpoint, "
            f"step, writer, its saved_steps, its lost_steps): {bad}")
    if any(a["lost_steps"] for a in attempts):
        outside = [(a["index"], a["lost_steps"], _trained(a)) for a in attempts if a["lost_steps"]
                   and not (_inside(a["lost_steps"][0], _trained(a)) and _inside(a["lost_steps"][1], _trained(a)))]
        add("lost.trained", not outside, f"lost ranges outside the steps the attempt trained (attempt, lost, "
            f"trained): {outside}")



def _restores(s: Surfaces, add: Add) -> None:
    """The checkpoint each resumed attempt restored; the W&B link fields of url and show."""
    run, show = s.run, s.show
    resumed = [a for a in run.attempts if a.resumed_from]
    if resumed:
        missing = []
        for a in resumed:
            target = a.restored_checkpoint
            if target is None:
                missing.append(f"#{a.index} resumed from {a.resumed_from!r}: restored_checkpoint not set")
            elif not os.path.lexists(target if os.path.isabs(target) else s.root / target):
                # Allowed only as the log names it, when the run holds no checkpoint of that name.
                held = [c.path for c in run.checkpoints if Path(c.path).name == Path(target).name]
                if not (a.resumed_from and Path(a.resumed_from).name == Path(target).name) or held:
                    missing.append(f"#{a.index} restored_checkpoint {target!r} is not a path of the run"
                                   + (f" though the run holds {held}" if held else ""))
        add("restore.checkpoint", not missing, f"{missing}; the run's checkpoints: "
            f"{[c.path for c in run.checkpoints][:6]}")
    if s.url is not None and show:
        fields = {k: s.url.get(k) for k in show["wandb"]}
        add("url.agree", fields == show["wandb"], f"url --json {fields} vs show --json {show['wandb']}")


def _findings(s: Surfaces, add: Add) -> None:
    """Every finding's steps and attempts follow from the run's files."""
    run = s.run
    findings = s.check.get("findings", [])
    trainings = _hf_trainings(s.root)
    if len(trainings) > 1:
        said = [f["code"] for f in findings if "max_steps" in f["message"] + f["explanation"]]
        add("hf.trainings", len(run.attempts) >= len(trainings) or bool(said), f"trainer_state.json files of "
            f"{len(trainings)} trainings (max_steps, train_batch_size -> files): {trainings}; the run has "
            f"{len(run.attempts)} attempt(s) and no finding names max_steps")
    span = _logged_range(run)
    with_steps = [f for f in findings if f["steps"]]
    if with_steps:
        outside = [(f["code"], f["steps"]) for f in with_steps
                   if span is None or not (span[0] <= f["steps"][0] <= f["steps"][1] <= span[1])]
        add("finding.steps", not outside, f"steps outside the logged range {span}: {outside}")
    named = [f for f in findings if f["attempts"]]
    if named:
        n = len(run.attempts)
        bad = [(f["code"], f["attempts"]) for f in named if any(not 1 <= i <= n for i in f["attempts"])]
        for f in named:
            if f["code"] == "steps.replayed" and f["steps"]:
                wrote = _attempt_points(run, f["steps"][0], f["steps"][1])
                silent = [i for i in f["attempts"] if i not in wrote]
                if silent:
                    bad.append((f["code"], f["steps"], f"attempts {silent} hold no point there (writers: "
                                f"{sorted(wrote)})"))
        add("finding.attempts", not bad, f"{n} attempts; findings naming attempts that do not exist or wrote "
            f"nothing in their steps: {bad}")
    named_by: Counter[str] = Counter(p for f in findings if f["code"] == "checkpoint.incomplete" for p in f["paths"])
    checkpoints = {ck.path for ck in run.checkpoints}
    if named_by and checkpoints:
        twice = sorted(p for p, n in named_by.items() if n > 1 and p in checkpoints)
        add("checkpoint.one-finding", not twice, f"checkpoints named by several checkpoint.incomplete findings: "
            f"{twice[:6]}")
    folders = {w.path: w for w in run.wandb_runs}
    by_source = [(a, folders[a.sources[0]]) for a in run.attempts if len(a.sources) == 1 and a.sources[0] in folders]
    if by_source:
        wrong = [(a.index, a.origin, w.resume_evidence) for a, w in by_source if a.origin == "fresh" and w.resume_evidence]
        wrong += [(a.index, "a second wandb.init", w.reinit_of_active) for a, w in by_source if w.reinit_of_active]
        add("wandb.origin", not wrong, f"W&B attempts labelled against their folder's records: {wrong[:6]}")


def _replays(s: Surfaces, add: Add) -> None:
    """The replay check's figure and the copies per range."""
    run = s.run
    findings = s.check.get("findings", [])
    replays = [f for f in findings if f["code"] == "steps.replayed" and f["steps"]]
    figures = [(f, m) for f in replays for m in [_figure(f["explanation"], run)] if m and len(f["attempts"]) > 1]
    if figures:
        wrong = []
        for f, m in figures:
            first, last, writers = f["steps"][0], f["steps"][1], set(f["attempts"])
            said = float(m["x"])
            kinds = sorted({x.source_kind for x in run.series if x.tag == m["tag"] and x.source_kind})
            found = {}  # source kind -> largest difference between copies (copies compared within one kind)
            for kind in kinds:
                copies = _copies(run, m["tag"], first, last, writers, kind)
                if copies:
                    found[kind] = (max(max(v) - min(v) for v in copies.values()), len(copies))
            if not any(math.isclose(d, said, rel_tol=5e-3, abs_tol=1e-12) for d, _n in found.values()):
                wrong.append(f"{m['tag']} {first}-{last}: said {said}, the copies differ by up to {found} per source")
            steps_twice = max((n for _d, n in found.values()), default=0)
            density = {tag: max(len(_copies(run, tag, first, last, writers, kind)) for kind in KINDS)
                       for tag in run.tags() if not PROGRESS.search(tag)}
            if steps_twice < max(density.values(), default=0):
                best = sorted(t for t, n in density.items() if n == max(density.values()))[:3]
                wrong.append(f"{m['tag']} {first}-{last}: the figure comes from {steps_twice} step(s) written twice, "
                             f"while {best} have {max(density.values())}")
        add("replay.figure", not wrong, "; ".join(wrong))
    if replays or run.replayed:
        ranges = [(r.first_step, r.last_step, r.copies, r.attempts) for r in run.replayed]
        uncovered = [f["steps"] for f in replays
                     if not all(any(r.first_step <= x <= r.last_step for r in run.replayed)
                                for x in (f["steps"][0], f["steps"][1]))]
        bad_ranges = [(r.first_step, r.last_step, r.attempts) for r in run.replayed
                      if r.copies < 2 or any(a not in _attempt_points(run, r.first_step, r.last_step)
                                             for a in r.attempts)]
        add("replayed.ranges", not uncovered and not bad_ranges,
            f"Run.replayed {ranges}; steps.replayed ranges it does not cover: {uncovered}; ranges with fewer than 2 "
            f"copies or naming an attempt that wrote nothing there: {bad_ranges}")


def _wandb_views(s: Surfaces, add: Add) -> None:
    """What a view says W&B shows follows from the run's W&B folders."""
    run = s.run
    findings = s.check.get("findings", [])
    views = [(f["code"], f["views"]["W&B"]) for f in findings if "W&B" in f.get("views", {})]
    if views:
        folders = _wandb_folders(run)
        dropped = sorted({step for w in run.wandb_runs for step in w.dropped_steps})
        if folders:
            bad_views = [v for v in views if v[1].strip().rstrip(".") == NOT_USED
                         or (DROPS.search(v[1]) and not HEDGED.search(v[1]) and not dropped)]
            add("wandb.view", not bad_views, f"the run has W&B folders {folders[:4]} (steps W&B recorded as dropped: "
                f"{dropped[:8]}; step metrics: {sorted({m for w in run.wandb_runs for m in w.step_metrics.values()})})"
                f" but a view says: {bad_views}")
        else:
            bad_views = [v for v in views if not NOT_THERE.match(v[1].strip())]
            add("wandb.view", not bad_views, f"no W&B folder (sources: {sorted({x.kind for x in run.sources})}) but a "
                f"view claims: {bad_views}")


def _exports(s: Surfaces, add: Add) -> None:
    """Point counts and export rows agree, and every record is exported."""
    run, show, ls = s.run, s.show, s.ls
    findings = s.check.get("findings", [])
    scalars = show.get("scalars", {})
    if s.export_rows is not None or scalars:
        per_tag = Counter(r["tag"] for r in (s.export_rows or []))
        shown = {tag: info["points"] for tag, info in scalars.items()}
        diff = {t: (shown.get(t, 0), per_tag.get(t, 0)) for t in set(shown) | set(per_tag)
                if shown.get(t, 0) != per_tag.get(t, 0)}
        n = len(run.attempts)
        strays = Counter(r["attempt"] for r in (s.export_rows or []) if r["attempt"] is not None
                         and not 1 <= r["attempt"] <= n)
        if s.export_rows:
            add("export.attempts", not strays, f"export rows naming attempts the run does not have ({n} attempts): "
                f"{dict(strays)}")
        add("points.export", not diff and s.export_rows is not None,
            f"(show points, export rows) per tag that differ: {dict(sorted(diff.items())[:8])}"
            + (f" ({len(diff)} tags)" if len(diff) > 8 else ""))
    if s.every_rows is not None and run.series:
        written = Counter((r["tag"], r["source"]) for r in s.every_rows)
        read: Counter[tuple[str, str]] = Counter()
        for series in run.series:
            read[(series.tag, series.source)] += len(series)
        short = {f"{tag} @ {source}": (read[(tag, source)], written.get((tag, source), 0))
                 for tag, source in read if read[(tag, source)] != written.get((tag, source), 0)}
        add("export.every-record", not short, f"(points read, rows exported) per tag and file that differ "
            f"({len(short)}): {dict(sorted(short.items())[:6])}")
    if show and s.check and ls:
        from_check = Counter(f["severity"] for f in findings)
        counts = {"check": {k: from_check.get(k, 0) for k in ("error", "warning", "info")},
                  "show": show["findings"], "ls": ls["findings"]}
        add("findings.agree", counts["check"] == counts["show"] == counts["ls"], f"findings per severity: {counts}")


def _config(s: Surfaces, add: Add) -> None:
    """The cfg. filter sees the document config prints."""
    from pimm_inspect.analysis.run_filter import compile_run_filter  # the runs table's filter, on the run's row
    from pimm_inspect.analysis.summary import run_row

    run, rel = s.run, s.rel
    row = run_row(run)
    if s.config is not None:
        probes = config_probes(s.config)
        missed = []
        for key, value in probes:
            predicate = compile_run_filter(f"cfg.{key}={value}")
            if not predicate(rel, row):
                missed.append(f"cfg.{key}={value}")
        if probes:
            add("cfg.filter", not missed, f"config --json prints {s.config.get('kind')} from "
                f"{s.config.get('source')}; the runs-table filter does not match: {missed[:4]}")
    elif run.configs and any(isinstance(doc.data, dict) for doc in run.configs):
        add("cfg.filter", False, "config --json exited 2 though the run holds parsed config documents "
            f"{[d.kind for d in run.configs]}")


def _sources(s: Surfaces, add: Add) -> None:
    """Every path of the model's sources exists relative to the run root (or is absolute)."""
    given = sorted({src.path for src in s.run.sources} | {series.source for series in s.run.series})
    if given:
        gone = [p for p in given if not os.path.lexists(p if os.path.isabs(p) else s.root / p)]
        add("sources.paths", not gone, f"source paths that are neither run-relative nor absolute ({len(gone)}): "
            f"{gone[:4]}")


def _paths(s: Surfaces, add: Add) -> None:
    """Every path a finding names exists."""
    findings = s.check.get("findings", [])
    paths = sorted({p for f in findings for p in f["paths"]})
    if paths:
        gone = []
        for p in paths:
            target = Path(p)
            if target.is_absolute():
                if not os.path.lexists(target) or target.resolve().is_relative_to(s.root):
                    gone.append(p + (" (absolute, inside the run)" if os.path.lexists(target) else ""))
            elif not os.path.lexists(s.root / p):
                gone.append(p)
        add("finding.paths", not gone, f"paths named by findings that do not exist as given: {gone[:6]}")
