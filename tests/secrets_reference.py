"""The secret masking of commit 28f5375 before its prefilters, plus the rules added since (issue 21: AWS pairs and
session tokens, Slack webhooks, .netrc, AccountKey; YAML !!binary bodies are data): the reference the faster one is
compared with.

Three rules, applied to every string a run file gives us:

* by **key name**: the value of a key (or ``NAME=value`` / ``NAME: value`` in a text) whose name says
  secret, after normalising case, ``-``/``_``/``.`` and camelCase (``api-key``, ``X-Auth-Token``,
  ``wandb.key``, ``ssh_key``, ``pass``); short values too;
* by **value shape**: known token formats, JWTs, PEM private keys, URL passwords
  (``scheme://user:pass@host``), ``Bearer``/``Basic`` credentials, a 40-hex W&B key next to a word that
  says wandb/key;
* by **position**: the value after a secret-named command-line flag, in a string
  (``--password 'a b'``) or in an argument list (``["--token", "x"]``); a flag after a flag is not a value.

Masking is total and iterative: any depth, any size, never an exception.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

MASK = "****"
"""What a masked secret looks like in every output."""

_TOKEN_PATTERNS: list[tuple[str, re.Pattern[str], tuple[str, ...]]] = [
    # (kind, pattern, literals one of which must be in the text for the pattern to be tried: a fast pre-filter)
    ("Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), ("hf_",)),
    ("AWS access key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), ("AKIA", "ASIA")),
    ("GitHub token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"), ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    ("GitHub token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{40,}\b"), ("github_pat_",)),
    ("GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), ("glpat-",)),
    ("OpenAI-style key", re.compile(r"\bsk-[A-Za-z0-9_-]{20,}"), ("sk-",)),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), ("AIza",)),
    ("Slack token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), ("xox",)),
    ("PyPI token", re.compile(r"\bpypi-[A-Za-z0-9_-]{50,}"), ("pypi-",)),
    ("npm token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), ("npm_",)),
    ("W&B API key", re.compile(r"\blocal-[0-9a-f]{40}\b"), ("local-",)),
    ("JWT", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), ("eyJ",)),
    # issue 21 (added with the rules, not a prefilter): AWS session tokens and Slack webhook paths
    ("AWS session token", re.compile(r"(?<![A-Za-z0-9/+])(?:FwoGZXIvYXdz|FQoGZXIvYXdz|IQoJb3JpZ2lu)[A-Za-z0-9/+=]{20,}"),
     ("FwoGZXIvYXdz", "FQoGZXIvYXdz", "IQoJb3JpZ2lu")),
    ("Slack webhook", re.compile(r"(?<=hooks\.slack\.com/)(?:services|workflows|triggers)/[A-Za-z0-9/_-]{8,}"),
     ("hooks.slack.com",)),
    # Payment, mail and chat services, a data platform and Azure shared-access signatures (issue 21, beyond its list).
    ("Stripe key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"), ("sk_live_", "sk_test_", "rk_live_", "rk_test_")),
    ("SendGrid key", re.compile(r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"), ("SG.",)),
    ("Discord webhook", re.compile(r"(?<=discord\.com/api/webhooks/)[0-9]{6,}/[A-Za-z0-9_-]{20,}"),
     ("discord.com/api/webhooks/",)),
    ("Databricks token", re.compile(r"\bdapi[0-9a-f]{32}(?:-\d)?\b"), ("dapi",)),
    ("Azure SAS signature", re.compile(r"(?<=[?&]sig=)[A-Za-z0-9%+/=]{16,}"), ("sig=",)),
    # A line of a PEM body on its own (a log view masks line by line): 60-100 base64 chars of mixed case and digits.
    ("private key", re.compile(r"^[ \t]*(?=[A-Za-z0-9+/]{0,100}[0-9])(?=[A-Za-z0-9+/]{0,100}[a-z])"
                               r"(?=[A-Za-z0-9+/]{0,100}[A-Z])[A-Za-z0-9+/]{60,100}={0,2}[ \t]*$", re.MULTILINE), ()),
]
_PEM_BEGIN = re.compile(r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY-----")
_PEM_END = re.compile(r"-----END[A-Z0-9 ]{0,40}PRIVATE KEY-----")
MAX_PEM_CHARS = 20_000
"""A PEM block without its END line is masked this far (or to the end of the text)."""
_URL_PASSWORD = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]{0,30}://[^\s/:@'\"]{0,200}:)"
                           r"(?P<value>[^\s/@'\"]{1,500})(?=@)")
_URL_TOKEN_USER = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]{0,30}://)(?P<value>[^\s/:@'\"]{16,500})(?=@)")
_AUTH_HEADER = re.compile(r"(?P<head>\bauthorization['\"]?[ \t]*[:=][ \t]*['\"]?)"
                          r"(?P<value>(?!(?:bearer|basic)\b)[^'\"\s][^'\"\n]{0,999})", re.IGNORECASE)
_AUTH_SCHEME = re.compile(r"\b(?P<head>(?:Bearer|Basic)[ \t]+)(?P<value>[A-Za-z0-9._~+/=\-]{6,})", re.IGNORECASE)
_NETRC = re.compile(r"(?P<head>(?:^[ \t]*(?:login[ \t]+\S+[ \t]+)?|\b(?:machine[ \t]+\S+|default)"
                    r"(?:[ \t]+(?:login|account)[ \t]+\S+){0,2}[ \t]+)password[ \t]+)(?P<value>\S+)", re.MULTILINE)
_AWS_KEY_ID = re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]{0,39}[0-9/+])(?=[A-Za-z0-9/+]{0,39}[a-z])"
                         r"(?=[A-Za-z0-9/+]{0,39}[A-Z])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_HEX40 = re.compile(r"(?<![0-9A-Za-z])[0-9a-f]{40}(?![0-9A-Za-z])")
_HEX40_CONTEXT = re.compile(r"wandb|key|login|token|secret", re.IGNORECASE)
# --name value / --name=value / -name value; the lookbehind keeps the scan linear on long words.
_FLAG = re.compile(r"(?<![\w.\-])(?P<name>--?[A-Za-z][\w.\-]{0,80})(?P<sep>=|(?:[ \t]|\\\r?\n)+)"
                   r"(?:(?<==)|(?!-[A-Za-z\-]))(?P<value>'[^'\n]{0,1000}'|\"[^\"\n]{0,1000}\"|[^\s'\"]+)")
# round six: a flag after a flag is not its value, and stays a flag itself (``--verbose --token X``)
# NAME=value, NAME: value, 'NAME': 'value', "NAME": "value" (env files, Python, dict/JSON text in a log line).
_ASSIGN = re.compile(r"(?<![\w.\-])(?P<q>['\"]?)(?P<name>[A-Za-z_][\w.\-]{0,80})(?P=q)(?P<sep>[ \t]*[=:](?!//)[ \t]*)"
                     r"(?P<value>'[^'\n]{0,1000}'|\"[^\"\n]{0,1000}\"|[^\s'\",;}\]\)&]+)")  # round five: no scheme://, & ends

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
_BENIGN_VALUES = {"none", "null", "true", "false", "****", "<redacted>", "redacted", "***", "", "nil", "~", "[]",
                  "{}", "''", '""', "bearer", "basic"}
_ENV_REFERENCE = re.compile(r"^(?:\$\{?[A-Za-z_]\w*\}?|%[A-Za-z_]\w*%|os\.environ.*|os\.getenv.*|getenv.*|env:.*)$")
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")


@dataclass(frozen=True, slots=True)
class SecretHit:
    """Where a secret-looking value was found (never the value itself)."""

    where: str
    """Key path (``a.b.c``) in a document, or ``line N`` in a text."""
    kind: str


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


@lru_cache(maxsize=8192)
def _numeric_only_name(name: str) -> bool:
    """True when the only secret words in the name are ones whose numeric value would be a count."""
    words = [w.lower() for w in _WORD_SPLIT.split(name[:200]) if w]
    return all(w in _PLAIN_WORDS or not _name_words_secret([w]) for w in words)


def _benign_value(value: str) -> bool:
    v = value.strip().strip("'\"").strip()
    placeholder = v.startswith("<") and v.endswith(">")  # HF writes "<HUB_TOKEN>" in place of the real one
    return (v.lower() in _BENIGN_VALUES or MASK in v or placeholder or bool(_ENV_REFERENCE.match(v)))


def _mask_pem(text: str) -> str:
    """Every ``-----BEGIN ... PRIVATE KEY-----`` block up to its END line (or 20,000 characters) becomes MASK."""
    if "-----BEGIN" not in text:
        return text
    out, position = [], 0
    while (begin := _PEM_BEGIN.search(text, position)) is not None:
        end = _PEM_END.search(text, begin.end(), begin.end() + MAX_PEM_CHARS)
        stop = end.end() if end else min(len(text), begin.end() + MAX_PEM_CHARS)
        out += [text[position:begin.start()], MASK]
        position = stop
    return "".join(out) + text[position:]


def _auth_repl(match: re.Match[str]) -> str:
    """``Bearer <credential>``: masked when it looks like one (a digit or token punctuation, 8+ characters) or
    follows ``Authorization``; prose such as "Basic settings" stays."""
    value = match["value"]
    header = "authoriz" in match.string[max(0, match.start() - 40):match.start()].lower()
    shaped = len(value) >= 8 and any(c.isdigit() or c in "._~+/=-" for c in value)
    return match["head"] + MASK if header or shaped else match.group(0)


def _mask_aws_pairs(text: str) -> str:
    spans = [(max(0, m.start() - 300), m.end() + 300) for m in _AWS_KEY_ID.finditer(text)]
    return _AWS_SECRET.sub(lambda m: MASK if any(lo <= m.start() and m.end() <= hi for lo, hi in spans)
                           else m.group(0), text)


def _mask_shapes(text: str) -> str:
    text = _mask_pem(text)
    text = _mask_aws_pairs(text)
    text = _NETRC.sub(lambda m: m["head"] + MASK, text)
    for _kind, pattern, needles in _TOKEN_PATTERNS:
        if not needles or any(n in text for n in needles):
            text = pattern.sub(MASK, text)
    if "://" in text:
        text = _URL_PASSWORD.sub(lambda m: m["head"] + MASK, text)
        text = _URL_TOKEN_USER.sub(lambda m: m["head"] + MASK if any(c.isdigit() for c in m["value"])
                                   else m.group(0), text)
    text = _AUTH_HEADER.sub(lambda m: m["head"] + MASK if not _benign_value(m["value"].strip()) else m.group(0), text)
    lowered = text.lower()
    if "bearer" in lowered or "basic" in lowered:
        text = _AUTH_SCHEME.sub(_auth_repl, text)
    if not _HEX40_CONTEXT.search(text):
        return text

    def hex_repl(match: re.Match[str]) -> str:
        before = text[max(0, match.start() - 80):match.start()]
        return MASK if _HEX40_CONTEXT.search(before) else match.group(0)

    return _HEX40.sub(hex_repl, text)


def _quoted_mask(value: str) -> str:
    """``MASK`` keeping the value's own quotes, so a masked command line still parses."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[0] + MASK + value[0]
    return MASK


