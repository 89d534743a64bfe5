"""Which names say secret: a key or flag name's words (``api-key``, ``X-Auth-Token``, ``wandb.key``), the bare flags
that name a credential only as flags (``--key``, ``--pat``, ``-p``), and the command-line shapes of a user's password
(``curl -u user:password``, MySQL's ``-pPASSWORD``). The masking rules that use them are in ``secrets``."""

from __future__ import annotations

import re
from functools import lru_cache

_SECRET_PARTS = ("password", "passwd", "passphrase", "secret", "apikey", "accesskey", "privatekey", "sshkey",
                 "credential", "authorization", "authtoken", "wandbkey", "apitoken", "accesstoken", "sessionkey")
_SECRET_WORDS = {"pass", "pwd", "pw", "token", "auth", "jwt", "bearer", "cookie"}
_BENIGN_BEFORE = {"pad", "eos", "bos", "unk", "mask", "sep", "cls", "special", "start", "end", "max", "num", "n",
                  "image", "video", "audio", "vision", "prompt", "decoder", "encoder", "vocab", "first", "last",
                  "extra", "total", "per", "min", "by", "no", "use", "drop", "class"}
_BENIGN_AFTER = {"id", "ids", "len", "length", "count", "counts", "type", "limit", "num", "size", "index", "dim",
                 "file", "path", "env", "var", "name", "names", "rate", "level", "method", "mode", "enabled", "at",
                 "k", "policy", "strength", "min", "max", "required", "expires", "expiry", "url", "host", "budget",
                 "per", "ratio", "dropout", "embedding", "embeddings", "weight", "weights", "loss", "prob"}
_PLAIN_WORDS = {"pass", "pw", "token", "auth", "cookie"}
"""Secret words whose numeric values are counts, not secrets (``token: 5``); a password of digits is still a password."""
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")


@lru_cache(maxsize=8192)  # the same few names come back on every line of a log
def secret_name(name: str) -> bool:
    """True when a key or flag name says its value is a secret (``api-key``, ``X-Auth-Token``, ``wandb.key``)."""
    words = [w.lower() for w in _WORD_SPLIT.split(name[:200]) if w]
    return _name_words_secret(words)


def _name_words_secret(words: list[str]) -> bool:
    joined = "".join(words)
    if joined.startswith("xauth"):
        return True
    for i, word in enumerate(words):
        before = words[i - 1] if i else ""
        after = words[i + 1] if i + 1 < len(words) else ""
        if after in _BENIGN_AFTER or before in _BENIGN_BEFORE:
            continue
        if word in _SECRET_WORDS or any(part in word for part in _SECRET_PARTS):
            return True
        if word == "key" and before in {"api", "ssh", "private", "access", "secret", "wandb", "auth", "signing", "account",
                                        "encryption", "hf", "openai", "license", "session", "client", "master"}:
            return True
    return False


_FLAG_ONLY_NAMES = frozenset({"key", "pat"})
"""Flag names that say credential as a flag (``--key X``, ``--pat X``) though a config key of that name need not."""
_PORT_LIKE = re.compile(r"\d[\d.:/]*")
"""``-p 8080``, ``-p 8080:80``, ``-p 127.0.0.1:8080:80/tcp``: a port (ssh, docker, psql), not a password."""
_P_NOT_PASSWORD = re.compile(r"(?:^|[\s/(])(?:mkdir|cp|install|mv|rsync|srun|sbatch|salloc|squeue|sinfo|sacct"
                             r"|scontrol|mysql|mysqldump|mysqladmin|mariadb)\b|#SBATCH", re.IGNORECASE)
"""Commands whose ``-p`` takes a word that is no password (parents, preserve, partition): their ``-p`` value stays
(a port, pid or strip count is a number: ``_PORT_LIKE``; ``docker login -p`` is a password; MySQL's ``-p DB`` names
a database, its password is ``-pPASSWORD``: ``_MYSQL_P``)."""
_USER_FLAGS = frozenset({"-u", "--user"})
"""``curl -u user:password``, ``--user user:password``: the part after the colon is the password."""
_ATTACHED_P_COMMANDS = r"mysql|mysqldump|mysqladmin|mysqlimport|mariadb|mariadb-dump|7z|7za|7zr|unrar|rar|sshpass"
_ATTACHED_P = re.compile(r"(?P<head>(?<![\w.\-])(?:" + _ATTACHED_P_COMMANDS + r")\b"
                         r"[^\n;&|]{0,200}?[ \t]-p)(?P<value>'[^'\n]{1,1000}'|\"[^\"\n]{1,1000}\"|[^\s'\"\-][^\s]*)")
"""``-pPASSWORD`` (no space) of MySQL (where ``-p DB`` names a database), 7-Zip, RAR and sshpass."""
_ATTACHED_P_WORD = re.compile(r"(?<![\w.\-])(?:" + _ATTACHED_P_COMMANDS + r")\b")
_MYSQL_P = _ATTACHED_P
"""The name the reference masker (``tests/secrets_reference.py``) knows the attached-password rule by."""


