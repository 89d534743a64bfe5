"""The cross-view invariants of ``tests/test_invariants.py`` over a corpus of public runs kept outside the repository,
plus the truth a person wrote down for some of them after reading their files.

    python bench/realworld_invariants.py CORPUS_DIR [--judgments FILE] [--json] [--ui N] [--only SUBDIR]

CORPUS_DIR holds one folder per public repository (run folders extracted from a snapshot of it; never committed:
see bench/README.md for the recipe). The script reports, as counts (runs, checks, failures) and one block per failure
with the files it is about and a command that reproduces it:

* every invariant of ``tests/invariants_support.py`` (``INVARIANTS``) on every run ``discover`` finds, read through
  the CLI (``show``/``ls``/``check --json`` over each repository folder, ``export``/``config --json`` per run) and the
  API, and, with ``--ui N``, the Overview and Log tab of the first N runs with several attempts (a Textual pilot);
* discovery: every W&B folder holding a ``.wandb`` log (W&B's own rule) is read by some run;
* judgments (``--judgments``, default ``CORPUS_DIR/judgments.json``, else ``bench/realworld_judgments.json``): a
  list of ``{"id", "select", "truth", "evidence"}``. ``select`` is ``{"path": "repo/run/dir"}`` (the run at that
  folder) or ``{"under": "repo", "wandb_id": "id"}`` (the runs under ``repo`` that name the id). ``truth`` may hold
  ``runs`` (how many runs the selection must be), ``attempts``, ``origins`` and ``ended`` (per attempt), ``tags``
  (tags the run must have points of), ``replayed`` (step ranges held more than once: each end must lie in a
  ``steps.replayed`` finding's range, and each finding must meet one),
  ``copies`` (``[first, last, n]``: a ``Run.replayed`` range holds those steps in n copies), ``no_replay`` (no
  ``steps.replayed`` finding), ``wandb_ids``, ``project`` (``entity/project`` the link must go to), ``status``,
  ``findings_present`` / ``findings_absent`` (codes), ``rejected`` (the server refused the run), ``url``,
  ``sources_in_order`` (a mark each attempt's sources must hold, in attempt order), ``messages_absent`` (words no
  finding may say, in its message or explanation), ``lost`` (``{"attempt":
  [first, last] or null}``).

Exit status 1 when anything failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import unquote

REPO = Path(__file__).resolve().parents[1]
EXTRA = {
    "discovery.wandb": "every W&B folder holding a .wandb log (W&B's own rule) is read by some discovered run",
    "ui.overview": "the Overview's attempt count, rows and timeline = show --json attempts (pilot)",
    "ui.log-starts": "the Log tab's attempt starts = the model's attempts that start in train.log (pilot)",
    "surfaces": "every command exits as documented and lists the run",
}
"""Checks the bench adds to ``INVARIANTS``."""


def _wandb_folders(corpus: Path) -> list[Path]:
    """W&B's own rule: a ``run-*``/``offline-run-*`` folder holding a ``.wandb`` log."""
    found = []
    for folder, dirs, files in os.walk(corpus):
        dirs[:] = [d for d in dirs if d not in (".git", "latest-run")]
        if Path(folder).name.startswith(("run-", "offline-run-")) and any(f.endswith(".wandb") for f in files):
            found.append(Path(folder))
    return found


def _select(select: dict[str, Any], surfaces: dict[Path, Any], corpus: Path) -> list[Any]:
    if "path" in select:
        root = (corpus / select["path"]).resolve()
        return [s for r, s in surfaces.items() if r == root]
    under = (corpus / select["under"]).resolve()
    return [s for r, s in surfaces.items() if r.is_relative_to(under) and select["wandb_id"] in s.run.wandb.run_ids]


