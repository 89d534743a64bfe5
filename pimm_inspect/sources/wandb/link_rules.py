"""What may become a W&B link or a ``wandb sync`` command: every part comes from files a colleague controls.

Rules (README, safety): a server address becomes a link only when it is ``http(s)://`` with a valid host (ASCII
host name labels, an IPv4 address or a bracketed IPv6 one), an optional port and path, and no user name,
password, query or fragment; the link is rebuilt from the parsed parts, so the host shown is the host opened.
An entity, project or run id is any text without control or invisible format characters and without
``/ \\ # ? % :``; each becomes one percent-encoded path segment (``Mancala 8`` -> ``Mancala%208``). A sync
command names existing folders whose paths are text, each shell-quoted. Anything else is refused with a reason
(a ``wandb.link-refused`` finding), never passed on.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shlex
from collections.abc import Iterable
import unicodedata
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

DEFAULT_BASE_URL = "https://wandb.ai"
_CLOUD_API_HOSTS = ("https://api.wandb.ai", "http://api.wandb.ai")
NAME_FORBIDDEN = frozenset("/\\#?%:")
"""Characters an entity, project or run id may not hold (path, query, fragment, escape and scheme syntax)."""
_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")
_PATH_SEGMENT = re.compile(r"^[A-Za-z0-9._~-]+$")
_LINK_TEXT = re.compile(r"^[A-Za-z0-9._~%!$&'()*+,;=:@/\[\]-]+$")
"""Characters a vetted link consists of (RFC 3986 unreserved, reserved and percent escapes; no space)."""


def _unsafe_char(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs")


def shown(value: str, limit: int = 60) -> str:
    """A value quoted so every character is visible (escapes for control and non-ASCII characters)."""
    text = ascii(value[:limit])
    return text + ("..." if len(value) > limit else "")


def name_problem(what: str, value: str) -> str | None:
    """Why ``value`` cannot be an entity/project/run id path segment (None when it can)."""
    if not value:
        return f"the {what} is empty"
    if value in (".", ".."):
        return f"the {what} is {value!r} (a browser would read it as a folder step, not a name)"
    bad = sorted({ch for ch in value if ch in NAME_FORBIDDEN or _unsafe_char(ch)})
    if bad:
        return (f"the {what} {shown(value)} holds {', '.join(ascii(ch) for ch in bad)} (an entity, project or run id "
                "may hold no control characters and none of / \\ # ? % :)")
    return None


def _host_problem(host: str) -> str | None:
    if host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return "its host is not a valid IPv6 address"
        return None if host.endswith("]") else "its host is not a valid IPv6 address"
    if not host.isascii():
        return "its host is not plain ASCII (write an international name as xn-- punycode)"
    if re.fullmatch(r"[0-9.]+", host):
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            return "its host is not a valid IPv4 address"
        return None
    labels = host.rstrip(".").split(".")
    if len(host) > 253 or not all(_LABEL.match(label) for label in labels):
        return "its host is not a valid host name"
    return None


def vet_base(text: str) -> tuple[str | None, str | None]:
    """(the app base to build links on, None) or (None, why it is refused) for a recorded server address."""
    raw = text.strip()
    if not raw:
        return None, "the server address is empty"
    if any(_unsafe_char(ch) or ch.isspace() or ch == "\\" for ch in raw):
        return None, f"the server address {shown(raw)} holds spaces, control characters or a backslash"
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError:
        return None, f"the server address {shown(raw)} is not a valid URL"
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        return None, (f"the server address {shown(raw)} is not http:// or https:// "
                      f"(scheme {shown(scheme) if scheme else 'missing'})")
    if "@" in parts.netloc:
        host_part = parts.netloc.rsplit("@", 1)[1]
        return None, (f"the server address {scheme}://***@{shown(host_part)[1:-1]} holds a user name or password "
                      "before the host (a link never carries them; what is shown before @ is not the host opened)")
    netloc = parts.netloc.lower()
    host = netloc.rsplit(":", 1)[0] if port is not None or netloc.endswith(":") else netloc
    problem = _host_problem(host) if host else "it has no host"
    if problem:
        return None, f"the server address {shown(raw)}: {problem}"
    if parts.query or parts.fragment or raw.endswith(("?", "#")):
        return None, f"the server address {shown(raw)} has a query or fragment"
    path = parts.path.rstrip("/")
    if path.endswith("/graphql"):
        path = path[: -len("/graphql")]
    if path and not all(_PATH_SEGMENT.match(seg) and seg not in (".", "..") for seg in path.strip("/").split("/")):
        return None, f"the server address {shown(raw)} has a path with characters a link cannot carry as they are"
    base = f"{scheme}://{host}{':' + str(port) if port is not None else ''}{path}"
    return (DEFAULT_BASE_URL if base in _CLOUD_API_HOSTS else base), None


def run_url(base: str, entity: str, project: str | None, run_id: str) -> str:
    """The run page on a vetted base, each name one percent-encoded path segment (names vetted by the caller)."""
    return "/".join((base, quote(entity, safe=""), quote(project or "uncategorized", safe=""), "runs",
                     quote(run_id, safe="")))


def build_link(base_text: str | None, entity: str, project: str | None, run_id: str,
               where: str) -> tuple[str | None, list[str]]:
    """(the run page, []) or (None, reasons naming ``where`` each part came from)."""
    problems: list[str] = []
    base: str | None = DEFAULT_BASE_URL
    if base_text is not None:
        base, problem = vet_base(base_text)
        if problem:
            problems.append(problem)
    for what, value in (("entity", entity), ("project", project), ("run id", run_id)):
        problem = name_problem(what, value) if value is not None else None
        if problem:
            problems.append(problem)
    if problems or base is None:
        return None, [f"{p} ({where})" for p in problems]
    return run_url(base, entity, project, run_id), []


def parse_logged_link(url: str) -> tuple[str, str, str, str] | None:
    """(base, entity, project, run id) of a run page URL printed in a log, names unquoted; None if not one."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    segments = parts.path.strip("/").split("/")
    if len(segments) < 4 or segments[-2] != "runs" or parts.query or parts.fragment:
        return None
    base = f"{parts.scheme}://{parts.netloc}" + "".join("/" + seg for seg in segments[:-4])
    return base, unquote(segments[-4]), unquote(segments[-3]), unquote(segments[-1])