def mask_text(text: str) -> str:
    """Mask secret-shaped substrings, values of secret-named flags and ``NAME=value`` assignments."""
    if not text:
        return text
    from pimm_inspect.analysis.secrets import yaml_binary_lines  # issue 21: YAML !!binary bodies are data

    lines = text.splitlines(keepends=True)
    binary = yaml_binary_lines(lines)
    if binary:
        out, chunk = [], []
        for i, line in enumerate(lines):
            if i in binary:
                out += [_mask_whole("".join(chunk)) if chunk else "", line]
                chunk = []
            else:
                chunk.append(line)
        return "".join(out) + (_mask_whole("".join(chunk)) if chunk else "")
    return _mask_whole(text)


def _mask_whole(text: str) -> str:
    text = _mask_shapes(text)

    def flag_repl(match: re.Match[str]) -> str:
        value = match["value"]
        # round five: --key, --pat, -p, -u user:password (rules, not prefilters)
        from pimm_inspect.analysis.secrets import _user_password, secret_flag, user_separator

        # round six: the separator depends on the command (``smbclient -U user%password``)
        separators = user_separator(match["name"], match.string[:match.start()])
        if separators is not None:
            masked = _user_password(value, separators)
            return match.group(0) if masked is None else f"{match['name']}{match['sep']}{masked}"
        if not secret_flag(match["name"], value, match.string[:match.start()]) or _benign_value(value):
            return match.group(0)
        if match["sep"] != "=" and value.startswith("-"):
            return match.group(0)  # another flag, not this one's value (``--token --run.no-timestamp``)
        return f"{match['name']}{match['sep']}{_quoted_mask(value)}"

    from pimm_inspect.analysis.secrets import _MYSQL_P

    # round six: the attached ``-pPASSWORD`` first (``7z a -pPW out.7z``: ``out.7z`` is no value of a flag ``-pPW``)
    text = _MYSQL_P.sub(lambda m: m["head"] + _quoted_mask(m["value"]), text)
    text = _FLAG.sub(flag_repl, text)

    def assign_repl(match: re.Match[str]) -> str:
        name, value = match["name"], match["value"]
        if not secret_name(name) or _benign_value(value):
            return match.group(0)
        if value.strip("'\"").isdigit() and _numeric_only_name(name):
            return match.group(0)
        return f"{match['q']}{name}{match['q']}{match['sep']}{_quoted_mask(value)}"

    return _ASSIGN.sub(assign_repl, text)


