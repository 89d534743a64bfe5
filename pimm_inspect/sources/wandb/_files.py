"""The text side of a W&B run folder: files/, logs/, console lines, dropped-step warnings."""

from __future__ import annotations

import collections
import configparser
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...model import ConfigDoc, Finding, SourceFile
from .._common import MAX_SHOWN_TEXT_BYTES, MAX_TEXT_BYTES, decode_text, read_bytes_capped, read_json

MAX_CONSOLE_LINES = 5000
"""Console lines kept per run (the last ones); warnings are scanned in all of them."""

DROPPED_STEP_WARNING = re.compile(
    r"Tried to log to step (\d+) that is less than the current step (\d+)\. "
    r"Steps must be monotonically increasing, so this data will be ignored\.[^\n]*")
"""wandb-core's console warning (wandb 0.31) when ``run.log(step=...)`` goes backwards."""
_CORE_DROP = re.compile(r'ignoring partial history record"[^\n]*?"step":(\d+)[^\n]*?"current":(\d+)')
_FINISHING = re.compile(r"\] finishing run ([^\s/]+)/([^\s/]+)/([^/\n]+?)[ \t\r]*$", re.M)
"""debug.log's ``finishing run entity/project/id`` (online runs; offline ones print ``project/id``)."""
_UNKNOWN_ENTITY = re.compile(r"entity ([^\n\"]+?) not found during upsertBucket")
"""The server's refusal; the entity may hold spaces (``entity pimm team/proj not found ...``)."""
_RUN_URL = re.compile(r"https?://[^\s/'\"<>]+/[^\s/'\"<>]+/[^\s/'\"<>]+/runs/([^\s/'\"<>?#]+)")
"""A run page URL as the client prints it (the id percent-encoded or not; compared unquoted)."""

_ROLES = {
    "files/config.yaml": "config as W&B saved it for upload (YAML, one {value: ...} per key)",
    "files/wandb-summary.json": "final summary: the last value of every logged key",
    "files/wandb-metadata.json": "launch metadata: program, args, host, git, Python, hardware",
    "files/output.log": "captured console output (stdout and stderr) of the training process",
    "files/requirements.txt": "pip freeze of the training environment",
    "logs/debug.log": "W&B client debug log (Python side: init, settings, finish)",
    "logs/debug-internal.log": "wandb-core service log (JSON lines); notes rows it ignored",
    "logs/debug-core.log": "link to the wandb-core process log in the W&B cache directory",
}


@dataclass(frozen=True, slots=True)
class ConsoleLine:
    """One line of captured console output."""

    stream: str
    """stdout or stderr."""
    text: str
    timestamp_s: float | None = None


@dataclass(frozen=True, slots=True)
class DroppedStep:
    """A ``run.log`` call W&B ignored because its step was below the current one."""

    step: int
    current_step: int
    source: str
    """Run-relative file where the evidence was found."""
    message: str


class ConsoleCollector:
    """Assembles console chunks into lines (keeping the last N) and spots step warnings."""

    def __init__(self, source: str, cap: int = MAX_CONSOLE_LINES):
        self.source = source
        self.lines: collections.deque[ConsoleLine] = collections.deque(maxlen=cap)
        self.total = 0
        self.dropped: list[DroppedStep] = []
        self._partial: dict[str, tuple[str, float | None]] = {}

    def feed(self, stream: str, text: str, timestamp_s: float | None) -> None:
        """Add a chunk of console text (a raw chunk or a whole line)."""
        prev, prev_ts = self._partial.pop(stream, ("", None))
        text = prev + text
        ts = prev_ts if prev else timestamp_s
        *complete, rest = text.split("\n")
        for line in complete:
            self._emit(stream, line, ts)
            ts = timestamp_s
        if rest:
            self._partial[stream] = (rest, ts)

    def _emit(self, stream: str, line: str, ts: float | None) -> None:
        # Progress bars rewrite the line with \r; a terminal shows the last rewrite.
        line = line.rstrip("\r")
        if "\r" in line:
            line = line.rsplit("\r", 1)[1]
        self.total += 1
        self.lines.append(ConsoleLine(stream, line, ts))
        if "Tried to log to step" in line:
            self.dropped.extend(_dropped_from_text(line, self.source))

    def view(self) -> tuple[list[ConsoleLine], int, list[DroppedStep]]:
        """Lines, line count and dropped steps so far, unterminated lines included, without closing.

        A live log is read again from where it stopped, so a line cut at the end must stay open.
        """
        partial = [ConsoleLine(stream, rest.rsplit("\r", 1)[-1], ts) for stream, (rest, ts) in self._partial.items()]
        dropped = list(self.dropped)
        for line in partial:
            dropped += _dropped_from_text(line.text, self.source)
        lines = (list(self.lines) + partial)[-self.lines.maxlen:] if self.lines.maxlen else list(self.lines) + partial
        return lines, self.total + len(partial), dropped

    def close(self) -> None:
        """Flush unterminated lines."""
        for stream, (rest, ts) in list(self._partial.items()):
            self._emit(stream, rest, ts)
        self._partial.clear()


