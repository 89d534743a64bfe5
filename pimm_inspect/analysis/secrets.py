"""Find values that look like secrets and mask them wherever they are shown."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

MASK = "****"
"""What a masked secret looks like in every output."""

_TOKEN_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("AWS access key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("GitHub token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b")),
    ("GitHub token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{40,}\b")),
    ("OpenAI-style key", re.compile(r"\bsk-[A-Za-z0-9_-]{20,}\b")),
    ("Slack token", re.compile(r"\bxox[abpr]-[A-Za-z0-9-]{10,}\b")),
    ("W&B API key", re.compile(r"\blocal-[0-9a-f]{40}\b")),
]
# NAME=value or NAME: value or --name value where the name says "secret"; the value is masked.
_ASSIGN = re.compile(
    r"(?P<name>[A-Za-z0-9_.\-]*(?:API[_-]?KEY|APIKEY|TOKEN|SECRET|PASSWORD|PASSWD|ACCESS[_-]KEY|PRIVATE[_-]KEY)"
    r"[A-Za-z0-9_\-]*)"
    r"(?P<sep>\s*[=:]\s*|\s+)(?P<quote>['\"]?)(?P<value>[^\s'\",;}]{6,})",
    re.IGNORECASE,
)
_SECRET_KEY = re.compile(r"(api_?key|apikey|token|secret|password|passwd|access_key|private_key|credential)",
                         re.IGNORECASE)
_BENIGN_VALUES = {"none", "null", "true", "false", "****", "<redacted>", "redacted", "***", ""}
_BENIGN_KEYS = re.compile(r"(max_tokens|num_tokens|token_len|tokenizer|n_tokens|tokens_per|token_id|pad_token|"
                          r"eos_token|bos_token|unk_token|mask_token|sep_token|cls_token)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class SecretHit:
    """Where a secret-looking value was found (never the value itself)."""

    where: str
    """Key path (``a.b.c``) in a document, or ``line N`` in a text."""
    kind: str


def _looks_secret_value(value: str) -> bool:
    v = value.strip().strip("'\"")
    placeholder = v.startswith("<") and v.endswith(">")  # HF writes "<HUB_TOKEN>" in place of the real one
    return (len(v) >= 8 and v.lower() not in _BENIGN_VALUES and not v.startswith("$") and MASK not in v
            and not placeholder)


def mask_text(text: str) -> str:
    """Mask token-shaped substrings and ``NAME=value`` assignments whose name says secret."""
    for _kind, pattern in _TOKEN_PATTERNS:
        text = pattern.sub(MASK, text)

    def repl(match: re.Match[str]) -> str:
        if _BENIGN_KEYS.search(match["name"]) or not _looks_secret_value(match["value"]):
            return match.group(0)
        return f"{match['name']}{match['sep']}{match['quote']}{MASK}"

    return _ASSIGN.sub(repl, text)


def find_in_text(text: str) -> list[SecretHit]:
    """Secret-looking values in a text, by line."""
    hits: list[SecretHit] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if mask_text(line) != line:
            hits.append(SecretHit(f"line {number}", _kind_of(line)))
    return hits


def _kind_of(text: str) -> str:
    for kind, pattern in _TOKEN_PATTERNS:
        if pattern.search(text):
            return kind
    return "credential"


def _is_secret_entry(key: str, value: Any) -> bool:
    if not isinstance(value, str):
        return False
    if _SECRET_KEY.search(key) and not _BENIGN_KEYS.search(key) and _looks_secret_value(value):
        return True
    return mask_text(value) != value


def find_in_mapping(data: Any, prefix: str = "") -> list[SecretHit]:
    """Secret-looking values in a nested JSON-like document, by key path."""
    hits: list[SecretHit] = []
    stack: list[tuple[str, Any]] = [(prefix, data)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                child = f"{path}.{key}" if path else str(key)
                if isinstance(value, (dict, list)):
                    stack.append((child, value))
                elif _is_secret_entry(str(key), value):
                    hits.append(SecretHit(child, _kind_of(value) if mask_text(value) != value else "credential"))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                stack.append((f"{path}[{i}]", value))
        elif isinstance(node, str) and mask_text(node) != node:
            hits.append(SecretHit(path, _kind_of(node)))
    return sorted(hits, key=lambda h: h.where)


def mask_value(data: Any, key: str = "") -> Any:
    """A copy of a JSON-like value with every secret-looking string masked."""
    if isinstance(data, dict):
        return {k: mask_value(v, str(k)) for k, v in data.items()}
    if isinstance(data, list):
        return [mask_value(v, key) for v in data]
    if isinstance(data, tuple):
        return tuple(mask_value(v, key) for v in data)
    if isinstance(data, str):
        if key and _SECRET_KEY.search(key) and not _BENIGN_KEYS.search(key) and _looks_secret_value(data):
            return MASK
        return mask_text(data)
    return data
