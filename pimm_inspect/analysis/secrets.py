"""Find values that look like secrets and mask them wherever they are shown.

Three rules, applied to every string a run file gives us:

* by **key name**: the value of a key (or ``NAME=value`` / ``NAME: value`` in a text) whose name says
  secret, after normalising case, ``-``/``_``/``.`` and camelCase (``api-key``, ``X-Auth-Token``,
  ``wandb.key``, ``ssh_key``, ``pass``); short values too;
* by **value shape**: known token formats, JWTs, PEM private keys, URL passwords
  (``scheme://user:pass@host``), ``Bearer``/``Basic`` credentials, a 40-hex W&B key next to a word that
  says wandb/key, AWS session tokens and the secret key beside an access key id, Slack webhook paths, the
  password of a ``.netrc`` entry (the body of a YAML ``!!binary`` block is data, not a key);
* by **position**: the value after a secret-named command-line flag, in a string
  (``--password 'a b'``) or in an argument list (``["--token", "x"]``); a flag after a flag is not a value.
  A flag is secret-named by the key rule or as one of the bare flags that name a credential only as flags
  (``--key``, ``--pat``, and ``-p`` unless its value is a port or the command is one where ``-p`` is no password:
  ``mkdir -p``, ``srun -p gpu``, ``ssh -p 22``: ``secret_flag``).

Masking is total and iterative: any depth, any size, never an exception.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from collections.abc import Sequence
from functools import lru_cache

from .secret_names import (_ATTACHED_P, _ATTACHED_P_WORD, _MYSQL_P as _MYSQL_P, _USER_FLAGS as _USER_FLAGS,
                           numeric_only_name as _numeric_only_name, secret_flag as secret_flag,
                           secret_name as secret_name, user_separator as user_separator)
from .yaml_binary import yaml_binary_lines

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
    # An AWS session token (STS): the base64 of its fixed protobuf-like header, then hundreds of characters.
    ("AWS session token", re.compile(r"(?<![A-Za-z0-9/+])(?:FwoGZXIvYXdz|FQoGZXIvYXdz|IQoJb3JpZ2lu)[A-Za-z0-9/+=]{20,}"),
     ("FwoGZXIvYXdz", "FQoGZXIvYXdz", "IQoJb3JpZ2lu")),
    # A Slack incoming-webhook URL: whoever has the path can post to the channel.
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
"""``https://<token>@github.com/...``: a URL whose user part is a credential (GitHub, GitLab and Hugging Face take
a token there, with no password); masked when it is long and holds a digit, so ``https://alice@host`` stays."""
_AUTH_HEADER = re.compile(r"(?P<head>\bauthorization['\"]?[ \t]*[:=][ \t]*['\"]?)"
                          r"(?P<value>(?!(?:bearer|basic)\b)[^'\"\s][^'\"\n]{0,999})", re.IGNORECASE)
"""An ``Authorization:`` header's whole value (``token X``, ``Digest ...``, ``AWS4-HMAC-SHA256 Credential=...``): the
scheme word is not the secret, what follows it is (``Bearer``/``Basic`` keep their word: ``_AUTH_SCHEME``)."""
_AUTH_SCHEME = re.compile(r"\b(?P<head>(?:Bearer|Basic)[ \t]+)(?P<value>[A-Za-z0-9._~+/=\-]{6,})", re.IGNORECASE)
# A .netrc entry: ``machine h login u password p`` (or ``password p`` on a line of its own, as .netrc allows).
_NETRC = re.compile(r"(?P<head>(?:^[ \t]*(?:login[ \t]+\S+[ \t]+)?|\b(?:machine[ \t]+\S+|default)"
                    r"(?:[ \t]+(?:login|account)[ \t]+\S+){0,2}[ \t]+)password[ \t]+)(?P<value>\S+)", re.MULTILINE)
