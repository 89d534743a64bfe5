"""What W&B holds of replayed steps, derived from the run's own W&B folders (never chosen by run kind).

For a replayed range and its tags: the step metric W&B plots each tag against (``define_metric``, else ``_step``),
how many W&B histories hold the range and which folders, the log calls W&B dropped as going backwards (and which
steps, from the ``.wandb`` log, ``files/output.log`` or ``logs/debug-internal.log``), the history rewind
(``resume_from`` in the run record, or the checkpoint cursor pimm passes as ``resume_from``), and how many folders
and projects share the id. A run without a W&B folder gets "not used by this run" unless its checkpoints or
config name a W&B run, which then is "not here".
"""

from __future__ import annotations

from collections.abc import Iterable

from ..evidence import WandbRunFacts
from ..model import Run
from . import _facts


def _folder_of(run: Run, source: str) -> WandbRunFacts | None:
    """The W&B folder a series was read from (its ``.wandb`` log lies inside it)."""
    inside = [f for f in run.wandb_runs if f.path not in (".", "") and source.startswith(f.path.rstrip("/") + "/")]
    if inside:
        return max(inside, key=lambda f: len(f.path))
    # The run root is itself a W&B folder: its own log is named relative to it.
    return next((f for f in run.wandb_runs if f.path in (".", "") and not source.startswith("/")), None)


def _axes(folders: list[WandbRunFacts], tags: Iterable[str]) -> str:
    """``train/loss against train/global_step (define_metric)``-style clauses for the tags W&B logged."""
    by_axis: dict[str, list[str]] = {}
    for tag in sorted(tags):
        keys = {f.step_metrics[tag] for f in folders if tag in f.step_metrics}
        for key in sorted(keys):
            by_axis.setdefault(key, []).append(tag)
    clauses = []
    for key, names in by_axis.items():
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        clauses.append(f"{shown} against _step (W&B's own row counter)" if key == "_step" else
                       f"{shown} against the step metric {key} (define_metric)")
    return "; ".join(clauses)


def _no_folder(run: Run) -> tuple[str, str]:
    if not _facts.uses_wandb(run):
        return "not used by this run", "W&B: not used by this run."  # no W&B folder, id or setting
    cursors = sorted({(ck.path, ck.wandb_cursor) for ck in run.checkpoints if ck.wandb_cursor is not None})
    cursor = (f" The checkpoint cursor ({cursors[-1][0]}: resume_step {cursors[-1][1]}) is the resume_from point "
              "pimm passes on resume, which rewinds the W&B history to it." if cursors else
              " No checkpoint carries a W&B history cursor, so a resume could not rewind the W&B history.")
    return ("not here: the run names a W&B run but no W&B folder of it was found",
            "W&B: this run logged to W&B (its config or checkpoints name it) but none of its W&B folders is here, "
            "so what W&B holds of these steps cannot be read." + cursor)


def wandb_view(run: Run, tags: Iterable[str], first: int, last: int) -> tuple[str, str]:
    """(what W&B shows of steps ``first``-``last`` of ``tags``, the explanation's sentence), from the folders."""
    folders = list(run.wandb_runs)
    if not folders:
        return _no_folder(run)
    tags = set(tags)
    span = _facts.fmt_range(first, last)
    holders: dict[str, WandbRunFacts] = {}
    for s in run.series:
        if s.tag not in tags or _facts.source_kind(run, s) != "wandb" or not len(s):
            continue
        if bool(((s.steps >= first) & (s.steps <= last)).any()):
            folder = _folder_of(run, s.source)
            if folder is not None:
                holders.setdefault(folder.path, folder)
    logged = [f for f in folders if any(t in f.step_metrics for t in tags)]
    dropped = [(f, inside) for f in folders if (inside := [d for d in f.dropped_steps if first <= d <= last])]
    ids = list(dict.fromkeys(f.run_id for f in folders if f.run_id))
    from ..sources.wandb.link_rules import id_projects  # only for runs with W&B folders

    projects = id_projects((f.entity, f.project) for f in folders)
    parts: list[str] = []
    who = (f"{len(folders)} folder(s) of W&B id {', '.join(ids) or '(none recorded)'}"
           + (f" in {len(projects)} projects ({', '.join(projects)}), which are {len(projects)} W&B runs"
              if len(projects) > 1 else ""))
    if not logged:
        shows = f"does not log {'this tag' if len(tags) == 1 else 'these tags'} (other keys only)"
        parts.append(f"W&B ({who}): none of the affected tags is in its history.")
    else:
        axes = _axes(logged, tags)
        count = len(holders)
        if count > 1:
            shows = f"{count} copies of steps {span} ({count} folders' histories), against {_axis_names(logged, tags)}"
        elif count == 1:
            shows = f"one copy of steps {span}"
        else:
            shows = f"no row at steps {span}"
        if dropped:
            shows += ", the replayed log calls dropped as going backwards"
        parts.append(f"W&B ({who}) plots {axes}.")
        holder_names = ", ".join(sorted(holders)) or "none"
        times = {0: "in no folder", 1: "once", 2: "twice"}.get(count, f"{count} times")
        places = {path: id_projects([(f.entity, f.project)]) for path, f in holders.items()}
        runs = list(dict.fromkeys(place[0] for place in places.values() if place))
        if len(projects) > 1 and len(runs) > 1:  # the copies are in different W&B runs, one history each
            each = "; ".join(
                f"{where} once (folder {', '.join(sorted(p for p, pl in places.items() if pl and pl[0] == where))})"
                if sum(1 for pl in places.values() if pl and pl[0] == where) == 1 else
                f"{where} {sum(1 for pl in places.values() if pl and pl[0] == where)} times (folders: "
                f"{', '.join(sorted(p for p, pl in places.items() if pl and pl[0] == where))})" for where in runs)
            parts.append(f"Steps {span} are in the histories of {len(runs)} W&B runs: {each}.")
        else:
            parts.append(f"Its history holds steps {span} {times} (folders: {holder_names})"
                         + (", each folder uploaded on its own by `wandb sync`"
                            if sum(1 for f in holders.values() if f.offline) > 1 else "") + ".")
    for folder, calls in dropped:
        where = folder.dropped_step_source or folder.path
        parts.append(f"W&B dropped {len(calls)} log call(s) at steps {_facts.fmt_range(calls[0], calls[-1])} as going "
                     f"backwards ({where}), so its chart keeps the first copy there.")
    if logged and not dropped:
        parts.append("No dropped step is recorded in the W&B logs.")
    rewinds = [f"{f.path}: {f.resume_from}" for f in folders if f.resume_from]
    cursors = sorted({(ck.path, ck.wandb_cursor) for ck in run.checkpoints if ck.wandb_cursor is not None})
    if rewinds:
        parts.append("History rewound by the run record's " + "; ".join(rewinds) + ": on the server the rewound "
                     "run keeps the rows the newer attempt logged from that step on.")
        shows += "; history rewound (resume_from)"
    elif cursors:
        parts.append(f"The checkpoint cursor ({cursors[-1][0]}: resume_step {cursors[-1][1]}) is the resume_from point "
                     "pimm passes on resume; no folder here records a rewind.")
    else:
        parts.append("No rewind (resume_from) is recorded.")
    return shows, " ".join(parts)


def _axis_names(folders: list[WandbRunFacts], tags: set[str]) -> str:
    keys = sorted({f.step_metrics[t] for f in folders for t in tags if t in f.step_metrics})
    return ", ".join(keys)
