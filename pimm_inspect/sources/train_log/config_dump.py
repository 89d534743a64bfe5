"""The ``Config:`` dump pimm logs at every process start, one per train.log attempt, parsed without executing it.

The dump is Python source (``key = value`` lines, ``dict(...)`` calls, lists). It is parsed (the plain literal
shapes by ``_dump_literals``, anything else with ``ast``) and only literals are taken: ``dict(k=v)`` becomes a dict, anything else (a call, a name, an expression) is kept
as its source text. Only the head of each attempt is read (bounded), never the whole log.
"""

from __future__ import annotations

import ast
import io
import re
from pathlib import Path
from typing import Any, BinaryIO, Iterable

from ...model import ConfigDoc, Finding, Severity
from .._common import UnreadableFile, file_finding, open_regular
from ._dump_literals import parse_literals
from ._handoff import take

MAX_HEAD_LINES = 200
"""Lines after an attempt's first line searched for ``Config:``."""
MAX_DUMP_BYTES = 1024 * 1024
"""A dump longer than this is cut (and reported)."""
MAX_DEPTH = 60
_PREFIX = re.compile(rb"^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")
_CONFIG_LINE = re.compile(rb"\] Config:[ \t]*$")
_NEXT_RECORD = re.compile(rb"\n(?=\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})")
"""The newline before a line ``_PREFIX`` matches (the dump's end)."""
_LINE_BYTES = 64 * 1024
"""Lines are read in pieces of at most this many bytes (a longer line is several)."""


def _literal(node: ast.AST, text: str, depth: int = 0) -> Any:
    """A plain value for a literal node; ``dict(k=v)`` as a dict; else the node's source text."""
    if depth > MAX_DEPTH:
        return ast.get_source_segment(text, node)
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, (str, int, float, bool, type(None))) else repr(node.value)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [_literal(e, text, depth + 1) for e in node.elts]
    if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
        keys = [_literal(k, text, depth + 1) for k in node.keys if k is not None]  # none is None (checked above)
        if all(isinstance(k, (str, int, float, bool)) for k in keys):
            return {k: _literal(v, text, depth + 1) for k, v in zip(keys, node.values)}
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args
            and all(kw.arg for kw in node.keywords)):
        return {kw.arg: _literal(kw.value, text, depth + 1) for kw in node.keywords}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, (int, float)):
        return -node.operand.value
    return ast.get_source_segment(text, node)


def parse_dump(text: str) -> dict[str, Any] | None:
    """``key = value`` assignments of a config dump as a dict (None when the text is not Python).

    The plain literal shapes pimm writes are read without an AST (``_dump_literals``, several times faster);
    anything else is parsed with ``ast`` (``parse_dump_ast``), which gives the same for those shapes."""
    fast = parse_literals(text)
    return fast if fast is not None else parse_dump_ast(text)


def parse_dump_ast(text: str) -> dict[str, Any] | None:
    """``parse_dump`` through ``ast.parse``: literals as values, any other expression as its source text."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    out: dict[str, Any] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            try:
                out[stmt.targets[0].id] = _literal(stmt.value, text)
            except RecursionError:
                out[stmt.targets[0].id] = None
    return out


def _dump_at(fh: BinaryIO, offset: int) -> tuple[str | None, int | None, bool]:
    """(dump text, 0-based line index of the ``Config:`` line from ``offset``, cut) of the attempt starting there."""
    fh.seek(offset)
    for index in range(MAX_HEAD_LINES):
        line = fh.readline(_LINE_BYTES)
        if not line:
            return None, None, False
        if index and line.startswith(b"[") and b"=> Loading config" in line:
            return None, None, False  # the next attempt started: this one logged no dump
        if _CONFIG_LINE.search(line.rstrip(b"\r\n")):
            break
    else:
        return None, None, False
    start = fh.tell()
    data = fh.read(_LINE_BYTES)
    end = 0 if _PREFIX.match(data) else _NEXT_RECORD.search(data)
    if end is not None or len(data) < _LINE_BYTES:  # the dump ends in what was read: no line in it is cut
        stop = len(data) if end is None else end if isinstance(end, int) else end.start() + 1
        return data[:stop].decode("utf-8", errors="replace"), index, False
    fh.seek(start)  # a dump longer than that: line by line, as it was always read
    body, size, cut = [], 0, False
    while True:
        line = fh.readline(_LINE_BYTES)
        if not line or _PREFIX.match(line):
            break
        size += len(line)
        if size > MAX_DUMP_BYTES:
            cut = True
            break
        body.append(line)
    return b"".join(body).decode("utf-8", errors="replace"), index, cut


def read_config_dumps(path: Path, rel_path: str, segments: Iterable[Any]) -> tuple[list[ConfigDoc], list[Finding]]:
    """One ``log_config`` document per attempt that logged a ``Config:`` dump (``attempt`` set)."""
    docs: list[ConfigDoc] = []
    findings: list[Finding] = []
    read = take(segments, path)  # the bytes these segments were just read from, when the log was small
    fh: BinaryIO
    if read is not None:
        fh = io.BytesIO(read)
    else:
        try:
            fh = open_regular(path, rel_path)  # never a FIFO or a link out of the run swapped in since the log's read
        except (UnreadableFile, OSError):
            return docs, findings  # the train.log reader already reports an unreadable file
    with fh:
        for seg in segments:
            try:
                text, _index, cut = _dump_at(fh, int(seg.start_offset))
            except OSError:
                break
            if text is None:
                continue
            data = parse_dump(text)
            if cut:
                findings.append(file_finding(
                    "file.corrupt", rel_path, f"{rel_path}: attempt {seg.index}'s Config: dump is over "
                    f"{MAX_DUMP_BYTES} bytes; only its start was read", severity=Severity.INFO))
            docs.append(ConfigDoc(rel_path, "log_config", data, None if data is not None else text, attempt=seg.index))
    return docs, findings