# An AWS access key id, and a 40-character secret access key near it (the pair a credentials file or CSV holds).
_AWS_KEY_ID = re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]{0,39}[0-9/+])(?=[A-Za-z0-9/+]{0,39}[a-z])"
                         r"(?=[A-Za-z0-9/+]{0,39}[A-Z])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
AWS_PAIR_CHARS = 300
"""A 40-character secret access key is masked this close to an access key id (before or after it)."""
_HEX40 = re.compile(r"(?<![0-9A-Za-z])[0-9a-f]{40}(?![0-9A-Za-z])")
_HEX40_CONTEXT = re.compile(r"wandb|key|login|token|secret", re.IGNORECASE)
# --name value / --name=value / -name value, the value maybe on the next line after a shell continuation (``--token \``
# then the token: a script's long command); the lookbehind keeps the scan linear on long words.
_FLAG = re.compile(r"(?<![\w.\-])(?P<name>--?[A-Za-z][\w.\-]{0,80})(?P<sep>=|(?:[ \t]|\\\r?\n)+)"
                   r"(?:(?<==)|(?!-[A-Za-z\-]))(?P<value>'[^'\n]{0,1000}'|\"[^\"\n]{0,1000}\"|[^\s'\"]+)")
# NAME=value, NAME: value, 'NAME': 'value', "NAME": "value" (env files, Python, dict/JSON text in a log line).
_ASSIGN = re.compile(r"(?<![\w.\-])(?P<q>['\"]?)(?P<name>[A-Za-z_][\w.\-]{0,80})(?P=q)(?P<sep>[ \t]*[=:](?!//)[ \t]*)"
                     r"(?P<value>'[^'\n]{0,1000}'|\"[^\"\n]{0,1000}\"|[^\s'\",;}\]\)&]+)")
"""A URL's ``scheme://`` is no ``NAME: value`` (it swallowed the URL, query and all: ``?access_token=X``), and a
value ends at ``&`` (the next query parameter)."""

_BENIGN_VALUES = {"none", "null", "true", "false", "****", "<redacted>", "redacted", "***", "", "nil", "~", "[]",
                  "{}", "''", '""', "bearer", "basic"}
_ENV_REFERENCE = re.compile(r"^(?:\$\{?[A-Za-z_]\w*\}?|%[A-Za-z_]\w*%|os\.environ.*|os\.getenv.*|getenv.*|env:.*)$")


@dataclass(frozen=True, slots=True)
class SecretHit:
    """Where a secret-looking value was found (never the value itself)."""

    where: str
    """Key path (``a.b.c``) in a document, or ``line N`` in a text."""
    kind: str



def _benign_value(value: str) -> bool:
    v = value.strip().strip("'\"").strip()
    placeholder = v.startswith("<") and v.endswith(">")  # HF writes "<HUB_TOKEN>" in place of the real one
    return (v.lower() in _BENIGN_VALUES or MASK in v or placeholder or bool(_ENV_REFERENCE.match(v)))


def _mask_pem(text: str, keep_lines: bool = False) -> str:
    """Every ``-----BEGIN ... PRIVATE KEY-----`` block up to its END line (or 20,000 characters) becomes MASK
    (``keep_lines``: one MASK per line of the block, so the text keeps its lines)."""
    if "-----BEGIN" not in text:
        return text
    out, position = [], 0
    while (begin := _PEM_BEGIN.search(text, position)) is not None:
        end = _PEM_END.search(text, begin.end(), begin.end() + MAX_PEM_CHARS)
        stop = end.end() if end else min(len(text), begin.end() + MAX_PEM_CHARS)
        block = MASK if not keep_lines else "\n".join([MASK] * (text.count("\n", begin.start(), stop) + 1))
        out += [text[position:begin.start()], block]
        position = stop
    return "".join(out) + text[position:]


def mask_lines(lines: Sequence[str]) -> list[str]:
    """``lines`` (no line breaks in them) masked as one text, one entry per line: a secret on the line after its flag
    (``--token \\`` then the token) is found, and every line of a private key block becomes MASK."""
    masked = mask_text(_mask_pem("\n".join(lines), keep_lines=True)).split("\n")
    return masked if len(masked) == len(lines) else [mask_text(line) for line in lines]


