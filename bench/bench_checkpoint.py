"""Benchmark: pimm-inspect's checkpoint metadata read vs ``torch.load`` at 100 MB and >= 1 GB.

Usage::

    python bench/bench_checkpoint.py            # creates bench/_data/ckpt_*.pth once (needs torch)
    python bench/bench_checkpoint.py --repeat 5

Every measurement runs in a fresh subprocess. "work" is the time of the read call
inside that process (median of ``--repeat`` calls for ours; one call for
torch.load); "process" is the whole subprocess wall time, imports included. The
table also checks that ``torch`` is absent from ``sys.modules`` after our read.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from _results import Figure, add_option, save

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "bench" / "_data"
SIZES_MB = {"100MB": 100, "1GB": 1100}

OURS = """
import json, sys, time
from pathlib import Path
from pimm_inspect.sources.checkpoint.reader import read_checkpoint_file
times = []
for _ in range({repeat}):
    t = time.perf_counter(); read = read_checkpoint_file(Path({path!r}), "model/model_last.pth")
    times.append(time.perf_counter() - t)
times.sort()
print(json.dumps({{"work_s": times[len(times) // 2], "torch_loaded": "torch" in sys.modules,
                  "tensors": read.info.tensor_count, "global_step": read.info.global_step}}))
"""

TORCH = """
import json, time
t0 = time.perf_counter(); import torch; t1 = time.perf_counter()
obj = torch.load({path!r}, map_location="cpu", weights_only=False{extra})
t2 = time.perf_counter()
print(json.dumps({{"import_s": t1 - t0, "work_s": t2 - t1, "global_step": obj["trainer"]["global_step"]}}))
"""


def make_checkpoint(path: Path, target_mb: int) -> None:
    """A realistic pimm payload: many weight tensors, AdamW state for each, trainer/logger blocks."""
    import torch

    # Weights + exp_avg + exp_avg_sq = 3 copies; 300 tensors of equal size.
    numel = target_mb * 1024 * 1024 // (3 * 300 * 4)
    state_dict = {f"module.backbone.block{i // 6}.layer{i % 6}.weight": torch.zeros(numel) for i in range(300)}
    opt_state = {name: {"step": torch.tensor(5000.0), "exp_avg": torch.zeros(numel), "exp_avg_sq": torch.zeros(numel)}
                 for name in state_dict}
    payload = {
        "schema": "pimm.trainer_checkpoint", "version": 3, "checkpoint_version": 3,
        "model": {"state_dict": state_dict},
        "optimizer": {"state_dict": {"state": opt_state, "param_groups": [{"lr": 1e-3, "params": list(state_dict)}]},
                      "class": "AdamW", "format": "torch.distributed.checkpoint.state_dict"},
        "scheduler": {"state_dict": {"last_epoch": 5000}, "class": "OneCycleLR", "total_steps": 100000},
        "scaler": {"enabled": False, "state_dict": None},
        "dataloader": {"backend": "StatefulDataLoader", "state": None, "world_size": 8, "num_workers": 8},
        "rng": {"world_size": 1, "state": {"torch": torch.get_rng_state()}},
        "trainer": {"epoch": 12, "iter_in_epoch": 0, "global_step": 5000, "samples_seen": 640000,
                    "best_metric_value": 0.71},
        "logger": {"backend": "wandb", "wandb": {"run_id": "abc123", "resume_step": 5001, "step_offset": 0,
                                                 "checkpoint_global_step": 5000}},
        "distributed": {"world_size": 8, "backend": "nccl", "rank_order": list(range(8))},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(payload, str(path) + ".tmp")
    Path(str(path) + ".tmp").replace(path)


def run(code: str) -> tuple[dict, float]:
    """Run a snippet in a fresh interpreter; return its JSON line and the whole wall time."""
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1]), time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="calls of our reader per process (median kept)")
    parser.add_argument("--sizes-mb", default=",".join(str(mb) for mb in SIZES_MB.values()),
                        help="checkpoint sizes to write and read, MB (a smoke run: a small one)")
    add_option(parser)
    args = parser.parse_args()
    rows = []
    names = {mb: label for label, mb in SIZES_MB.items()}
    for mb in (int(x) for x in args.sizes_mb.split(",")):
        label = names.get(mb, f"{mb}MB")
        path = DATA / f"ckpt_{label}.pth"
        if not path.exists():
            print(f"creating {path} ...", file=sys.stderr)
            make_checkpoint(path, mb)
        size_mb = path.stat().st_size / 1e6
        ours, ours_proc = run(OURS.format(path=str(path), repeat=args.repeat))
        theirs, theirs_proc = run(TORCH.format(path=str(path), extra=""))
        mmap, mmap_proc = run(TORCH.format(path=str(path), extra=", mmap=True"))
        assert ours["global_step"] == theirs["global_step"] == 5000
        rows.append((label, size_mb, ours, ours_proc, theirs, theirs_proc, mmap, mmap_proc))
    print(f"{'file':>6} {'MB':>7} | {'ours work':>10} {'ours proc':>10} {'torch?':>6} | "
          f"{'load work':>10} {'load proc':>10} {'import':>7} | {'mmap work':>10} {'mmap proc':>10} | "
          f"{'work x':>8} {'proc x':>7}")
    for label, size_mb, ours, ours_proc, theirs, theirs_proc, mmap, mmap_proc in rows:
        print(f"{label:>6} {size_mb:7.0f} | {ours['work_s'] * 1e3:8.1f}ms {ours_proc:9.2f}s {str(ours['torch_loaded']):>6} | "
              f"{theirs['work_s'] * 1e3:8.0f}ms {theirs_proc:9.2f}s {theirs['import_s']:6.2f}s | "
              f"{mmap['work_s'] * 1e3:8.0f}ms {mmap_proc:9.2f}s | "
              f"{theirs['work_s'] / ours['work_s']:7.0f}x {theirs_proc / ours_proc:6.1f}x")
    print(f"tensors per file: {rows[0][2]['tensors']} (ours counts them without reading their bytes)")
    save("checkpoint", "Checkpoint metadata", figures(rows), "python bench/bench_checkpoint.py " + " ".join(sys.argv[1:]),
         args.results_dir)


def figures(rows: list[tuple]) -> list[Figure]:
    """The README rows: per file, our read's work and whole process against ``torch.load``'s (default, not mmap)."""
    out = []
    for _label, size_mb, ours, ours_proc, theirs, theirs_proc, _mmap, _mmap_proc in rows:
        work_ok = ours["work_s"] <= 0.05
        out.append(Figure(f"{size_mb:.0f} MB pimm checkpoint, metadata", ours["work_s"], None, "torch.load",
                          theirs["work_s"], None, "<= 50 ms, no torch import", work_ok and not ours["torch_loaded"],
                          None, what="reader work"))
        out.append(Figure(f"{size_mb:.0f} MB pimm checkpoint, metadata", ours_proc, None, "torch.load",
                          theirs_proc, None, what="whole process"))
    return out


if __name__ == "__main__":
    main()
