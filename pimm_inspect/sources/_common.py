"""Helpers shared by the readers: safe opening, file findings, caps."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path, PosixPath
from typing import Any, BinaryIO

from ..model import Finding, Severity
from ._limits import parse_json_bounded
from .confine import link_target_text, opened_path, outside_real

MAX_JSON_BYTES = 64 * 1024 * 1024
"""JSON documents larger than this are not parsed (a finding says so)."""
MAX_TEXT_BYTES = 16 * 1024 * 1024
"""Text files scanned for facts (W&B console and debug logs) are read up to this size."""
MAX_SHOWN_TEXT_BYTES = 4 * 1024 * 1024
"""Text documents shown verbatim and scanned for secrets line by line (``config.py``, ``launch.sbatch``) are read
up to this size: real ones are a few KiB, and masking a hostile one costs about 1 s per MiB."""


_POSIX_PATH = PosixPath if os.name == "posix" else None


class UnreadableFile(Exception):
    """Raised by ``open_regular`` with a ready-made finding."""

    def __init__(self, finding: Finding):
        super().__init__(finding.message)
        self.finding = finding


def file_finding(code: str, rel_path: str, message: str, explanation: str = "",
                 severity: Severity = Severity.WARNING) -> Finding:
    """A ``file.*`` finding about one file."""
    return Finding(code=code, severity=severity, message=message, paths=(rel_path,),
                   explanation=explanation)


def rel(path: Path, root: Path) -> str:
    """POSIX path of ``path`` relative to ``root`` (or its name when outside)."""
    if type(path) is _POSIX_PATH and type(root) is _POSIX_PATH:
        # The usual case by string: a Path's text is normalised (no ``//``, ``.`` or trailing ``/``), so a root's
        # text plus ``/`` starting the path's text is exactly ``relative_to``'s parts test (3x cheaper).
        whole, base = str(path), str(root)
        if whole.startswith(base) and base.startswith("/") and base != "/":
            if len(whole) == len(base):
                return "."
            if whole[len(base)] == "/":
                return whole[len(base) + 1:]
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.name


def outside_finding(path: Path, rel_path: str, real: str | None = None) -> Finding:
    """``file.outside-run``: the file is a link that leaves the run; named with its target, not read."""
    target = link_target_text(path) if os.path.islink(path) or real is None else real
    return file_finding("file.outside-run", rel_path,
                        f"{rel_path} is a link to {target}, outside the run; not read",
                        "Links that leave a run directory are shown, never followed: a run written by someone "
                        "else could point at your files (keys, credentials). Open the target directly if you "
                        "mean to inspect it.")


_O_PATH = getattr(os, "O_PATH", 0)
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)


def open_regular(path: Path, rel_path: str, root: Path | None = None) -> BinaryIO:
    """Open a regular file of the run for binary reading: what is read is what was checked, and nothing blocks.

    The path is first opened with ``O_PATH`` (which opens nothing: no FIFO blocks, no device acts) and that
    descriptor is checked: ``fstat`` says a regular file, the kernel's real path of it is inside the run (or
    ``root``). Then the path is opened for reading with ``O_NONBLOCK`` and the descriptor read from must be the
    very inode checked (device and inode compared), else it is refused: a file swapped for a link out of the run
    or for a FIFO between the check and the open is never read and never blocks. Without ``O_PATH`` the file is
    opened ``O_NONBLOCK`` at once and that descriptor is checked. Refusals are ``file.unreadable`` (not a regular
    file, vanished, changed while opened, no permission) or ``file.outside-run`` (named with its target).
    """
    fd, _st = _open_checked(path, rel_path, root)
    try:
        return open(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _open_checked(path: Path, rel_path: str, root: Path | None) -> tuple[int, os.stat_result]:
    """``open_regular``'s checks: the descriptor opened for reading (blocking again) and its ``fstat``."""
    name = os.fspath(path)  # once: each call given a ``Path`` converts it again
    try:
        probe = os.open(name, (_O_PATH or _READ_FLAGS) | os.O_CLOEXEC)
    except FileNotFoundError:
        raise UnreadableFile(file_finding("file.unreadable", rel_path, f"{rel_path}: file vanished or is a dangling link"))
    except OSError as exc:
        raise UnreadableFile(file_finding("file.unreadable", rel_path, f"{rel_path}: cannot open ({exc.strerror})"))
    fd = probe
    try:
        st = os.fstat(probe)
        real = opened_path(probe, path)
        if outside_real(real, root) is not None:  # a link out of the run (even to /dev/zero) is named with its target
            raise UnreadableFile(outside_finding(path, rel_path, real))
        if not stat.S_ISREG(st.st_mode):
            raise UnreadableFile(file_finding("file.unreadable", rel_path, f"{rel_path}: not a regular file"))
        if _O_PATH:
            try:
                fd = os.open(name, _READ_FLAGS)
            except OSError as exc:
                fd = probe
                raise UnreadableFile(file_finding("file.unreadable", rel_path, f"{rel_path}: cannot open ({exc.strerror})"))
            os.close(probe)
            opened = os.fstat(fd)
            if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino) or not stat.S_ISREG(opened.st_mode):
                raise UnreadableFile(file_finding(
                    "file.unreadable", rel_path, f"{rel_path}: replaced while it was being opened; not read",
                    "The file changed between the check and the open (another process replaced it, perhaps with a "
                    "link out of the run or a FIFO): it is not read. Run the command again once it is stable."))
            st = opened
        os.set_blocking(fd, True)
        return fd, st
    except BaseException:
        os.close(fd)
        raise