def _judge(entry: dict[str, Any], chosen: list[Any]) -> list[str]:
    """What the tool says that contradicts the written truth (empty: it agrees)."""
    truth, wrong = entry["truth"], []
    if "runs" in truth and len(chosen) != truth["runs"]:
        wrong.append(f"{len(chosen)} runs selected ({[s.rel for s in chosen][:6]}), truth: {truth['runs']}")
    if not chosen:
        return wrong or ["no run selected"]
    s = max(chosen, key=lambda x: len(x.run.attempts))
    run = s.run
    findings = s.check.get("findings", [])
    codes = {f["code"] for f in findings}
    if "attempts" in truth and len(run.attempts) != truth["attempts"]:
        wrong.append(f"attempts: tool {len(run.attempts)}, truth {truth['attempts']}")
    if "origins" in truth and [a.origin for a in run.attempts] != truth["origins"]:
        wrong.append(f"origins: tool {[a.origin for a in run.attempts]}, truth {truth['origins']}")
    missing_tags = set(truth.get("tags", [])) - {s.tag for s in run.series}
    if missing_tags:
        wrong.append(f"tags the files hold but the run has no points of: {sorted(missing_tags)}")
    if "ended" in truth and [a.ended for a in run.attempts] != truth["ended"]:
        wrong.append(f"attempt ends: tool {[a.ended for a in run.attempts]}, truth {truth['ended']}")
    replays = [tuple(f["steps"]) for f in findings if f["code"] == "steps.replayed" and f["steps"]]
    for first, last in truth.get("replayed", []):
        # The tool cuts a range where the set of writers changes: each end must lie in one of its ranges, and no
        # range may leave the truth's.
        ends = [any(a <= x <= b for a, b in replays) for x in (first, last)]
        if not all(ends):
            wrong.append(f"replayed {first}-{last}: {'first' if not ends[0] else 'last'} step in no steps.replayed "
                         f"finding (tool: {replays[:8]}{' ...' if len(replays) > 8 else ''}, {len(replays)} findings)")
    if "replayed" in truth:
        stray = [(a, b) for a, b in replays if not any(a <= y and x <= b for x, y in truth["replayed"])]
        if stray:
            wrong.append(f"steps.replayed {stray} meets no replayed range of the truth {truth['replayed']}")
    for first, last, copies in truth.get("copies", []):
        if not any(r.first_step <= first and last <= r.last_step and r.copies == copies for r in run.replayed):
            wrong.append(f"steps {first}-{last}: {copies} copies, but Run.replayed says "
                         f"{[(r.first_step, r.last_step, r.copies, r.attempts) for r in run.replayed][:6]}")
    if truth.get("no_replay") and replays:
        wrong.append(f"steps.replayed {replays} on a run that wrote no step twice")
    if "wandb_ids" in truth and sorted(run.wandb.run_ids) != sorted(truth["wandb_ids"]):
        wrong.append(f"W&B ids: tool {list(run.wandb.run_ids)}, truth {truth['wandb_ids']}")
    if "project" in truth:
        said = "/".join(p for p in (run.wandb.entity, run.wandb.project) if p)
        if said != truth["project"] or (run.wandb.url and truth["project"] not in unquote(run.wandb.url)):
            wrong.append(f"W&B project: tool {said!r} (url {run.wandb.url}), truth {truth['project']!r}")
    if "status" in truth and run.status != truth["status"]:
        wrong.append(f"status: tool {run.status}, truth {truth['status']}")
    if "rejected" in truth and bool(run.wandb.server_rejection) != truth["rejected"]:
        wrong.append(f"server rejection: tool {run.wandb.server_rejection!r} (url {run.wandb.url}), truth "
                     f"{'rejected' if truth['rejected'] else 'accepted'}")
    if "url" in truth and run.wandb.url != truth["url"]:
        wrong.append(f"W&B url: tool {run.wandb.url}, truth {truth['url']}")
    order = truth.get("sources_in_order", [])
    placed = [[str(s.root / src) if not os.path.isabs(src) else src for src in a.sources] for a in run.attempts]
    if order and [any(mark in src for src in srcs) for srcs, mark in zip(placed, order)] != [True] * len(order):
        wrong.append(f"attempt order: tool {[list(a.sources)[:2] for a in run.attempts]}, truth {order}")
    said = [f"{f['message']} {f.get('explanation') or ''}" for f in findings]  # what a finding says, in full
    for claim in truth.get("messages_absent", []):
        if any(claim in message for message in said):
            wrong.append(f"a finding says {claim!r}: {next(m for m in said if claim in m)!r}")
    missing = set(truth.get("findings_present", [])) - codes
    if missing:
        wrong.append(f"findings missing: {sorted(missing)} (tool: {sorted(codes)})")
    extra = set(truth.get("findings_absent", [])) & codes
    if extra:
        wrong.append(f"findings that the files contradict: {sorted(extra)}")
    for index, span in truth.get("lost", {}).items():
        attempt = next((a for a in run.attempts if a.index == int(index)), None)
        said_lost = list(attempt.lost_steps) if attempt and attempt.lost_steps else None
        if said_lost != span:
            wrong.append(f"attempt {index} lost: tool {said_lost}, truth {span}")
    return wrong


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--judgments", type=Path, default=None)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--ui", type=int, default=0, help="also check the UI of the first N runs with attempts")
    parser.add_argument("--only", action="append", default=[],
                        help="only these repository folders and their judgments (repeatable)")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("PIMM_INSPECT_CACHE_DIR", "off")
    import pimm_inspect
    from tests.invariants_support import INVARIANTS, Check, check_run, gather
    from tests.invariants_ui import check_ui, ui_facts

    described = {**INVARIANTS, **EXTRA}
    corpus = args.corpus.resolve()
    started = time.monotonic()
    repos = sorted(p for p in corpus.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name != "tools"
                   and (not args.only or p.name in args.only))
    surfaces: dict[Path, Any] = {}
    checks: list[Any] = []
    for repo in repos:
        dirs = pimm_inspect.discover(repo)
        if not dirs:
            continue
        print(f"{repo.name}: {len(dirs)} runs", file=sys.stderr)
        for s in gather(repo, dirs):
            s.rel = os.path.relpath(s.root, corpus)
            surfaces[s.root] = s
            for c in check_run(s):
                c.run = s.rel
                checks.append(c)
    read = set()
    for s in surfaces.values():  # the W&B folders' own paths too (Run.sources may name one by a bare folder name)
        for source in [*(x.path for x in s.run.sources), *(w.path for w in s.run.wandb_runs)]:
            path = Path(source) if os.path.isabs(source) else s.root / source
            read.add(path.resolve())
            read.add(path.resolve().parent)
    for folder in _wandb_folders(corpus) if not args.only else []:
        rel = os.path.relpath(folder, corpus)
        checks.append(Check("discovery.wandb", rel, folder.resolve() in read,
                            "a W&B folder with a .wandb log that no discovered run reads"))
    if args.ui:
        from tests.tui_support import fixed_loader

        picked = [s for s in surfaces.values() if len(s.run.attempts) > 1][:args.ui]
        for s in picked:
            ui = asyncio.run(ui_facts(s.root, fixed_loader))
            checks += check_ui(s, ui)
    judgments_file = args.judgments or next(
        (f for f in (corpus / "judgments.json", REPO / "bench" / "realworld_judgments.json") if f.is_file()), None)
    judged: list[dict[str, Any]] = []
    if judgments_file is not None and judgments_file.is_file():
        for entry in json.loads(judgments_file.read_text()):
            where = entry["select"].get("path") or entry["select"].get("under") or ""
            if args.only and where.split("/", 1)[0] not in args.only:
                continue  # --only: the judgments of those repositories alone
            wrong = _judge(entry, _select(entry["select"], surfaces, corpus))
            judged.append({"id": entry["id"], "select": entry["select"], "ok": not wrong, "wrong": wrong,
                           "evidence": entry.get("evidence", "")})
    failed = [c for c in checks if not c.ok]
    per = defaultdict(lambda: [0, 0])
    for c in checks:
        per[c.invariant][0] += 1
        per[c.invariant][1] += not c.ok
    report = {
        "corpus": str(corpus), "repositories": len(repos), "runs": len(surfaces), "checks": len(checks),
        "failures": len(failed),
        "per_invariant": {k: {"checks": v[0], "failures": v[1]} for k, v in sorted(per.items())},
        "judgments": len(judged), "judgments_wrong": sum(not j["ok"] for j in judged),
        "seconds": round(time.monotonic() - started, 1),
        "failed": [{"invariant": c.invariant, "run": c.run, "detail": c.detail,
                    "files": _evidence(surfaces.get((corpus / c.run).resolve())),
                    "reproduce": _command(c.invariant, corpus / c.run)} for c in failed],
        "judged": judged,
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{report['runs']} runs in {report['repositories']} repositories, {report['checks']} checks, "
              f"{report['failures']} failures; {report['judgments']} judged runs, {report['judgments_wrong']} where "
              f"the tool contradicts the files ({report['seconds']} s)")
        for name, v in report["per_invariant"].items():
            print(f"  {name:<20} {v['checks']:>5} checks {v['failures']:>4} failures  {described.get(name, '')}")
        for f in report["failed"]:
            print(f"\nFAIL {f['invariant']} {f['run']}\n  {f['detail']}\n  files: {', '.join(f['files']) or '-'}\n"
                  f"  reproduce: {f['reproduce']}")
        for j in judged:
            if not j["ok"]:
                print(f"\nWRONG {j['id']} {j['select']}\n  " + "\n  ".join(j["wrong"])
                      + f"\n  evidence: {j['evidence']}")
        print("\n" + ("clean" if not failed and not any(not j["ok"] for j in judged) else "failures above"))
    return 1 if failed or any(not j["ok"] for j in judged) else 0


def _evidence(s: Any) -> list[str]:
    if s is None:
        return []
    return [src.path for src in s.run.sources][:6]


def _command(invariant: str, root: Path) -> str:
    q = json.dumps(str(root))
    return {
        "points.export": f"pimm-inspect show {q} --json; pimm-inspect export {q} --policy all --format json -o -",
        "cfg.filter": f"pimm-inspect config {q} --json; pimm-inspect {q} then / cfg.KEY=VALUE",
        "findings.agree": f"pimm-inspect check {q} --json; pimm-inspect show {q} --json; pimm-inspect ls {q} --json",
        "attempts.agree": f"pimm-inspect show {q} --json; pimm-inspect ls {q} --json",
        "row.agree": f"pimm-inspect show {q} --json; pimm-inspect ls {q} --json",
        "discovery.wandb": f"pimm-inspect ls {json.dumps(str(root.parent.parent))}",
        "export.every-record": f"pimm-inspect export {q} --policy all --all-sources --format json -o -",
        "url.agree": f"pimm-inspect url {q} --json; pimm-inspect show {q} --json",
    }.get(invariant, f"pimm-inspect check {q} --json; pimm-inspect show {q} --json")


if __name__ == "__main__":
    sys.exit(main())