def _dropped_from_text(text: str, source: str) -> list[DroppedStep]:
    """Dropped-step warnings in console text."""
    return [DroppedStep(int(m.group(1)), int(m.group(2)), source, m.group(0))
            for m in DROPPED_STEP_WARNING.finditer(text)]


@dataclass(slots=True)
class RunFiles:
    """What the text files of one run folder contributed."""

    sources: list[SourceFile] = field(default_factory=list)
    roles: dict[str, str] = field(default_factory=dict)
    configs: list[ConfigDoc] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    summary_json: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    output_log: ConsoleCollector | None = None
    core_dropped: list[DroppedStep] = field(default_factory=list)
    logged_urls: list[str] = field(default_factory=list)
    settings: dict[str, str] = field(default_factory=dict)
    """``[default]`` section of the ``settings`` file next to the run folders (base_url, entity, project)."""
    synced: bool = False
    server_contact: str | None = None
    """Evidence from logs/debug-internal.log that wandb-core talked to a W&B server (file and message)."""
    server_rejection: str | None = None
    """The server's refusal to create the run (e.g. ``entity x not found during upsertBucket``, HTTP 404)."""
    server_api_url: str | None = None
    """The API URL wandb-core named in debug-internal.log (only logged with HTTP errors)."""
    finished_entity: tuple[str, str, str] | None = None
    """(entity, project, file) from debug.log's ``finishing run entity/project/id`` line of this run."""
    resumed_line: str | None = None
    """``logs/debug.log:N`` where this folder's own ``wandb.init`` logged ``run resumed`` (the server continued the id)."""
    reinit_line: str | None = None
    """``logs/debug.log:N`` where this folder's own ``wandb.init`` logged ``wandb.init() called when a run is still
    active``: a second init inside a process whose run was still active, which returned that run (no new process)."""
    exit_line: tuple[int, str] | None = None
    """(exit code, ``logs/debug.log:N``) from this folder's own ``got exitcode: N`` line (``_atexit_cleanup``)."""
    core_start_s: float | None = None
    """When wandb-core started this folder's stream: the first line of logs/debug-internal.log, UTC seconds; only a
    time written with its zone (wandb-core's JSON lines: ``Z`` or ``+01:00``), never a local clock (wandb <= 0.17)."""


