"""Reader for PyTorch Lightning's ``hparams.yaml`` (the ``save_hyperparameters`` dump of a logger version folder)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...model import ConfigDoc, Finding, Severity
from .._common import decode_text, file_finding, read_bytes_capped
from ..protocol import Read

if TYPE_CHECKING:
    import yaml

MAX_HPARAMS_BYTES = 4 * 1024 * 1024
MAX_NODES = 100_000
MAX_DEPTH = 64
"""Bounds on what is parsed: bytes read, YAML nodes and nesting (beyond them the text is kept unparsed)."""


class _Refused(Exception):
    """The document is outside what this reader parses (aliases, too many nodes, too deep)."""


def _check_tree(node: Any) -> None:
    """Walk the composed node graph iteratively, every alias expanded: bounded size and depth once expanded.

    Lightning writes an alias when one object is two hyperparameters (a tensor passed twice); counting each
    alias's nodes again where it is used keeps a billion-laughs document (or an alias cycle) to ``MAX_NODES``.
    """
    import yaml  # PyYAML (a declared dependency), imported only for hparams.yaml

    count = 0
    stack: list[tuple[Any, int]] = [(node, 0)]
    while stack:
        current, depth = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise _Refused(f"more than {MAX_NODES} YAML nodes once its aliases are expanded")
        if depth > MAX_DEPTH:
            raise _Refused(f"nested deeper than {MAX_DEPTH}")
        if isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                stack += [(key, depth + 1), (value, depth + 1)]
        elif isinstance(current, yaml.SequenceNode):
            stack += [(child, depth + 1) for child in current.value]


def _plain(value: Any) -> Any:
    """JSON-shaped data: keys as strings; dates, bytes and sets (YAML's extra types) as text or lists."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (bytes, bytearray)):  # a ``!!binary`` body (a pickled tensor storage): data, not text
        return f"<{len(value)} bytes of binary data>"
    return str(value)


def _loader(text: str) -> yaml.SafeLoader:
    """A SafeLoader whose Python tags (Lightning dumps argparse Namespaces so) become plain data, never objects."""
    import yaml  # see _check_tree

    class Loader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no type information: a subclass of Any
        pass

    def python_tag(loader: Any, suffix: str, node: Any) -> Any:
        if isinstance(node, yaml.MappingNode):
            return loader.construct_mapping(node, deep=True)
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node, deep=True)
        return f"<!!python/{suffix} {loader.construct_scalar(node)!s}>"

    Loader.add_multi_constructor("tag:yaml.org,2002:python/", python_tag)
    return Loader(text)


def read_hparams_yaml(path: Path, rel_path: str) -> Read[ConfigDoc]:
    """Parse ``hparams.yaml`` safely (no objects built, no aliases, bounded); the text is kept when it cannot be."""
    data, findings = read_bytes_capped(path, rel_path, MAX_HPARAMS_BYTES)
    if not data:
        return Read(None, tuple(f for f in findings if f.code != "file.empty"))
    text, more = decode_text(data, rel_path)
    findings += more
    try:
        import yaml  # see _check_tree
    except ImportError:
        return Read(ConfigDoc(path=rel_path, kind="lightning_hparams", text=text), tuple(findings))
    try:
        loader = _loader(text)  # PyYAML checks the characters here: a NUL or other control character is refused
    except yaml.YAMLError as exc:
        findings.append(file_finding("file.corrupt", rel_path, f"{rel_path}: not valid YAML ({str(exc)[:200]})"))
        return Read(ConfigDoc(path=rel_path, kind="lightning_hparams", text=text), tuple(findings))
    try:
        node = loader.get_single_node()
        if node is None:
            return Read(ConfigDoc(path=rel_path, kind="lightning_hparams", data={}), tuple(findings))
        _check_tree(node)
        value = loader.construct_document(node)
    except _Refused as exc:
        findings.append(file_finding("file.unsupported", rel_path, f"{rel_path}: not parsed ({exc}); shown as text",
                                     severity=Severity.INFO))
        return Read(ConfigDoc(path=rel_path, kind="lightning_hparams", text=text), tuple(findings))
    except yaml.YAMLError as exc:
        findings.append(file_finding("file.corrupt", rel_path, f"{rel_path}: not valid YAML ({str(exc)[:200]})"))
        return Read(ConfigDoc(path=rel_path, kind="lightning_hparams", text=text), tuple(findings))
    finally:
        loader.dispose()
    value = _plain(value)
    if not isinstance(value, dict):
        value = {"hparams": value}
    return Read(ConfigDoc(path=rel_path, kind="lightning_hparams", data=value), tuple(findings))
