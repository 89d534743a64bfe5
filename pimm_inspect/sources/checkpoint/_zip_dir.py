"""A zip archive's central directory read in one pass, exactly as ``zipfile`` reads it, for the plain case only.

``zipfile.ZipFile`` builds a ``ZipInfo`` object per member with many fields and seeks and reads the end
records one by one; a checkpoint needs only the member names and where data.pkl lies. This reader follows
``zipfile``'s own steps (end of central directory record without a comment, the zip64 locator and record
torch always writes, the "concat" offset, each directory entry with its zip64 extra field) and gives up,
returning None, at anything ``zipfile`` would treat specially or refuse (an archive comment, a short or
inconsistent record, an entry crossing the directory's end, a name with a NUL, a version zipfile refuses):
the caller then opens the archive with ``zipfile``, whose errors become the findings, as before.
"""

from __future__ import annotations

import struct
import zipfile
from dataclasses import dataclass
from typing import BinaryIO, Union

_END = struct.Struct("<4s4H2LH")
"""End of central directory record (22 bytes), as zipfile's ``structEndArchive``."""
_LOCATOR = struct.Struct("<4sLQL")
"""Zip64 end of central directory locator (20 bytes)."""
_END64 = struct.Struct("<4sQ2H2L4Q")
"""Zip64 end of central directory record (56 bytes)."""
_ENTRY = struct.Struct("<4s4B4HL2L5H2L")
"""Central directory file header (46 bytes), as zipfile's ``structCentralDir``."""
_EXTRA_HEAD = struct.Struct("<HH")
_U64 = struct.Struct("<Q")
TAIL_BYTES = 64 * 1024
"""Bytes read from the archive's end in one go: the end records and, for most checkpoints, the whole directory."""
MAX_EXTRACT_VERSION = 63
"""zipfile refuses members needing a later version (``NotImplementedError``)."""


@dataclass(slots=True)
class Member:
    """One central directory entry, with the fields of zipfile's ``ZipInfo`` a checkpoint reader uses."""

    filename: str
    flag_bits: int
    compress_type: int
    file_size: int
    compress_size: int
    header_offset: int
    CRC: int


MemberInfo = Union[zipfile.ZipInfo, Member]
"""A member as this reader or, where it gives up, ``zipfile`` describes it."""


@dataclass(frozen=True, slots=True)
class Directory:
    """Member names in directory order (duplicates kept, as ``namelist``) and the last entry of each name."""

    names: list[str]
    members: dict[str, MemberInfo]


def read_directory(fh: BinaryIO) -> Directory | None:
    """The archive's directory as ``zipfile.ZipFile(fh)`` would read it, or None to let zipfile read it."""
    size = fh.seek(0, 2)
    if size < _END.size + _LOCATOR.size + _END64.size:
        return None
    tail_size = min(size, TAIL_BYTES)
    fh.seek(size - tail_size)
    tail = fh.read(tail_size)
    if len(tail) != tail_size:
        return None
    (signature, _, _, _, _, dir_size, dir_offset, comment_size) = _END.unpack_from(tail, tail_size - _END.size)
    if signature != b"PK\x05\x06" or comment_size != 0:
        return None  # no end record at the very end: zipfile searches for one under a comment
    location = size - _END.size
    concat = location - dir_size - dir_offset
    locator = _LOCATOR.unpack_from(tail, tail_size - _END.size - _LOCATOR.size)
    if locator[0] == b"PK\x06\x07":
        if locator[1] != 0 or locator[3] > 1:
            return None  # zipfile: "zipfiles that span multiple disks are not supported"
        record = _END64.unpack_from(tail, tail_size - _END.size - _LOCATOR.size - _END64.size)
        if record[0] == b"PK\x06\x06":
            dir_size, dir_offset = record[8], record[9]
            concat = location - dir_size - dir_offset - _END64.size - _LOCATOR.size
    start = dir_offset + concat
    if start < 0 or start + dir_size > size:
        return None
    if start >= size - tail_size:
        directory = tail[start - (size - tail_size):start - (size - tail_size) + dir_size]
    else:
        fh.seek(start)
        directory = fh.read(dir_size)
    if len(directory) != dir_size:
        return None
    return _entries(directory, concat)


def _entries(directory: bytes, concat: int) -> Directory | None:
    """Each entry of the central directory, or None at the first one zipfile would read differently."""
    names: list[str] = []
    members: dict[str, MemberInfo] = {}
    pos = 0
    total = len(directory)
    while pos < total:
        if pos + _ENTRY.size > total:
            return None
        fields = _ENTRY.unpack_from(directory, pos)
        if fields[0] != b"PK\x01\x02" or fields[3] > MAX_EXTRACT_VERSION:
            return None
        name_size, extra_size, comment_size = fields[12], fields[13], fields[14]
        name_start = pos + _ENTRY.size
        after = name_start + name_size + extra_size + comment_size
        if after > total:
            return None
        raw_name = directory[name_start:name_start + name_size]
        try:
            name = raw_name.decode("utf-8") if fields[5] & 0x800 else raw_name.decode("cp437")
        except UnicodeDecodeError:
            return None
        if "\x00" in name:
            return None
        sizes = _zip64(directory[name_start + name_size:name_start + name_size + extra_size],
                       fields[11], fields[10], fields[18])
        if sizes is None:
            return None
        file_size, compress_size, header_offset = sizes
        member = Member(name, fields[5], fields[6], file_size, compress_size, header_offset + concat, fields[9])
        names.append(name)
        members[name] = member
        pos = after
    return Directory(names, members)


def _zip64(extra: bytes, file_size: int, compress_size: int, header_offset: int) -> tuple[int, int, int] | None:
    """Sizes and offset after zipfile's ``ZipInfo._decodeExtra``; None where it would raise."""
    while len(extra) >= 4:
        kind, length = _EXTRA_HEAD.unpack_from(extra)
        if length + 4 > len(extra):
            return None
        if kind == 0x0001:
            data = extra[4:length + 4]
            if file_size in (0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF):
                if len(data) < 8:
                    return None
                file_size, data = _U64.unpack_from(data)[0], data[8:]
            if compress_size == 0xFFFF_FFFF:
                if len(data) < 8:
                    return None
                compress_size, data = _U64.unpack_from(data)[0], data[8:]
            if header_offset == 0xFFFF_FFFF:
                if len(data) < 8:
                    return None
                header_offset = _U64.unpack_from(data)[0]
        extra = extra[length + 4:]
    return file_size, compress_size, header_offset