def _auth_repl(match: re.Match[str]) -> str:
    """``Bearer <credential>``: masked when it looks like one (a digit or token punctuation, 8+ characters) or
    follows ``Authorization``; prose such as "Basic settings" stays."""
    value = match["value"]
    header = "authoriz" in match.string[max(0, match.start() - 40):match.start()].lower()
    shaped = len(value) >= 8 and any(c.isdigit() or c in "._~+/=-" for c in value)
    return match["head"] + MASK if header or shaped else match.group(0)


_ANY_NEEDLE = re.compile("|".join(re.escape(n) for _k, _p, needles in _TOKEN_PATTERNS for n in needles))
"""Any token pattern's literal: a text without one (most are) skips those patterns in one scan."""
_PEM_LINE_MIN = 60
"""The PEM-body pattern needs 60 characters on one line: a shorter text cannot match it."""
_AUTH_WORD = re.compile(r"bearer|basic", re.IGNORECASE)
_AUTH_HEADER_WORD = re.compile(r"authorization", re.IGNORECASE)


def _mask_aws_pairs(text: str) -> str:
    """The secret access key beside an ``AKIA``/``ASIA`` id (before the id itself is masked)."""
    spans = [(max(0, m.start() - AWS_PAIR_CHARS), m.end() + AWS_PAIR_CHARS) for m in _AWS_KEY_ID.finditer(text)]
    if not spans:
        return text

    def repl(match: re.Match[str]) -> str:
        near = any(lo <= match.start() and match.end() <= hi for lo, hi in spans)
        return MASK if near else match.group(0)

    return _AWS_SECRET.sub(repl, text)


def _mask_shapes(text: str) -> str:
    text = _mask_pem(text)
    if "AKIA" in text or "ASIA" in text:
        text = _mask_aws_pairs(text)
    if "password" in text:
        text = _NETRC.sub(lambda m: m["head"] + MASK, text)
    # A mask never creates a literal (MASK is only asterisks), so the text's literals decide once for all patterns.
    has_needle = _ANY_NEEDLE.search(text) is not None
    for _kind, pattern, needles in _TOKEN_PATTERNS:
        if needles:
            if has_needle and any(n in text for n in needles):
                text = pattern.sub(MASK, text)
        elif len(text) >= _PEM_LINE_MIN:
            text = pattern.sub(MASK, text)
    if "://" in text:
        text = _URL_PASSWORD.sub(lambda m: m["head"] + MASK, text)
        text = _URL_TOKEN_USER.sub(lambda m: m["head"] + MASK if any(c.isdigit() for c in m["value"])
                                   else m.group(0), text)
    if _AUTH_HEADER_WORD.search(text):
        text = _AUTH_HEADER.sub(lambda m: m["head"] + MASK if not _benign_value(m["value"].strip()) else m.group(0),
                                text)
    if _AUTH_WORD.search(text):
        text = _AUTH_SCHEME.sub(_auth_repl, text)
    if len(text) < 40 or not _HEX40_CONTEXT.search(text):
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


def _mask_around_binary(text: str) -> str:
    """``_mask_text`` of everything but the bodies of YAML ``!!binary`` blocks, which are kept as they are."""
    lines = text.splitlines(keepends=True)
    binary = yaml_binary_lines(lines)
    out: list[str] = []
    chunk: list[str] = []
    for i, line in enumerate(lines):
        if i in binary:
            if chunk:
                out.append(_mask_text("".join(chunk)))
                chunk = []
            out.append(line)
        else:
            chunk.append(line)
    if chunk:
        out.append(_mask_text("".join(chunk)))
    return "".join(out)


MEMO_MAX_CHARS = 256
"""Texts up to this long are masked once per process (``_mask_short``): a tree's configs repeat the same values."""


