"""``report --redact``: what should not leave the lab is removed from every string of a report.

Removed: host names, user names, the Slurm account, e-mail addresses, git remotes, and absolute paths (a path
inside the run becomes relative to it; one outside keeps only its last part). The names come from the run's own
files (provenance, event file names, ``launch.sbatch``, ``run_metadata.json``, home folders in paths) and the
login name of whoever writes the report; shapes (e-mail, git remote, absolute path) are matched anywhere.
"""

from __future__ import annotations

import getpass
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from ...model import Run

HOST = "<host>"
USER = "<user>"
ACCOUNT = "<account>"
EMAIL = "<email>"
REMOTE = "<git remote>"
OUTSIDE = "<path>"

_EMAIL = re.compile(r"[A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9\-]{1,63}(?:\.[A-Za-z0-9\-]{1,63})+")
_REMOTE = re.compile(r"(?:\bgit@[A-Za-z0-9.\-]+:[^\s'\"`<>|]+|\b(?:ssh|git|https?)://[^\s'\"`<>|]+?\.git\b)")
_ABS_PATH = re.compile(r"(?<![\w.~:/\-\\<>])(?:~/|/)(?:[^\s/'\"`|<>(),;=]+/)*[^\s/'\"`|<>(),;=]*")
"""An absolute (or ``~``) path not inside a URL or a word: ``/SITE/home/U/USER/run`` in ``cwd=/SITE/...``."""
_HOME = re.compile(r"(?:^|/)(?:home|Users)/(?:[a-z]/)?([A-Za-z][\w.\-]{1,31})(?=/|$)")
"""The user folder of a home path: ``/home/USER``, ``/Users/USER``, ``/SITE/home/U/USER`` (USER: any login name)."""
_NOT_NAMES = {"root", "user", "users", "home", "group", "data", "scratch", "work", "tmp", "shared", "public",
              "local", "opt", "lib", "bin", "sdf", "fs", "project", "projects", "nobody", "admin"}
"""Folder names a home-path rule may find that are not anyone's name (replacing them would garble text)."""
_META_KEYS = {"host": HOST, "hostname": HOST, "node": HOST, "nodename": HOST, "user": USER, "username": USER,
              "login": USER, "email": EMAIL, "account": ACCOUNT}


def _words(names: Iterable[str | None]) -> set[str]:
    return {name.strip() for name in names if name and len(name.strip()) >= 3 and name.strip().lower() not in _NOT_NAMES}


def _metadata_names(run: Run) -> dict[str, set[str]]:
    """Names ``run_metadata.json`` gives by key at its top level (host, user, account ...)."""
    found: dict[str, set[str]] = {}
    for key, value in (run.run_metadata or {}).items():
        marker = _META_KEYS.get(str(key).lower())
        if marker is not None and isinstance(value, str):
            found.setdefault(marker, set()).add(value)
    return found


def _run_paths(run: Run) -> list[str]:
    """Absolute paths the run's files name: its root here and, on the cluster, its launch folder."""
    paths = [str(run.root)]
    meta = run.run_metadata or {}
    cwd, save = meta.get("cwd"), meta.get("save_path")
    if isinstance(cwd, str) and cwd.startswith("/") and isinstance(save, str) and save:
        paths.append(str(Path(cwd) / save) if not save.startswith("/") else save)
    elif isinstance(save, str) and save.startswith("/"):
        paths.append(save)
    return [p.rstrip("/") for p in paths if p not in ("", "/")]


def _everything(run: Run) -> list[str]:
    """The strings user folders are looked for in: provenance, the sbatch text, metadata paths."""
    prov = run.provenance
    texts = [prov.cwd, prov.command, prov.launch_command, str(run.root)]
    if run.sbatch is not None:
        texts.append(run.sbatch.text)
    texts += [str(v) for v in (run.run_metadata or {}).values() if isinstance(v, str)]
    return [t for t in texts if t]


class Redactor:
    """Turns one string into its redacted form; built once per run (``for_run``)."""

    def __init__(self, names: dict[str, set[str]], run_paths: list[str]) -> None:
        self.run_paths = sorted(run_paths, key=len, reverse=True)
        pairs = [(name, marker) for marker, group in names.items() for name in group]
        pairs.sort(key=lambda pair: len(pair[0]), reverse=True)  # longest first: `node01.cluster` before `node01`
        self.markers = dict(pairs)
        self.names = (re.compile("(?<![A-Za-z0-9])(?:" + "|".join(re.escape(n) for n, _ in pairs) + ")(?![A-Za-z0-9])")
                      if pairs else None)

    @classmethod
    def for_run(cls, run: Run) -> "Redactor":
        """The names this run's files give (and the report writer's login name)."""
        prov = run.provenance
        names: dict[str, set[str]] = {HOST: set(), USER: set(), ACCOUNT: set()}
        names[HOST] |= _words([prov.host] + [f.host for f in run.event_files])
        for marker, group in _metadata_names(run).items():
            names.setdefault(marker, set()).update(_words(group))
        if run.sbatch is not None:
            names[ACCOUNT] |= _words([run.sbatch.directives.get("account"), run.sbatch.directives.get("A")])
        homes = [m.group(1) for text in _everything(run) for m in _HOME.finditer(text)]
        try:
            login = getpass.getuser()
        except (KeyError, OSError):  # no passwd entry (a container): nothing to add
            login = ""
        names[USER] |= _words([*homes, login])
        for host in list(names[HOST]):  # a short host name also hides inside its full one
            if "." in host:
                names[HOST] |= _words([host.split(".", 1)[0]])
        return cls(names, _run_paths(run))

    def __call__(self, text: str) -> str:
        """``text`` with the run's names, e-mail addresses, git remotes and absolute paths replaced."""
        if not text:
            return text
        text = _REMOTE.sub(REMOTE, text)
        text = _EMAIL.sub(EMAIL, text)
        text = _ABS_PATH.sub(self._path, text)
        if self.names is not None:
            names = self.names
            text = names.sub(lambda m: self.markers.get(m.group(0), HOST), text)
        return text

    def _path(self, match: re.Match[str]) -> str:
        path = match.group(0)
        if path in ("/", "~", "//"):
            return path
        for root in self.run_paths:
            if path == root:
                return "."
            if path.startswith(root + "/"):
                return path[len(root) + 1:]
        last = path.rstrip("/").rsplit("/", 1)[-1]
        return f"{OUTSIDE}/{last}" if last and last != "~" else OUTSIDE


def no_redaction(text: str) -> str:
    """The identity, for reports written without ``--redact``."""
    return text


Redact = Callable[[str], str]
