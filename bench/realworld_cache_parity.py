"""Every surface says the same with the cache off, cold and warm, on a corpus of public runs and on the fixtures.

    python bench/realworld_cache_parity.py [CORPUS_DIR ...] [--fixtures] [--only SUBDIR] [--grow N] [--json]

For each repository folder of CORPUS_DIR (one folder per public repository, see bench/README.md; with
``--fixtures``: fixtures/runs, each fixture run a tree of its own, and fixtures/runs itself), every run ``discover``
finds is shown through the CLI in three modes, each in a fresh process: ``--no-cache``, an empty cache directory
(``PIMM_INSPECT_CACHE_DIR`` set to a new temporary folder: cold) and the same directory again (warm). The outputs
compared byte for byte are, per run, ``show --json``, ``check --json``, ``ls --json`` and ``config --json`` (exit
status and stdout; ``config`` also where it exits 1 for a run without a configuration), and, per tree, ``ls --json``
of the repository folder and of every run's parent folder. Every entry is stored, however cheap
(``PIMM_INSPECT_CACHE_MIN_DECODE_MS=0``), so the warm pass serves as much as it can from the cache.

``--grow N`` also copies up to N corpus trees to a temporary folder (never writing in the corpus) and, for one run
of each, after a cold ``ls --json`` of the tree, grows one of its files (appends the last line of a text log again,
or appends a copy of the last record of an event file / touches a checkpoint) and checks that the warm ``ls --json``
of the tree equals the uncached one, the other runs' rows unchanged.

Prints counts and, for every run whose outputs differ, which surface and modes differ with a diff excerpt. Exit
status 1 when anything differed.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MODES = ("off", "cold", "warm")


def _worker(trees: list[str], out: str) -> None:
    """In one process: every surface of every run under each tree, as ``{key: [exit_code, stdout]}``."""
    from click.testing import CliRunner

    import pimm_inspect
    from pimm_inspect.cli.main import cli

    runner = CliRunner()
    found: dict[str, list[Any]] = {}

    def run(*args: str) -> list[Any]:
        result = runner.invoke(cli, list(args))
        return [result.exit_code, result.stdout if result.exception is None or result.exit_code in (0, 1, 2)
                else f"{result.stdout}\nEXCEPTION {type(result.exception).__name__}: {result.exception}"]

    for tree in trees:
        dirs = pimm_inspect.discover(tree)
        found[f"ls-tree {tree}"] = run("ls", "--json", tree)
        for parent in sorted({str(Path(d).parent) for d in dirs} - {tree}):
            found[f"ls-tree {parent}"] = run("ls", "--json", parent)
        for d in map(str, dirs):
            for command in ("show", "check", "ls", "config"):
                found[f"{command} {d}"] = run(command, "--json", d)
    Path(out).write_text(json.dumps(found))


def _pass(trees: list[Path], mode: str, cache: Path | None, scratch: Path) -> dict[str, list[Any]]:
    env = dict(os.environ, PYTHONPATH=str(REPO), PIMM_INSPECT_CACHE_MIN_DECODE_MS="0")
    env["PIMM_INSPECT_CACHE_DIR"] = "off" if cache is None else str(cache)
    out = scratch / f"{mode}.json"
    subprocess.run([sys.executable, __file__, "--worker", str(out), *map(str, trees)], env=env, check=True,
                   cwd=scratch)
    found: dict[str, list[Any]] = json.loads(out.read_text())
    return found


def _excerpt(a: str, b: str, lines: int = 12) -> str:
    diff = difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=1)
    return "\n".join(list(diff)[2:2 + lines])


def compare(trees: list[Path], scratch: Path) -> tuple[int, list[dict[str, Any]]]:
    """The number of outputs compared and, for each that differs between modes, what differs."""
    cache = scratch / "cache"
    passes = {"off": _pass(trees, "off", None, scratch), "cold": _pass(trees, "cold", cache, scratch),
              "warm": _pass(trees, "warm", cache, scratch)}
    differ = []
    for key, (code, text) in passes["off"].items():
        for mode in ("cold", "warm"):
            other = passes[mode].get(key)
            if other != [code, text]:
                got = other or [None, ""]
                differ.append({"output": key, "modes": f"off/{mode}", "exit": [code, got[0]],
                               "diff": _excerpt(text, got[1])})
    return len(passes["off"]), differ


def _records(data: bytes) -> list[bytes]:
    """The payloads of a TFRecord file (8-byte length, 4-byte crc, data, 4-byte crc), up to the first torn one."""
    at, found = 0, []
    while at + 12 <= len(data):
        n = int.from_bytes(data[at:at + 8], "little")
        if at + 16 + n > len(data):
            break
        found.append(data[at + 12:at + 12 + n])
        at += 16 + n
    return found


def _grow_events(path: Path) -> bool:
    """Append one more step to an event file: its last scalar event again, one step later (what a live writer
    adds); False when it holds none."""
    import struct

    from tensorboard.compat.proto import event_pb2
    from tensorboard.summary.writer.record_writer import masked_crc32c

    events = []
    for payload in _records(path.read_bytes()):
        event = event_pb2.Event()
        try:
            event.ParseFromString(payload)
            events.append(event)
        except Exception as exc:  # noqa: BLE001 (a damaged record: not this bench's business)
            print(f"{path}: a record that does not parse ({exc})", file=sys.stderr)
    scalars = [e for e in events if e.HasField("summary") and any(
        v.HasField("simple_value") or v.metadata.plugin_data.plugin_name == "scalars" for v in e.summary.value)]
    if not scalars:
        return False
    event = scalars[-1]
    event.step = max(e.step for e in events) + 1
    event.wall_time = max(e.wall_time for e in events) + 1.0
    data = event.SerializeToString()
    header = struct.pack("<Q", len(data))
    with open(path, "ab") as fh:
        fh.write(header + struct.pack("<I", masked_crc32c(header)) + data + struct.pack("<I", masked_crc32c(data)))
    return True


def _grow(run: Path, way: str) -> tuple[str, Path] | None:
    """Change one file of the run the way a live run does; what was done and to which file (None: nothing fit)."""
    files = sorted((p for p in run.rglob("*") if p.is_file() and not p.is_symlink()), key=lambda p: str(p))
    for p in sorted(files, key=lambda p: p.name, reverse=way == "events"):  # the newest event file: the live one
        if way == "events" and "tfevents" in p.name and _grow_events(p):
            return f"appended one more step to {p.relative_to(run)}", p
        if way == "log" and p.suffix in (".log", ".txt") and p.stat().st_size > 0 and "wandb" not in p.parts:
            lines = p.read_bytes().rstrip(b"\n").split(b"\n")
            with open(p, "ab") as fh:
                fh.write(b"\n" + lines[-1] + b"\n")
            return f"appended its last line again to {p.relative_to(run)}", p
        if way == "touch" and p.suffix in (".wandb", ".ckpt", ".pt", ".pth", ".bin", ".safetensors"):
            os.utime(p, None)
            return f"touched {p.relative_to(run)}", p
    return None


def grow_check(trees: list[Path], scratch: Path, limit: int) -> tuple[int, list[dict[str, Any]]]:
    """For up to ``limit`` trees: warm ``ls --json`` after one run changed = uncached; the others' rows unchanged."""
    done, differ, rows_changed = 0, [], []
    env = dict(os.environ, PYTHONPATH=str(REPO), PIMM_INSPECT_CACHE_MIN_DECODE_MS="0")

    def ls(tree: Path, cache: Path | None) -> dict[str, Any]:
        result = subprocess.run([sys.executable, "-m", "pimm_inspect", "ls", "--json", str(tree)], check=False,
                                cwd=scratch,
                                env=dict(env, PIMM_INSPECT_CACHE_DIR="off" if cache is None else str(cache)),
                                capture_output=True, text=True)
        return {"code": result.returncode, "text": result.stdout}

    old = time.time() - 86_400
    for tree in trees:
        if done >= limit:
            break
        copy = scratch / "grow" / tree.name
        shutil.copytree(tree, copy, symlinks=True)
        for folder, dirs, files in os.walk(copy):  # nothing racy or live: every row may be stored and indexed
            for name in dirs + files:
                os.utime(os.path.join(folder, name), (old, old), follow_symlinks=False)
        cache = scratch / f"grow-cache-{tree.name}"
        before = ls(copy, cache)
        runs = json.loads(before["text"] or '{"runs": []}')["runs"]
        if len(runs) < 2:
            shutil.rmtree(copy)
            continue
        what, changed, grown = "", "", copy
        for way in ("events", "log", "touch"):
            for row in runs:
                done_here = _grow(copy / row["path"], way)
                if done_here:
                    (what, grown), changed = done_here, row["path"]
                    break
            if what:
                break
        if not what:
            shutil.rmtree(copy)
            continue
        for folder, _dirs, files in os.walk(copy / changed):  # later than before, still quiet: the new row is stored
            for name in files:
                path = os.path.join(folder, name)
                if os.stat(path, follow_symlinks=False).st_mtime > old + 1:
                    os.utime(path, (old + 3_600, old + 3_600), follow_symlinks=False)
        warm, again, cold = ls(copy, cache), ls(copy, cache), ls(copy, None)
        done += 1
        rows_before = {r["path"]: r for r in runs}
        rows_after = {r["path"]: r for r in json.loads(warm["text"] or '{"runs": []}')["runs"]}
        moved = sorted(p for p in rows_before if p != changed and rows_before[p] != rows_after.get(p)
                       and not grown.is_relative_to(copy / p))  # a run nested in (or holding) the changed one: its file too
        differ_row = rows_before.get(changed) != rows_after.get(changed)
        rows_cold = {r["path"]: r for r in json.loads(cold["text"] or '{"runs": []}')["runs"]}
        cold_changed = rows_before.get(changed) != rows_cold.get(changed)
        for label, got in (("warm", warm), ("warm again", again)):
            if got != cold or moved:  # (the grown run's row changes only if the uncached one does: the files say)
                differ.append({"output": f"ls-tree {tree} after {changed}: {what}", "modes": f"{label}/off after",
                               "exit": [got["code"], cold["code"]],
                               "diff": _excerpt(cold["text"], got["text"])
                               + (f"\nother rows changed: {moved}" if moved else "")})
        if differ_row:
            rows_changed.append(tree.name)
        print(f"grow {tree.name}: {changed}: {what}; its row {'changed' if differ_row else 'unchanged'} warm, "
              f"{'changed' if cold_changed else 'unchanged'} uncached",
              file=sys.stderr)
        shutil.rmtree(copy)
    print(f"grow: {done} trees, the grown run's row changed in {len(rows_changed)}", file=sys.stderr)
    return done, differ


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        sys.path.insert(0, str(REPO))
        _worker(sys.argv[3:], sys.argv[2])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, nargs="*")
    parser.add_argument("--fixtures", action="store_true", help="also every fixture run and fixtures/runs")
    parser.add_argument("--only", action="append", default=[], help="only these repository folders (repeatable)")
    parser.add_argument("--grow", type=int, default=0, help="also the grow check on up to N corpus trees")
    parser.add_argument("--grow-only", action="store_true", help="only the grow check")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    started = time.monotonic()
    groups: list[list[Path]] = []
    for corpus in args.corpus:
        groups += [[p] for p in sorted(corpus.resolve().iterdir()) if p.is_dir() and not p.name.startswith(".")
                   and p.name != "tools" and (not args.only or p.name in args.only)]
    if args.fixtures:
        runs = REPO / "fixtures" / "runs"
        groups.append([runs, *sorted(p for p in runs.iterdir() if p.is_dir())])
    outputs, differ, runs_seen = 0, [], 0
    with tempfile.TemporaryDirectory(prefix="pimm-parity-") as tmp:
        for i, trees in enumerate(groups if not args.grow_only else []):
            scratch = Path(tmp) / str(i)
            scratch.mkdir()
            n, found = compare(trees, scratch)
            seen = sum(1 for key in json.loads((scratch / "off.json").read_text()) if key.startswith("show "))
            runs_seen += seen
            outputs += n
            differ += found
            print(f"{trees[0].name}: {seen} runs, {n} outputs, {len(found)} differ", file=sys.stderr)
            shutil.rmtree(scratch)
        grown = 0
        if args.grow:
            trees = [g[0] for g in groups if g[0].parent != REPO / "fixtures"]
            scratch = Path(tmp) / "grow"
            scratch.mkdir()
            grown, found = grow_check(trees, scratch, args.grow)
            differ += found
    report = {"runs": runs_seen, "outputs": outputs, "grown_trees": grown, "differences": len(differ),
              "seconds": round(time.monotonic() - started, 1), "differ": differ}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{runs_seen} runs, {outputs} outputs compared off/cold/warm, {grown} trees grown; "
              f"{len(differ)} differences ({report['seconds']} s)")
        for d in differ:
            print(f"\nDIFF {d['modes']} {d['output']} (exit {d['exit']})\n{d['diff']}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