def vetted_link(url: str | None) -> bool:
    """True when ``url`` is a link these rules build: http(s), a valid host, no userinfo, no space or control."""
    if not url or not _LINK_TEXT.match(url):
        return False
    parsed = parse_logged_link(url)
    if parsed is None:
        return False
    base, _problem = vet_base(parsed[0])
    return base is not None and not any(name_problem("part", p) for p in parsed[1:])


def sync_command(folders: list[Path]) -> tuple[str | None, str | None]:
    """(``wandb sync`` naming each existing folder by absolute path, shell-quoted; None) or (None, why not)."""
    paths = []
    for folder in folders:
        path = Path(folder).absolute().as_posix()
        if not os.path.isdir(path):
            return None, f"the folder {shown(path)} does not exist here"
        paths.append(shell_word(path))
    return "wandb sync " + " ".join(paths), None


def shell_word(path: str) -> str:
    """``shlex.quote(path)``; a path holding bytes that are not UTF-8 or characters that are not plain text is
    written in bash/zsh's ``$'...'`` with ``\\xNN`` escapes, which names exactly those bytes (quoted as text, the
    command would name a folder that does not exist, or carry control characters into the terminal)."""
    if not any(_unsafe_char(ch) for ch in path):
        return shlex.quote(path)
    raw = os.fsencode(path)
    return "$'" + "".join(chr(b) if 0x20 <= b < 0x7F and b not in b"'\\" else f"\\x{b:02x}" for b in raw) + "'"


_ANSI_C_WORD = re.compile(r"\$'/(?:[\x20-\x26\x28-\x5b\x5d-\x7e]|\\x[0-9a-f]{2})*'")
"""A ``shell_word`` in ``$'...'`` form: printable ASCII but quote and backslash, and ``\\xNN`` escapes."""


def vetted_command(command: str | None) -> bool:
    """True when ``command`` is a ``wandb sync`` these rules build (no control characters; each path shell-quoted or
    a ``$'...'`` word of printable ASCII and ``\\xNN`` escapes)."""
    if not command or not command.startswith("wandb sync ") or any(_unsafe_char(ch) for ch in command):
        return False
    text = command[len("wandb sync "):]
    pieces: list[str] = []
    position = 0
    while position < len(text):
        match = _ANSI_C_WORD.match(text, position)
        if match is not None:
            pieces.append("/ansi")  # a vetted $'...' word names an absolute path
            position = match.end()
        else:
            end = text.find(" $'", position)
            chunk = text[position:] if end < 0 else text[position:end]
            try:
                pieces += shlex.split(chunk)
            except ValueError:
                return False
            position += len(chunk)
        while position < len(text) and text[position] == " ":
            position += 1
    return bool(pieces) and all(w.startswith("/") for w in pieces)


def id_projects(pairs: Iterable[tuple[str | None, str | None]]) -> list[str]:
    """The ``entity/project`` places one W&B id was used in, oldest first, from each folder's (entity, project).

    A folder that records no entity logged to the default entity: it is the same place as a folder of that project
    whose entity is recorded, so it is not a project of its own (``?/Mancala`` beside ``team/Mancala`` is one run);
    a project whose entity no folder records is ``?/project``. Folders without a project say nothing.
    """
    seen = [(entity or None, project) for entity, project in pairs if project]
    known = {project for entity, project in seen if entity}
    out: list[str] = []
    for entity, project in seen:
        if entity is None and project in known:
            continue
        key = f"{entity or '?'}/{project}"
        if key not in out:
            out.append(key)
    return out