def _source(path: Path, rel_path: str, kind: str, bytes_read: int = 0) -> SourceFile | None:
    """A SourceFile for a regular file (None for links, FIFOs and vanished files)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return SourceFile(rel_path, kind, st.st_size, st.st_mtime, bytes_read)


def _text(path: Path, rel_path: str, out: RunFiles, cap: int = MAX_TEXT_BYTES) -> str | None:
    """Capped, decoded text of a file; damage goes to ``out.findings``."""
    data, findings = read_bytes_capped(path, rel_path, cap)
    out.findings += [f for f in findings if f.code != "file.empty"]
    text, more = decode_text(data, rel_path)
    out.findings += more
    return text


def read_run_files(run_dir: Path, rel_path: str, run_id: str | None) -> RunFiles:
    """Read files/ and logs/ of a run folder (never the ``.wandb`` log itself)."""
    out = RunFiles()
    prefix = f"{rel_path}/" if rel_path not in ("", ".") else ""
    for sub in ("files", "logs"):
        folder = run_dir / sub
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            path = folder / name
            key = f"{sub}/{name}"
            rel = prefix + key
            if path.is_symlink():
                if key in _ROLES:
                    out.roles[rel] = _ROLES[key] + " (a link; not followed)"
                continue
            src = _source(path, rel, "wandb")
            if src is None:
                continue
            out.roles[rel] = _ROLES.get(key) or (
                "file saved by the run (media, wandb.save, artifacts)" if sub == "files" else "W&B log file")
            out.sources.append(src)
            if key == "files/config.yaml":
                # stdlib has no YAML parser: keep the text; the decoded config comes from the log.
                out.configs.append(ConfigDoc(rel, "wandb_config", None, _text(path, rel, out, MAX_SHOWN_TEXT_BYTES)))
            elif key in ("files/wandb-summary.json", "files/wandb-metadata.json"):
                doc = read_json(path, rel)
                out.findings += [f for f in doc.findings if f.code != "file.empty"]
                if isinstance(doc.data, dict):
                    if key.endswith("summary.json"):
                        out.summary_json = doc.data
                    else:
                        out.metadata = doc.data
            elif key == "files/output.log":
                text = _text(path, rel, out) or ""
                collector = ConsoleCollector(rel)
                collector.feed("stdout", text, None)
                collector.close()
                out.output_log = collector
                out.logged_urls += _urls(text, run_id)
            elif sub == "logs" and name.endswith(".log"):
                text = _text(path, rel, out) or ""
                if name == "debug-internal.log":
                    _server_facts(text, rel, out)
                    out.core_start_s = core_start_s(text)
                elif name == "debug.log":
                    _finishing_entity(text, rel, run_id, out)
                    _own_init(text, rel, run_dir.name, out)
                out.core_dropped += [DroppedStep(int(m.group(1)), int(m.group(2)), rel, m.group(0))
                                     for m in _CORE_DROP.finditer(text)]
                out.logged_urls += _urls(text, run_id)
    out.synced = any(run_dir.glob("*.wandb.synced"))
    for marker in sorted(run_dir.glob("*.wandb.synced")):
        out.roles[prefix + marker.name] = "marker left by `wandb sync`: this run was uploaded"
    out.settings = _settings(run_dir.parent / "settings")
    return out


_SERVER_NEEDLES = ("filestream:", "api:", "runupserter:", "sender: upsert", '"url"', "upsertBucket")


def _server_facts(text: str, rel_path: str, out: RunFiles) -> None:
    """What wandb-core's JSON-lines log says about the server: contact, rejection, API URL."""
    import json

    if "upsertBucket" in text and out.server_rejection is None:
        _python_log_rejection(text, out)  # wandb <= 0.17: Python logging text, not JSON lines
    for line in text.splitlines():
        # Only lines that can hold one of these facts are parsed (a long run writes thousands of
        # flow-control lines); wandb-core's JSON writes these names and prefixes literally.
        if '"msg"' not in line or not any(needle in line for needle in _SERVER_NEEDLES):
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        message = str(entry.get("msg", ""))
        if message.startswith(("filestream:", "api:", "runupserter:", "sender: upsert")) and out.server_contact is None:
            status = f" ({entry['status']})" if "status" in entry else ""
            out.server_contact = f"{rel_path}: {message}{status}"
        if isinstance(entry.get("url"), str) and out.server_api_url is None:
            out.server_api_url = entry["url"]
        error = str(entry.get("error", ""))
        if message.startswith("runupserter: failed to init run") or "upsertBucket" in error:
            found = _UNKNOWN_ENTITY.search(error)
            http = re.search(r"returned error (\d{3})", error)
            reason = found.group(0) if found else error[:200]
            out.server_rejection = f"{reason}" + (f" (HTTP {http.group(1)})" if http else "")


_CORE_TIME = re.compile(r'^\{"time":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?)(Z|[+-]\d\d:\d\d)"')


