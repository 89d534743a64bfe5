"""Generate a big tree of runs for the scale benchmarks (issue 23: 10,000 copies, 11,000 run folders).

Usage: python bench/make_run_tree.py OUT [--copies 10000]

Copies of ten committed fixture runs (``fixtures/runs/``: pimm E0/E2 runs with checkpoints, HF Trainer runs, a W&B
offline run and a TensorBoard folder holding two runs), round-robin, so every ten copies hold eleven run folders
(10,000 copies: 11,000 runs, about 1.5 GB). They are laid out like a lab's tree, ``proj_NN/group_M/<copy>``, 100
copies per project, and every copy's files get old, distinct mtimes (a fixed date plus a minute per copy, keeping
the fixture's own order of modifications), so no run looks live and no two copies share a time, as in a real tree
of finished runs. Real copies, not hard links: each file has its own inode and mtime.

Deterministic: the same OUT holds the same paths, bytes and mtimes every time. A finished tree is reused (its copy
count is recorded in ``OUT/.tree-copies``); an interrupted one is built again from scratch.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures" / "runs"
SOURCES = ("e2_clean", "e2_requeued_twice", "e2_wandb", "e2_crashed", "hf_clean", "hf_resumed", "tb_plain",
           "wandb_clean", "e0_legacy", "e2_exact_resume")
"""Ten fixture folders holding eleven runs (``tb_plain`` holds two), none of them live."""
RUNS_PER_SOURCE_SET = 11
BASE_S = 1_790_000_000  # 2026-09-21 UTC: weeks before any benchmark runs
COPY_STEP_S = 60
PER_PROJECT = 100
PER_GROUP = 25
MARKER = ".tree-copies"


def copy_path(out: Path, i: int) -> Path:
    """Where copy ``i`` goes: ``proj_NN/group_M/run_NNNNN_<fixture>``."""
    source = SOURCES[i % len(SOURCES)]
    return out / f"proj_{i // PER_PROJECT:03d}" / f"group_{(i % PER_PROJECT) // PER_GROUP}" / f"run_{i:05d}_{source}"


def _times(source: Path) -> dict[str, int]:
    """Every path's mtime (ns) relative to the oldest, in the fixture (its own order of modifications)."""
    found: dict[str, int] = {}
    for dirpath, dirnames, filenames in os.walk(source):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            found[str(path.relative_to(source))] = path.lstat().st_mtime_ns
    oldest = min(found.values(), default=0)
    return {rel: t - oldest for rel, t in found.items()}


def _copy(source: Path, target: Path, start_ns: int, offsets: dict[str, int]) -> None:
    shutil.copytree(source, target, symlinks=True)
    # Deepest first, so setting a file's time never moves its folder's afterwards (folders are set after their files).
    for rel in sorted(offsets, key=lambda r: r.count(os.sep), reverse=True):
        os.utime(target / rel, ns=(start_ns + offsets[rel],) * 2, follow_symlinks=False)
    os.utime(target, ns=(start_ns + max(offsets.values(), default=0),) * 2)


def make_tree(out: Path, copies: int) -> Path:
    """The tree of ``copies`` copies at ``out`` (built once; reused when already complete)."""
    marker = out / MARKER
    if marker.is_file() and marker.read_text().strip() == str(copies):
        return out
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    offsets = {name: _times(FIXTURES / name) for name in SOURCES}
    for i in range(copies):
        source = SOURCES[i % len(SOURCES)]
        target = copy_path(partial, i)
        target.parent.mkdir(parents=True, exist_ok=True)
        _copy(FIXTURES / source, target, (BASE_S + i * COPY_STEP_S) * 10**9, offsets[source])
        if i and i % 1000 == 0:
            print(f"{i} copies", file=sys.stderr, flush=True)
    for folder in sorted({p for i in range(copies) for p in copy_path(partial, i).parents if partial in p.parents},
                         key=lambda p: len(p.parts), reverse=True):
        os.utime(folder, ns=((BASE_S + copies * COPY_STEP_S) * 10**9,) * 2)
    (partial / MARKER).write_text(f"{copies}\n")
    shutil.rmtree(out, ignore_errors=True)
    partial.rename(out)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--copies", type=int, default=10_000)
    args = parser.parse_args()
    tree = make_tree(args.out, args.copies)
    print(f"{tree}: {args.copies} copies, {args.copies // len(SOURCES) * RUNS_PER_SOURCE_SET} runs", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
