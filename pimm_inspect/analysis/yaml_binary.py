"""The base64 bodies of YAML ``!!binary`` blocks: data, never a secret (one rule for masking and finding)."""

from __future__ import annotations

import re

# The indent is taken whole (the lookahead), so the pattern never re-splits a run of blanks: linear in the line.
_BINARY_HEADER = re.compile(r"^(?P<indent>[ \t]*)(?![ \t])[^\n#]*?!!binary[ \t]*[|>][-+0-9]*[ \t]*$")
_BASE64_LINE = re.compile(r"[ \t]*[A-Za-z0-9+/=]+[ \t]*")


def yaml_binary_lines(lines: list[str]) -> set[int]:
    """0-based indexes of the lines that are the base64 body of a YAML ``!!binary |`` block (data, not secrets).

    Lightning's ``hparams.yaml`` stores a tensor hyperparameter so; its body lines have the shape of a PEM key's.
    A body line is indented deeper than its header and holds only base64 characters; anything else ends the block.
    """
    found: set[int] = set()
    bare = [line.rstrip("\r\n") for line in lines]
    i = 0
    while i < len(bare):
        header = _BINARY_HEADER.match(bare[i]) if "!!binary" in bare[i] else None
        i += 1
        if header is None:
            continue
        depth = len(header["indent"])
        while i < len(bare) and (not bare[i].strip() or (
                len(bare[i]) - len(bare[i].lstrip()) > depth and _BASE64_LINE.fullmatch(bare[i]))):
            found.add(i)
            i += 1
    return found