def find_in_text(text: str) -> list[SecretHit]:
    """Secret-looking values in a text, by line (a PEM block counts on its BEGIN line)."""
    return [SecretHit(f"line {number}", _kind_of(line))
            for number, line in enumerate(text.splitlines(), start=1) if mask_text(line) != line]


def _kind_of(text: str) -> str:
    if _PEM_BEGIN.search(text):
        return "private key"
    for kind, pattern, _needles in _TOKEN_PATTERNS:
        if pattern.search(text):
            return kind
    if _URL_PASSWORD.search(text) or _URL_TOKEN_USER.search(text):
        return "URL password"
    return "credential"


def _mask_scalar(value: Any, name: str, previous: Any, before: str = "") -> Any:
    """The masked form of one leaf: ``name`` is the key path's last two parts, ``previous`` the list element before."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        secret = name and secret_name(name) and not _numeric_only_name(name)
        return MASK if secret or _after_secret_flag(previous, str(value), before) else value
    if not isinstance(value, str):
        return value
    if _after_secret_flag(previous, value, before) and not value.startswith("-") and not _benign_value(value):
        return MASK
    from pimm_inspect.analysis.secrets import _user_password, user_separator  # round five: ["-u", "user:password"]

    separators = user_separator(previous, before) if isinstance(previous, str) else None  # round six: smbclient -U
    if separators is not None and _user_password(value, separators) is not None:
        return _user_password(value, separators)
    if name and secret_name(name) and not _benign_value(value):
        if not (_numeric_only_name(name) and value.strip().isdigit()):
            return MASK
    if name and _HEX40.fullmatch(value.strip()) and _HEX40_CONTEXT.search(name):
        return MASK
    return mask_text(value)


def _after_secret_flag(previous: Any, value: str, before: str = "") -> bool:
    """True when ``previous`` is a list element like ``--token`` (so this element is its value)."""
    from pimm_inspect.analysis.secrets import secret_flag

    return (isinstance(previous, str) and previous.startswith("-") and "=" not in previous
            and len(previous) < 100 and secret_flag(previous, value, before))


def _context(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key


def _walk(data: Any, name: str, hits: list[SecretHit] | None) -> Any:
    """A masked copy of ``data`` built without recursion; records where masking changed something in ``hits``."""
    holder: list[Any] = [None]
    tuples: list[tuple[Any, Any, list[Any]]] = []
    # (node, container to write into, slot in it, key-name context, path for hits, previous list element)
    stack: list[tuple[Any, Any, Any, str, str, Any, str]] = [(data, holder, 0, name, "", None, "")]
    while stack:
        node, into, slot, ctx, path, previous, before = stack.pop()
        if isinstance(node, dict):
            out: dict[Any, Any] = {}
            into[slot] = out
            key_name = ctx.rsplit(".", 1)[-1] if ctx else ""
            pending: list[tuple[Any, Any, Any, str, str, Any, str]] = []
            for key, value in node.items():
                shown = key
                if isinstance(key, str):
                    shown = mask_text(key)
                    if shown != key:
                        if hits is not None:
                            hits.append(SecretHit(_context(path, shown), _kind_of(key)))
                        n = 2
                        while shown in out or shown in node:
                            shown, n = f"{mask_text(key)} ({n})", n + 1
                out[shown] = None
                pending.append((value, out, shown, _context(key_name, str(shown)), _context(path, str(shown)), None, ""))
            stack += reversed(pending)
        elif isinstance(node, (list, tuple)):
            items: list[Any] = [None] * len(node)
            into[slot] = items
            if isinstance(node, tuple):
                tuples.append((into, slot, items))
            prev = None
            pending = []
            for i, value in enumerate(node):
                # round six: the command's words before a flag (``["srun", "-p", "gpu"]``, ``["redis-cli", "-a", PW]``)
                words = " ".join(v for v in node[max(0, i - 41):max(0, i - 1)] if isinstance(v, str))
                pending.append((value, items, i, ctx, f"{path}[{i}]", prev, words))
                prev = value
            stack += reversed(pending)
        else:
            masked = _mask_scalar(node, ctx, previous, before)
            into[slot] = masked
            if hits is not None and masked is not node and masked != node:  # NaN != NaN: unchanged all the same
                hits.append(SecretHit(path, _kind_of(node) if isinstance(node, str) else "credential"))
    for into, slot, items in reversed(tuples):
        into[slot] = tuple(items)
    return holder[0]


def find_in_mapping(data: Any, prefix: str = "") -> list[SecretHit]:
    """Secret-looking values (and keys) in a nested JSON-like document, by key path."""
    hits: list[SecretHit] = []
    _walk(data, "", hits)
    if prefix:
        hits = [SecretHit(f"{prefix}.{h.where}" if h.where else prefix, h.kind) for h in hits]
    return sorted(hits, key=lambda h: h.where)


def mask_value(data: Any, key: str = "") -> Any:
    """A copy of a JSON-like value with every secret-looking string masked (any depth, no recursion)."""
    return _walk(data, key, None)
