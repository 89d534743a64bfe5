"""Git LFS pointer files where a checkpoint should be: a clone without ``git lfs pull`` holds these, not the weights.

A pointer is a few lines of text (git-lfs's spec v1): ``version https://git-lfs.github.com/spec/v1``, ``oid
sha256:<64 hex>``, ``size <bytes>``, at most 1024 bytes. It is not a damaged checkpoint: the real file is on the LFS
server, and nothing says how its save went.
"""

from __future__ import annotations

import re
from typing import BinaryIO

from ...model import Finding, Severity

LFS_CODE = "file.lfs-pointer"
MAX_POINTER_BYTES = 1024
_POINTER = re.compile(rb"\Aversion https://(?:git-lfs\.github\.com|hawser\.github\.com)/spec/v1\n"
                      rb"(?:[a-z0-9.-]+ [^\n]*\n)*?oid sha256:(?P<oid>[0-9a-f]{64})\n"
                      rb"(?:[a-z0-9.-]+ [^\n]*\n)*?size (?P<size>\d{1,20})\n")
LFS_HEAD = b"vers"
"""How a pointer file begins (a zip begins ``PK``, a pickle ``\\x80``, safetensors with a little-endian length)."""


def lfs_pointer(head: bytes) -> tuple[str, int] | None:
    """(oid, size of the real file) when ``head`` (a file's first bytes, up to 1024) is a Git LFS pointer."""
    match = _POINTER.match(head[:MAX_POINTER_BYTES])
    return (match["oid"].decode(), int(match["size"])) if match else None


def read_pointer(fh: BinaryIO) -> tuple[str, int] | None:
    """The pointer an open file holds (read from its start, at most 1024 bytes), else None."""
    fh.seek(0)
    head = fh.read(MAX_POINTER_BYTES + 1)
    return lfs_pointer(head) if len(head) <= MAX_POINTER_BYTES else None


def lfs_finding(rel_path: str, pointer: tuple[str, int]) -> Finding:
    """``file.lfs-pointer``: the file is a Git LFS pointer, the checkpoint itself was not fetched."""
    oid, size = pointer
    return Finding(LFS_CODE, Severity.WARNING,
                   f"{rel_path} is a Git LFS pointer (oid sha256:{oid[:12]}..., {size} bytes on the LFS server), "
                   "not the checkpoint: it was not fetched", (rel_path,), None,
                   "The repository stores this file with Git LFS and this copy holds only the pointer: run `git lfs "
                   "pull` (or `git lfs fetch` then `git lfs checkout`) to get it. Nothing says the save was cut "
                   "short.")
