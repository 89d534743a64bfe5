"""The Config tab: every config document as a searchable tree, secrets masked."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, Tree
from textual.widgets.tree import TreeNode

from ...analysis.secrets import mask_text, mask_value
from ...model import ConfigDoc, Run
from ...report.safe_text import SHOWN_LINE_CHARS, clean_name, data_text, elide
from ..facts import compile_filter

MAX_NODES = 20000
"""Beyond this many nodes the tree stops growing (a pathological config must not freeze the UI)."""


def _leaf_text(key: str, value: Any) -> str:
    shown = repr(value) if isinstance(value, str) else ("null" if value is None else str(value))
    return f"{key}: {shown}" if key else shown


def flatten(data: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted path, leaf value) pairs of a nested document, in document order."""
    out: list[tuple[str, Any]] = []
    stack: list[tuple[str, Any]] = [(prefix, data)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict) and node:
            stack += [(f"{path}.{k}" if path else str(k), v) for k, v in reversed(list(node.items()))]
        elif isinstance(node, (list, tuple)) and node and any(isinstance(v, (dict, list)) for v in node):
            stack += [(f"{path}[{i}]", v) for i, v in reversed(list(enumerate(node)))]
        else:
            out.append((path, node))
    return out


class ConfigPane(Vertical):
    """A search box over a Tree of the run's config documents."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.docs: list[tuple[ConfigDoc, Any]] = []
        self.complete = True
        """False while the run is still being read (more documents may come)."""

    def compose(self) -> ComposeResult:
        yield Input(placeholder="/ search keys and values (!negate, /regex/)", id="config-search")
        yield Tree("config", id="config-tree")

    def set_run(self, run: Run) -> None:
        """Mask every document once and show them."""
        self.set_documents(run.configs)

    def set_documents(self, configs: Sequence[ConfigDoc], complete: bool = True) -> None:
        """Show these documents (``complete`` False: the quick stage's, more may come with the full read)."""
        order = {"resolved_config": 0, "config_py": 1, "model_config": 2, "hf_training_args": 3, "wandb_config": 4}
        docs = sorted(configs, key=lambda d: order.get(d.kind, 9))
        self.docs = [(d, mask_value(dict(d.data)) if isinstance(d.data, dict) else None) for d in docs]
        self.complete = complete
        self._rebuild()

    def focus_search(self) -> None:
        """Put the cursor in the search box."""
        self.query_one("#config-search", Input).focus()

    @on(Input.Changed, "#config-search")
    def _search_changed(self) -> None:
        self._rebuild()

    @on(Input.Submitted, "#config-search")
    def _search_submitted(self) -> None:
        self.query_one("#config-tree", Tree).focus()

    def _rebuild(self) -> None:
        query = self.query_one("#config-search", Input).value.strip()
        keep = compile_filter(query)
        tree: Tree[None] = self.query_one("#config-tree", Tree)
        tree.clear()
        tree.root.expand()
        tree.show_root = False
        if not self.docs:
            tree.root.add_leaf("this run has no config documents" if self.complete else "reading…")
            tree.root.add_leaf("(none of resolved_config.json, config.py, a W&B config, Trainer args)")
            return
        budget = [MAX_NODES]
        for doc, data in self.docs:
            node = tree.root.add(data_text(f"{doc.kind}  ({clean_name(doc.path)})", newlines=False), expand=True)
            if data is not None:
                leaves = [(p, v) for p, v in flatten(data) if not query or keep(_leaf_text(p, v))]
                self._add_nested(node, leaves, budget)
            elif doc.text is not None:
                for number, line in enumerate(mask_text(doc.text).splitlines(), start=1):
                    if query and not keep(line):
                        continue
                    if budget[0] <= 0:
                        break
                    budget[0] -= 1
                    node.add_leaf(data_text(elide(f"{number:>4}  {line}", SHOWN_LINE_CHARS), newlines=False))
            if not node.children:
                node.add_leaf("(nothing matches)" if query else "(empty)")
            if query:
                node.expand_all()

    def _add_nested(self, parent: TreeNode[None], leaves: list[tuple[str, Any]], budget: list[int]) -> None:
        """Rebuild nesting from dotted paths so a search keeps each match's parents."""
        nodes: dict[str, TreeNode[None]] = {}
        for path, value in leaves:
            if budget[0] <= 0:
                parent.add_leaf("… (too many entries to show)")
                return
            parts = path.split(".") if path else [""]
            node = parent
            for depth in range(len(parts) - 1):
                key = ".".join(parts[:depth + 1])
                if key not in nodes:
                    nodes[key] = node.add(data_text(elide(parts[depth]), newlines=False), expand=depth < 1)
                    budget[0] -= 1
                node = nodes[key]
            node.add_leaf(data_text(elide(_leaf_text(elide(parts[-1]), value), SHOWN_LINE_CHARS), newlines=False))
            budget[0] -= 1
