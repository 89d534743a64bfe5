"""Copy seed inputs for each fuzz target from the committed fixtures into fuzz/corpus/<target>/."""

from __future__ import annotations

import bz2
import lzma
import shutil
import struct
import zipfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
OUT = Path(__file__).resolve().parent / "corpus"


def main() -> None:
    seeds = {
        "tfrecord": sorted(FIXTURES.rglob("events.out.tfevents.*")),
        "wandb": sorted(FIXTURES.rglob("*.wandb")),
        "checkpoint": sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix in (".pth", ".pt", ".bin")
                             and p.stat().st_size < 64_000),
    }
    for target, paths in seeds.items():
        folder = OUT / target
        folder.mkdir(parents=True, exist_ok=True)
        for i, path in enumerate(paths):
            shutil.copyfile(path, folder / f"{i:03d}_{path.name[:40]}")
    folder = OUT / "pickle"
    folder.mkdir(parents=True, exist_ok=True)
    for i, path in enumerate(seeds["checkpoint"]):
        try:
            with zipfile.ZipFile(path) as archive:
                for name in archive.namelist():
                    if name.endswith(("data.pkl", ".metadata")):
                        (folder / f"{i:03d}_{name.replace('/', '_')[:40]}").write_bytes(archive.read(name))
        except zipfile.BadZipFile:
            continue
    for path in sorted(FIXTURES.rglob(".metadata")):
        (folder / f"dcp_{len(list(folder.iterdir())):03d}.metadata").write_bytes(path.read_bytes())
    hostile = ROOT / "tests" / "data" / "hostile"
    for path in sorted(hostile.glob("pickle-*")):
        shutil.copyfile(path, folder / f"hostile_{path.name[:40]}")
    dcp = OUT / "dcp"
    dcp.mkdir(parents=True, exist_ok=True)
    for i, path in enumerate([*sorted(FIXTURES.rglob(".metadata")), *sorted(hostile.glob("*.metadata"))]):
        shutil.copyfile(path, dcp / f"{i:03d}.metadata")
    members = OUT / "zip-member"
    members.mkdir(parents=True, exist_ok=True)
    plain = next(iter(sorted((OUT / "pickle").iterdir()))).read_bytes()
    raw_lzma = lzma.compress(plain, lzma.FORMAT_RAW, filters=[{"id": lzma.FILTER_LZMA1, "dict_size": 1 << 16}])
    encoded = {0: plain, 1: zlib.compress(plain)[2:-4], 2: bz2.compress(plain),
               3: struct.pack("<BBHBI", 9, 4, 5, 0x5D, 1 << 16) + raw_lzma}
    for method, data in encoded.items():
        (members / f"method{method}").write_bytes(bytes([method]) + struct.pack("<I", len(plain)) + data)
    # trainlog-long-lines: 4 control bytes (prefix, length, newline handling) + a fixture line as filler,
    # plus the shapes that made a regex quadratic (long runs of non-space characters, many "key: " terms).
    folder = OUT / "trainlog-long-lines"
    folder.mkdir(parents=True, exist_ok=True)
    lines = (FIXTURES / "runs" / "e2_clean" / "train.log").read_bytes().splitlines()[80:100]
    shapes = [b"a" * 64, b"x:" * 32, b"loss: 1.0 " * 8, b"k" * 40 + b": ", b"[bold]" + b"/" * 50]
    for i, filler in enumerate(lines + shapes):
        (folder / f"{i:03d}").write_bytes(bytes([i % 6, 0xFF, 0xFF, 1]) + filler)
    terminal = OUT / "terminal"
    terminal.mkdir(parents=True, exist_ok=True)
    for i, text in enumerate(["loss\x1b]52;c;aGVsbG8=\x1b\\", "[/x]", "\x9b31m", "train_batch/loss"]):
        (terminal / f"{i:03d}").write_text(text, encoding="utf-8")
    for target in seeds | {"pickle": None, "dcp": None, "zip-member": None, "trainlog-long-lines": None,
                           "terminal": None}:
        print(target, len(list((OUT / target).iterdir())))


if __name__ == "__main__":
    main()