def _read_fd(fd: int, count: int, size: int) -> bytes:
    """Up to ``count`` bytes, to the end of the file, read straight from the descriptor (no file object around it),
    without making room for ``count`` bytes up front when the file is far smaller (a read of 64 MiB would allocate
    64 MiB first): ``size`` is the file's size when opened, and the first read asks for one byte more, to see
    whether it grew since."""
    first = os.read(fd, min(count, size + 1))
    if not first or len(first) >= count:
        return first
    parts, got = [first], len(first)
    while got < count:
        piece = os.read(fd, min(count - got, max(size + 1 - got, 1 << 16)))
        if not piece:
            break
        parts.append(piece)
        got += len(piece)
    return b"".join(parts)


def read_bytes_capped(path: Path, rel_path: str, cap: int) -> tuple[bytes, list[Finding]]:
    """Read up to ``cap`` bytes of a regular file (``open_regular``'s checks); findings for empty/huge/unreadable."""
    findings: list[Finding] = []
    try:
        fd, st = _open_checked(path, rel_path, None)
    except UnreadableFile as exc:
        return b"", [exc.finding]
    except OSError as exc:
        return b"", [file_finding("file.unreadable", rel_path, f"{rel_path}: read failed ({exc.strerror})")]
    try:
        data = _read_fd(fd, cap + 1, st.st_size)
    except OSError as exc:
        return b"", [file_finding("file.unreadable", rel_path, f"{rel_path}: read failed ({exc.strerror})")]
    finally:
        os.close(fd)
    if not data:
        findings.append(file_finding("file.empty", rel_path, f"{rel_path} is empty", severity=Severity.INFO))
    if len(data) > cap:
        findings.append(file_finding("file.truncated", rel_path,
                                     f"{rel_path} is larger than {cap // (1024 * 1024)} MiB; only the start was read"))
        data = data[:cap]
    return data, findings


def decode_text(data: bytes, rel_path: str) -> tuple[str, list[Finding]]:
    """Decode UTF-8, replacing bad bytes and saying so."""
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError as exc:
        return data.decode("utf-8", errors="replace"), [
            file_finding("file.corrupt", rel_path,
                         f"{rel_path} is not valid UTF-8 (first bad byte at offset {exc.start}); bad bytes replaced",
                         severity=Severity.INFO)]


def scan_json_nesting(text: str) -> tuple[int, int, bool]:
    """(deepest bracket nesting, nesting at the end, ends inside a string) of a JSON text, strings ignored."""
    depth = worst = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            worst = max(worst, depth)
        elif ch in "]}":
            depth -= 1
    return worst, depth, in_string


@dataclass(frozen=True, slots=True)
class JsonResult:
    """Parsed JSON (None when unusable) plus findings."""

    data: Any
    findings: list[Finding]


def read_json(path: Path, rel_path: str) -> JsonResult:
    """Read a JSON document safely: byte, value-count, parsed-size and depth caps, NaN allowed, findings for damage.

    A document over a cap is not parsed (``file.over-limit``), except one only too deep, which is kept cut at
    the depth cap; both name the file.
    """
    data, findings = read_bytes_capped(path, rel_path, MAX_JSON_BYTES)
    if not data or any(f.code == "file.truncated" for f in findings):
        return JsonResult(None, findings)
    text, more = decode_text(data, rel_path)
    del data
    findings += more
    parsed, code, reason = parse_json_bounded(text)
    if code:
        findings.append(file_finding(code, rel_path, f"{rel_path}: {reason}",
                                     "" if code == "file.invalid-json" else LIMIT_EXPLANATION))
    return JsonResult(parsed, findings)


LIMIT_EXPLANATION = ("pimm-inspect bounds what it reads from a run so a damaged or hostile file cannot exhaust "
                     "memory or time; the limits are listed in the README's Safety section.")