def _command(words: str) -> re.Pattern[str]:
    return re.compile(r"(?:^|[\s/(\"'])(?:" + words + r")(?=[\s\"']|$)")


_COMMAND_FLAGS: tuple[tuple[re.Pattern[str], frozenset[str]], ...] = (
    (_command(r"redis-cli|keydb-cli|valkey-cli"), frozenset({"-a"})),
    (_command(r"ldap(?:search|modify|add|delete|whoami|passwd|modrdn|compare|exop|url)"), frozenset({"-w"})),
    (_command(r"zip|unzip|zipcloak|funzip"), frozenset({"-P"})),
    (_command(r"openssl"), frozenset({"-k"})),
    (_command(r"ssh-keygen"), frozenset({"-N", "-P"})),
    (_command(r"mosquitto_pub|mosquitto_sub|mosquitto_rr"), frozenset({"-P"})),
    (_command(r"sqlcmd|bcp|osql"), frozenset({"-P"})),
    (_command(r"keytool"), frozenset({"-storepass", "-keypass", "-srcstorepass", "-deststorepass", "-srckeypass",
                                      "-destkeypass", "-new"})),
)
"""Flags that take a password only in one command's syntax (``redis-cli -a PW``, ``ldapsearch -w PW``, ``zip -P PW``,
``openssl enc -k PW``, ``ssh-keygen -N PW``): elsewhere ``-a``, ``-w``, ``-P``, ``-k`` and ``-N`` are harmless."""
_USER_SEPARATORS: tuple[tuple[re.Pattern[str], frozenset[str], str], ...] = (
    (_command(r"smbclient|rpcclient|smbcacls|smbget|smbtree|smbmap|net|mount\.cifs|crackmapexec|nxc|netexec"),
     frozenset({"-U", "--user", "-u", "--username"}), "%:"),
    (_command(r"lftp"), frozenset({"-u", "--user"}), ",:"),
)
"""Commands whose user flag holds the password after another separator: Samba's ``-U user%password``, lftp's
``-u user,password`` (everything else: ``-u user:password``)."""
_SHELL_OPERATORS = frozenset({"<", ">", ">>", "<<", "<<<", "|", "||", "&&", "&", ";", "2>", "2>>", "&>", "2>&1"})
"""A shell operator after a flag is no value of it (``gh auth login --with-token < file``)."""
P_CONTEXT_CHARS = 200
"""How far back in the same command a command word still rules ``-p`` (``srun -N 2 -p gpu ...``)."""
_COMMAND_SPLIT = re.compile(r"[\n;&|]")


def _this_command(before: str) -> str:
    """The words of the command a flag belongs to: ``before`` (the text before the flag) from its last separator."""
    return _COMMAND_SPLIT.split(before[-P_CONTEXT_CHARS:])[-1]


def user_separator(flag: str, before: str = "") -> str | None:
    """The separators (the first one found counts) between user and password in the value of the user flag ``flag``
    (``:`` for ``curl -u``, ``%`` for ``smbclient -U``), or None when ``flag`` takes no ``user<sep>password`` there."""
    if flag not in _USER_FLAGS and flag not in {"-U", "--username"}:
        return None
    command = _this_command(before)
    for pattern, flags, separator in _USER_SEPARATORS:
        if flag in flags and pattern.search(command):
            return separator
    return ":" if flag in _USER_FLAGS else None


def secret_flag(flag: str, value: str, before: str = "") -> bool:
    """True when ``value`` after the command-line flag ``flag`` (``--token``, ``-p``) is a secret; ``before`` is the
    text of the command line before the flag (what makes ``mkdir -p x`` or ``srun -p gpu`` no password)."""
    if value in _SHELL_OPERATORS:
        return False
    bare = flag.lstrip("-")
    if secret_name(bare) or bare.lower() in _FLAG_ONLY_NAMES:
        return True
    if flag != "-p":
        return len(flag) <= 14 and _command_flag(flag, before)
    if _PORT_LIKE.fullmatch(value.strip("'\"")):
        return False
    return _P_NOT_PASSWORD.search(_this_command(before)) is None  # this command's words, not the one before it


def _command_flag(flag: str, before: str) -> bool:
    """True when ``flag`` takes a password in the syntax of the command it belongs to (``redis-cli -a``)."""
    if not before:
        return False
    command = _this_command(before)
    return any(flag in flags and pattern.search(command) for pattern, flags in _COMMAND_FLAGS)


@lru_cache(maxsize=8192)
def numeric_only_name(name: str) -> bool:
    """True when the only secret words in the name are ones whose numeric value would be a count."""
    words = [w.lower() for w in _WORD_SPLIT.split(name[:200]) if w]
    return all(w in _PLAIN_WORDS or not _name_words_secret([w]) for w in words)

