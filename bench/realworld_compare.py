"""Compare pimm-inspect with the reference readers on a corpus of run outputs other people committed.

    python bench/realworld_compare.py CORPUS_DIR [--json]

CORPUS_DIR holds folders extracted from public repositories (never commit them). The script reports:

* missed runs: every ``*tfevents*`` file (TensorBoard's rule), every W&B ``run-*.wandb`` log and every
  ``trainer_state.json`` under the corpus must be a source of some run pimm-inspect discovers;
* value mismatches: every scalar point of every event file against tensorboard's ``EventAccumulator``
  (``size_guidance`` 0 = keep all, ``purge_orphaned_data=False`` = as written), including TF2's tensor-valued
  scalars; every ``log_history`` value of ``trainer_state.json`` against ``json``; every numeric history
  value of every W&B log against the records decoded with wandb's own protobuf classes (``wandb.proto``) in
  a separate process, and each run's last values against the ``wandb-summary.json`` that wandb wrote;
* resume alarms on runs that never resumed: a ``steps.*``/``resume.*``/``wandb.run-split`` warning, or lost
  steps, on a run with a single process start (and lost steps on a run without any checkpoint).

Exit status 1 when any of those is found. wandb 0.31 has no Python reader for its transaction log (the
Go core reads it), so the child process unframes the log itself (LevelDB-style 32 KiB blocks, the framing
W&B documents) and leaves every record to ``wandb_internal_pb2.Record``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

HF_CHECKPOINT = re.compile(r"^checkpoint-\d+$")
RESUME_CODES = {"steps.replayed", "steps.gap", "resume.rollback", "resume.inexact", "wandb.run-split"}

_WANDB_CHILD = r'''
import json, struct, sys, zlib
from wandb.proto import wandb_internal_pb2 as pb

def records(data):
    pos, block, out, parts = 7, 32 * 1024, [], b""
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:
            pos += left
            continue
        crc, length, kind = struct.unpack_from("<IHB", data, pos)
        body = data[pos + 7: pos + 7 + length]
        if len(body) < length or zlib.crc32(bytes([kind]) + body) != crc:
            if any(data[pos:]):
                out.append(None)  # cut or damaged here: what follows is unknown
            break
        pos += 7 + length
        if kind == 1:
            out.append(body)
        elif kind == 2:
            parts = body
        elif kind == 3:
            parts += body
        elif kind == 4:
            out.append(parts + body)
        elif kind == 0 and length == 0:
            continue
    return out

result = {}
for path in sys.argv[1:]:
    data = open(path, "rb").read()
    history, metrics, summary_keys, complete = [], {}, set(), True
    for raw in records(data):
        if raw is None:
            complete = False
            break
        rec = pb.Record()
        try:
            rec.ParseFromString(raw)
        except Exception:
            break
        kind = rec.WhichOneof("record_type")
        if kind == "history":
            row = {}
            for item in rec.history.item:
                key = item.key if item.key else "/".join(item.nested_key)
                try:
                    row[key] = json.loads(item.value_json)
                except ValueError:
                    pass
            if "_step" not in row and rec.history.HasField("step"):
                row["_step"] = rec.history.step.num
            history.append(row)
        elif kind == "metric" and rec.metric.step_metric:
            metrics[rec.metric.name or rec.metric.glob_name] = rec.metric.step_metric
        elif kind == "summary":
            summary_keys |= {item.key or "/".join(item.nested_key) for item in rec.summary.update}
    result[path] = {"history": history, "metrics": metrics, "summary_keys": sorted(summary_keys),
                    "complete": complete}
json.dump(result, sys.stdout)
'''


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b or math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)


def _points(series_list) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for s in series_list:
        out[s.tag] += list(zip(s.steps.tolist(), s.values.tolist()))
    return out


def _compare(where: str, ours: dict[str, list[tuple[int, float]]], ref: dict[str, list[tuple[int, float]]],
             problems: list[str], as_set: bool = False) -> int:
    """Compare per tag; returns the number of reference points checked."""
    checked = 0
    for tag, ref_points in ref.items():
        mine = ours.get(tag, [])
        a = sorted(set(mine) if as_set else mine, key=lambda p: (p[0], str(p[1])))
        b = sorted(set(ref_points) if as_set else ref_points, key=lambda p: (p[0], str(p[1])))
        checked += len(b)
        if len(a) != len(b) or any(x[0] != y[0] or not _same(float(x[1]), float(y[1])) for x, y in zip(a, b)):
            problems.append(f"value mismatch: {where} tag {tag!r}: ours {len(a)} points, reference {len(b)}"
                            + (f" (first difference {next(((x, y) for x, y in zip(a, b) if x != y), None)})"))
    return checked


def _tb_reference(path: Path) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    acc = EventAccumulator(str(path), size_guidance={"scalars": 0, "tensors": 0, "histograms": 1, "images": 1,
                                                     "audio": 1, "compressedHistograms": 1},
                           purge_orphaned_data=False)
    acc.Reload()
    ref: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for tag in acc.Tags().get("scalars", []):
        ref[tag] += [(e.step, float(e.value)) for e in acc.Scalars(tag)]
    for tag in acc.Tags().get("tensors", []):
        meta = acc.SummaryMetadata(tag)
        if meta.plugin_data.plugin_name != "scalars":
            continue
        for e in acc.Tensors(tag):
            arr = tensor_util.make_ndarray(e.tensor_proto)
            if arr.size == 1:
                ref[tag].append((e.step, float(arr.reshape(()))))
    return ref


def _hf_reference(path: Path) -> dict[str, list[tuple[int, float]]]:
    ref: dict[str, list[tuple[int, float]]] = defaultdict(list)
    doc = json.loads(path.read_text())
    for row in doc.get("log_history", []):
        if not isinstance(row, dict) or "step" not in row or "train_runtime" in row:
            continue
        for key, value in row.items():
            if key == "step" or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            tag = next((f"{p}/{key[len(p) + 1:]}" for p in ("eval", "test") if key.startswith(p + "_")), f"train/{key}")
            ref[tag].append((int(row["step"]), float(value)))
    return ref


def _wandb_reference(paths: list[Path]) -> dict[str, dict]:
    if not paths:
        return {}
    proc = subprocess.run([sys.executable, "-c", _WANDB_CHILD, *map(str, paths)], capture_output=True, text=True,
                          check=True)
    return json.loads(proc.stdout)


def _wandb_points(doc: dict) -> dict[str, list[tuple[int, float]]]:
    """History values per key at W&B's x axis: ``_step``, or the step metric a define_metric (name or glob) gave."""
    from fnmatch import fnmatchcase

    ref: dict[str, list[tuple[int, float]]] = defaultdict(list)
    metrics = doc["metrics"]
    step_metrics = set(metrics.values())
    for row in doc["history"]:
        for key, value in row.items():
            if key.startswith("_") or key in step_metrics or isinstance(value, bool) \
                    or not isinstance(value, (int, float)):
                continue
            axis = metrics.get(key) or next((m for name, m in metrics.items() if fnmatchcase(key, name)), "_step")
            step = row.get(axis)
            if isinstance(step, (int, float)) and not isinstance(step, bool):
                ref[key].append((int(step), float(value)))
    return ref