def core_start_s(text: str) -> float | None:
    """The zoned time of wandb-core's first log line (``{"time":"2026-12-01T08:02:29.127030244Z",...``) in UTC
    seconds, or None (no such line, a Python logging line without a zone, or a time that is no date)."""
    from datetime import datetime

    match = _CORE_TIME.match(text)
    if match is None:
        return None
    stamp, zone = match.groups()
    if "." in stamp:
        stamp = stamp[:stamp.index(".") + 7]  # microseconds: what datetime keeps of wandb-core's nanoseconds
    try:
        return datetime.fromisoformat(stamp + ("+00:00" if zone == "Z" else zone)).timestamp()
    except (ValueError, OverflowError):
        return None


_HTTP_STATUS = re.compile(r"\b(\d{3}) response executing GraphQL|\(Error (\d{3})\b|\b(\d{3}) Client Error")


def _python_log_rejection(text: str, out: RunFiles) -> None:
    """The server's refusal as the Python sender (wandb 0.17 and older) logs it: the GraphQL error body
    (``entity X not found during upsertBucket``) and the HTTP status on the lines around it."""
    found = _UNKNOWN_ENTITY.search(text)
    if found is None:
        return
    status = next((g for m in _HTTP_STATUS.finditer(text) for g in m.groups() if g), None)
    out.server_rejection = found.group(0) + (f" (HTTP {status})" if status else "")


def _finishing_entity(text: str, rel_path: str, run_id: str | None, out: RunFiles) -> None:
    """The entity/project of an online run from debug.log's ``finishing run`` line (the run record may lack it)."""
    for match in _FINISHING.finditer(text):
        if run_id is None or match.group(3) == run_id:
            out.finished_entity = (match.group(1), match.group(2), rel_path)


_LOG_SETUP = re.compile(r"Logging user logs to (.+?)[ \t\r]*$")
_EXIT_CODE = re.compile(r"\] got exitcode: (-?\d{1,9})[ \t\r]*$")
_SEP = re.compile(r"[\\/]")


def _own_init(text: str, rel_path: str, folder: str, out: RunFiles) -> None:
    """What this folder's own ``wandb.init`` logged in debug.log: ``run resumed``, ``wandb.init() called when a run
    is still active``, and the exit code its process ended with (``got exitcode: N``). A debug.log can hold later inits of the same process (each names its own folder in ``Logging
    user logs to <folder>/logs/debug.log``): only the lines from this folder's own set-up to the next one count."""
    mine = False
    for number, line in enumerate(text.splitlines(), start=1):
        setup = _LOG_SETUP.search(line) if "Logging user logs to" in line else None
        if setup is not None:
            parts = _SEP.split(setup.group(1))
            mine = len(parts) >= 3 and parts[-3] == folder
            continue
        if not mine:
            continue
        if "] run resumed" in line and out.resumed_line is None:
            out.resumed_line = f"{rel_path}:{number}"
        elif "wandb.init() called when a run is still active" in line and out.reinit_line is None:
            out.reinit_line = f"{rel_path}:{number}"
        elif "got exitcode:" in line and (code := _EXIT_CODE.search(line)) is not None:
            out.exit_line = (int(code.group(1)), f"{rel_path}:{number}")


def _urls(text: str, run_id: str | None) -> list[str]:
    """Run page URLs printed in a log (only those of this run id, when known)."""
    from urllib.parse import unquote

    return [m.group(0).rstrip(".,)") for m in _RUN_URL.finditer(text)
            if run_id is None or unquote(m.group(1).rstrip(".,)")) == run_id]


def _settings(path: Path) -> dict[str, str]:
    """The ``[default]`` section of a W&B directory ``settings`` file, if any."""
    data, findings = read_bytes_capped(path, "settings", 1024 * 1024)
    if not data or findings:
        return {}
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(data.decode("utf-8", errors="replace"))
    except configparser.Error:
        return {}
    if not parser.has_section("default"):
        return {}
    return {k: v for k, v in parser.items("default") if k in ("base_url", "entity", "project")}
