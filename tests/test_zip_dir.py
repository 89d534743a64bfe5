"""The checkpoint reader's own central directory parser (``_zip_dir``) against ``zipfile``.

Whenever it answers it must give zipfile's member names (in order) and each member's fields; it must answer
for every torch.save zip the fixtures hold (so the fast path is really taken); on damaged archives it may
only decline (the caller then asks zipfile, whose errors become the findings). End to end, reading damaged
checkpoints gives the same CheckpointRead with or without it.
"""

from __future__ import annotations

import dataclasses
import io
import random
import zipfile
from pathlib import Path

import pytest

from pimm_inspect.sources.checkpoint import _containers
from pimm_inspect.sources.checkpoint._zip_dir import read_directory
from pimm_inspect.sources.checkpoint.reader import read_checkpoint_file
from tests import hostile_checkpoint_inputs as hci

REPO = Path(__file__).resolve().parent.parent
FIELDS = ("filename", "flag_bits", "compress_type", "file_size", "compress_size", "header_offset", "CRC")


def _zips() -> dict[str, bytes]:
    found = {}
    for root in (REPO / "fixtures", REPO / "tests" / "data" / "hostile"):
        for path in sorted(root.rglob("*")):
            if path.is_file() and not path.is_symlink() and path.stat().st_size < 5_000_000 \
                    and zipfile.is_zipfile(path):
                found[str(path.relative_to(REPO))] = path.read_bytes()
    found["zipfile-written (no zip64)"] = hci.torch_zip(b"\x80\x02}q\x00.")
    return found


ZIPS = _zips()
TORCH = {k: v for k, v in ZIPS.items() if k.startswith("fixtures/")}


def _agrees(data: bytes) -> bool:
    """True when our parser answered (and then equals zipfile); False when it declined."""
    ours = read_directory(io.BytesIO(data))
    if ours is None:
        return False
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert ours.names == archive.namelist()
        infos = {info.filename: info for info in archive.infolist()}
    assert set(ours.members) == set(infos)
    for name, member in ours.members.items():
        assert [getattr(member, f) for f in FIELDS] == [getattr(infos[name], f) for f in FIELDS], name
    return True


def test_fixture_torch_zips_are_read_by_our_parser():
    assert len(TORCH) >= 20
    for name, data in TORCH.items():
        assert _agrees(data), name
    assert _agrees(ZIPS["zipfile-written (no zip64)"])


def test_a_prefixed_archive_and_a_commented_one():
    data = TORCH[min(TORCH, key=lambda k: len(TORCH[k]))]
    assert _agrees(b"#!junk before the archive\n" * 3 + data)  # zipfile's "concat" offset
    commented = io.BytesIO()
    with zipfile.ZipFile(commented, "w") as archive:
        archive.writestr("a/data.pkl", b"\x80\x02N.")
        archive.comment = b"a comment"
    assert not _agrees(commented.getvalue())  # declined: zipfile searches for the record under the comment
    assert zipfile.ZipFile(io.BytesIO(commented.getvalue())).namelist() == ["a/data.pkl"]


@pytest.mark.parametrize("name", sorted(TORCH)[:12])
def test_damaged_tails_either_agree_or_are_declined(name):
    data = TORCH[name]
    rng = random.Random(len(data))
    tail = min(len(data), 2500)
    for cut in range(len(data) - tail, len(data) + 1, 7):
        _agrees_or_declined(data[:cut])
    for _ in range(400):
        at = rng.randrange(len(data) - tail, len(data))
        width = rng.randrange(1, 5)
        _agrees_or_declined(data[:at] + bytes(rng.choice([0, 0xFF, rng.randrange(256)]) for _ in range(width))
                            + data[at + width:])


def _agrees_or_declined(data: bytes) -> None:
    try:
        _agrees(data)
    except (zipfile.BadZipFile, NotImplementedError, ValueError, EOFError, OSError) as exc:
        # zipfile refused it: our parser must have declined first (else _agrees would have compared, not raised
        # inside zipfile after ours answered).
        assert read_directory(io.BytesIO(data)) is None, exc


def test_damaged_checkpoints_read_the_same_with_or_without_our_parser(tmp_path, monkeypatch):
    data = next(v for k, v in TORCH.items() if k.endswith("e2_model_last.pth"))
    rng = random.Random(7)
    cases = [data[:cut] for cut in range(len(data) - 1500, len(data) + 1, 37)]
    for _ in range(80):
        at = rng.randrange(len(data) - 1500, len(data))
        cases.append(data[:at] + bytes([rng.randrange(256)]) + data[at + 1:])
    path = tmp_path / "model_last.pth"

    def reads() -> list:
        out = []
        for case in cases:
            path.write_bytes(case)
            read = read_checkpoint_file(path, "model/model_last.pth")
            info = dataclasses.replace(read.info, mtime_s=0.0)  # the file is rewritten for each case
            out.append((info, read.findings, read.container, read.byteorder, read.archive_version))
        return out

    ours = reads()
    monkeypatch.setattr(_containers, "read_directory", lambda fh: None)
    assert reads() == ours