def _writer(path: Path) -> str:
    name, text = path.name, path.as_posix()
    if name.endswith(".wandb"):
        return "wandb"
    if name == "trainer_state.json":
        return "hf-trainer (trainer_state.json)"
    if name.endswith(".v2"):
        return "keras/tf2"
    if "lightning_logs/" in text:
        return "pytorch-lightning"
    parts = name.split(".")
    if len(parts) == 5 or (len(parts) > 5 and not parts[-2].isdigit()):
        return "tensorboardX (no pid in name)"
    if "/runs/" in text and any(m in text for m in ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep",
                                                      "Oct", "Nov", "Dec")):
        return "torch SummaryWriter default dir (HF Trainer or torch)"
    return "torch SummaryWriter / HF"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import pimm_inspect
    from pimm_inspect.model import Severity

    corpus = args.corpus.resolve()
    skipped: list[str] = []
    from pimm_inspect.load.discover import discover

    run_dirs = discover(corpus, on_error=lambda p, why: skipped.append(f"{p}: {why}"))
    runs = [pimm_inspect.load_run(d) for d in run_dirs]
    owner: dict[Path, tuple[object, str]] = {}
    for run in runs:
        read = list(run.sources) + [type(run.sources[0])(s.source, "series", 0, 0.0) for s in run.series
                                    if run.sources] if run.sources else []
        read += [type(run.sources[0])(w.path, "wandb", 0, 0.0) for w in run.wandb_runs] if run.sources else []
        for src in read:
            path = Path(src.path) if os.path.isabs(src.path) else run.root / src.path
            if src.kind == "wandb" and path.is_dir():
                for log in path.glob("*.wandb"):
                    owner.setdefault(log.resolve(), (run, src.path))
            owner.setdefault(path.resolve(), (run, src.path))
    artifacts: list[Path] = []
    for folder, dirs, files in os.walk(corpus):
        dirs[:] = [d for d in dirs if d not in (".git", "latest-run")]
        for name in files:
            if "tfevents" in name or name == "trainer_state.json" or (name.endswith(".wandb") and name.startswith("run-")):
                artifacts.append(Path(folder) / name)
    problems: list[str] = []
    notes: list[str] = []
    checked = 0
    writers: Counter[str] = Counter()
    per_repo: dict[str, Counter[str]] = defaultdict(Counter)
    wandb_files = []
    for path in sorted(artifacts):
        writers[_writer(path)] += 1
        per_repo[path.relative_to(corpus).parts[0]][_writer(path)] += 1
        found = owner.get(path.resolve())
        if found is None and path.name == "trainer_state.json" and HF_CHECKPOINT.match(path.parent.name):
            hf_root = path.parent.parent.resolve()
            if any(r.root.resolve() == hf_root and r.kind == "hf-trainer" for r in runs):
                continue  # a checkpoint's copy of the state: the HF run reads it to compare histories
        if found is None:
            problems.append(f"missed run: {path.relative_to(corpus)} is read by no discovered run")
            continue
        run, rel = found
        if path.name.endswith(".wandb"):
            wandb_files.append((path, run))
            continue
        if path.name == "trainer_state.json" and HF_CHECKPOINT.match(path.parent.name):
            # A checkpoint's copy of the state is a prefix of the history the run reads from its newest state: each
            # of its points must be among the run's Trainer-state points (as a set), not a series of its own.
            every = _points(s for s in run.series if s.source_kind == "hf_trainer")
            for tag, ref_points in _hf_reference(path).items():
                checked += len(ref_points)
                have = set(every.get(tag, []))
                lacking = [p for p in ref_points if p not in have]
                if lacking:
                    problems.append(f"value mismatch: {path.relative_to(corpus)} tag {tag!r}: {len(lacking)} of "
                                    f"{len(ref_points)} points are not in the run's Trainer-state points (first "
                                    f"{lacking[0]})")
            continue
        ours = _points(s for s in run.series if s.source == rel)
        ref = _hf_reference(path) if path.name == "trainer_state.json" else _tb_reference(path)
        checked += _compare(str(path.relative_to(corpus)), ours, ref, problems, as_set=path.name == "trainer_state.json")
    refs = _wandb_reference([p for p, _r in wandb_files])
    for path, run in wandb_files:
        doc = refs.get(str(path))
        folder_rel = next((s.path for s in run.sources if s.kind == "wandb" and (
            Path(s.path) if os.path.isabs(s.path) else run.root / s.path).resolve() == path.parent.resolve()), None)
        if folder_rel is None:  # the run reads the log but names its folder by a path that is not run-relative
            folder_rel = next((s.path for s in run.sources if s.kind == "wandb" and not os.path.isabs(s.path)
                               and (run.root.parent / s.path).resolve() == path.parent.resolve()), None)
            problems.append(f"source path not run-relative: {path.parent.relative_to(corpus)} is a source of "
                            f"{run.root.relative_to(corpus)} named {folder_rel!r}")
        log = path.resolve()
        mine = [s for s in run.series
                if (Path(s.source) if os.path.isabs(s.source) else run.root / s.source).resolve() == log]
        checked += _compare(str(path.relative_to(corpus)), _points(mine), _wandb_points(doc), problems)
        summary = path.parent / "files" / "wandb-summary.json"
        if summary.is_file() and doc["complete"]:  # a cut log lost the rows the summary was made from
            try:
                final = json.loads(summary.read_text())
            except ValueError:
                final = {}
            last = {}
            for s in mine:
                if len(s):
                    last[s.tag] = float(s.values[-1])
            steps = [row["_step"] for row in doc["history"] if isinstance(row.get("_step"), int)]
            if final.get("_step") is not None and steps and final.get("_step") != steps[-1]:
                notes.append(f"{path.parent.relative_to(corpus)}: wandb-summary.json is of row {final.get('_step')}, "
                             f"the log ends at row {steps[-1]} (files committed mid-run): summary not compared")
                final = {}
            for key, value in final.items():
                if key in doc["summary_keys"]:
                    continue  # set by a summary update (HF's end-of-training values), not by history
                if key in last and isinstance(value, (int, float)) and not isinstance(value, bool) \
                        and not _same(last[key], float(value)):
                    problems.append(f"value mismatch: {path.parent.relative_to(corpus)} last {key!r} is {last[key]}, "
                                    f"wandb-summary.json says {value}")
    alarms = 0
    for run in runs:
        single = len(run.attempts) <= 1
        for f in run.findings:
            if single and f.code in RESUME_CODES and f.severity >= Severity.WARNING:
                problems.append(f"warning on a run that never resumed: {run.root.relative_to(corpus)}: {f.code} {f.message}")
                alarms += 1
        if any(a.lost_steps for a in run.attempts) and (single and not run.checkpoints):
            problems.append(f"lost steps without checkpoint evidence: {run.root.relative_to(corpus)}")
    report = {"corpus": str(corpus), "runs_discovered": len(runs), "artifacts": len(artifacts),
              "artifacts_by_writer": dict(writers), "repositories": {k: dict(v) for k, v in sorted(per_repo.items())},
              "points_compared": checked, "skipped_folders": skipped, "notes": notes, "problems": problems}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{len(artifacts)} artifacts in {len(per_repo)} repositories, {len(runs)} runs discovered, "
              f"{checked} reference points compared")
        for writer, count in sorted(writers.items()):
            print(f"  {writer}: {count}")
        for line in skipped:
            print(f"skipped: {line}")
        for line in notes:
            print(f"note: {line}")
        for line in problems:
            print(line)
        print("clean" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