def mask_text(text: str) -> str:
    """Mask secret-shaped substrings, values of secret-named flags and ``NAME=value`` assignments."""
    if not text:
        return text
    if "!!binary" in text:
        return _mask_around_binary(text)
    return _mask_short(text) if len(text) <= MEMO_MAX_CHARS else _mask_text(text)


@lru_cache(maxsize=16384)
def _mask_short(text: str) -> str:
    """``_mask_text`` of a short text, remembered: at most 16,384 texts of at most 256 characters (~10 MB)."""
    return _mask_text(text)


def _user_password(value: str, separators: str = ":") -> str | None:
    """``user:password`` (quoted or not; ``user%password`` and so on with other ``separators``, the first one found
    counting) with the password masked; None when ``value`` holds no password (``bob``, ``1000:1000``: docker's
    uid:gid)."""
    quote = value[0] if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"" else ""
    inner = value[1:-1] if quote else value
    separator = next((s for s in separators if s in inner), ":")
    user, colon, password = inner.partition(separator)
    if not colon or not password or password.isdigit() or _benign_value(password):
        return None
    return f"{quote}{user}{separator}{MASK}{quote}"


def mask_attached(text: str) -> str:
    """``-pPASSWORD`` (no space) masked in the commands that take one so (``mysql``, ``7z``, ``sshpass``)."""
    if "-p" not in text or _ATTACHED_P_WORD.search(text) is None:
        return text
    return _ATTACHED_P.sub(lambda m: m["head"] + _quoted_mask(m["value"]), text)


def mask_flags(text: str) -> str:
    """The values of secret-named command-line flags in ``text`` masked (``--token X``, ``-p X``, ``curl -u u:pw``,
    ``mysql -pPW``, ``redis-cli -a PW``, ``smbclient -U user%PW``): the flag rule of ``mask_text``."""
    if "-" not in text:  # every flag starts with one
        return text
    text = mask_attached(text)  # first: ``7z -pPW out.7z`` is no flag ``-pPW`` whose value is ``out.7z``

    def flag_repl(match: re.Match[str]) -> str:
        name, value = match["name"], match["value"]
        if name in _USER_FLAGS or name in {"-U", "--username"}:
            separators = user_separator(name, match.string[:match.start()])
            if separators is not None:
                masked = _user_password(value, separators)
                return match.group(0) if masked is None else f"{name}{match['sep']}{masked}"
        if not secret_flag(name, value, match.string[:match.start()]) or _benign_value(value):
            return match.group(0)
        if match["sep"] != "=" and value.startswith("-"):
            return match.group(0)  # another flag, not this one's value (``--token --run.no-timestamp``)
        return f"{name}{match['sep']}{_quoted_mask(value)}"

    return _FLAG.sub(flag_repl, text)


def _mask_text(text: str) -> str:
    """``mask_text`` worked out (a pure function of the text)."""
    text = mask_flags(_mask_shapes(text))
    if "=" not in text and ":" not in text:  # every assignment has one
        return text

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
    lines = text.splitlines()
    binary = yaml_binary_lines(lines) if "!!binary" in text else set()
    return [SecretHit(f"line {number}", _kind_of(line))
            for number, line in enumerate(lines, start=1) if number - 1 not in binary and mask_text(line) != line]


def _kind_of(text: str) -> str:
    if _PEM_BEGIN.search(text):
        return "private key"
    for kind, pattern, _needles in _TOKEN_PATTERNS:
        if pattern.search(text):
            return kind
    if _URL_PASSWORD.search(text) or _URL_TOKEN_USER.search(text):
        return "URL password"
    if _AWS_KEY_ID.search(text):
        return "AWS secret access key"
    if _NETRC.search(text):
        return "netrc password"
    return "credential"


# The document walk is built on the text rules above (imported last: it imports them from here).
from .secret_docs import find_in_mapping as find_in_mapping, mask_value as mask_value  # noqa: E402
