"""``compare`` as plain text: per tag a table of the values side by side, never cut sideways, never padded at the
end of a line. Values are printed exactly (the shortest text that reads back to the same double); every name and tag
is data (control characters escaped, never markup)."""

from __future__ import annotations

import math
from collections.abc import Iterator

from ..analysis.compare import AttemptsComparison, CopyTable, SideBySide, SidesComparison, fmt_range
from ..analysis.replays import describe
from .safe_text import clean, clean_name

ABSENT = "-"
"""A copy that does not exist (the writer did not log that step)."""
POLICY_WORDS = {"newest": "per step the newest copy of each side (what TensorBoard's default loader shows)",
                "oldest": "per step the oldest copy of each side"}


def exact(value: float) -> str:
    """A float as the shortest text that reads back to the same double; ``NaN``, ``Infinity``, ``-Infinity``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(float(value))


def relative(value: float) -> str:
    """A relative difference to 4 significant digits (the difference itself is printed exactly)."""
    return exact(value) if not math.isfinite(value) else f"{value:.4g}"


def letter(i: int) -> str:
    """Column names of sides: A, B, ..., Z, AA, AB, ..."""
    name = ""
    i += 1
    while i:
        i, rest = divmod(i - 1, 26)
        name = chr(ord("A") + rest) + name
    return name


def table(rows: list[list[str]]) -> list[str]:
    """Rows as aligned columns two spaces apart; the last column is not padded, no line ends in a space."""
    if not rows:
        return []
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def _cut(count: int, limit: int) -> tuple[list[int], int]:
    """The row indices shown under ``--rows`` (0: all), the first half and the last half, and how many are left out."""
    if limit <= 0 or count <= limit:
        return list(range(count)), 0
    head = (limit + 1) // 2
    tail = limit - head
    return list(range(head)) + list(range(count - tail, count)), count - limit


def _with_gap(lines: list[str], head: int, hidden: int, what: str) -> list[str]:
    """The table's lines (header first) with one ``... N more ...`` line where rows were left out."""
    if not hidden:
        return lines
    gap = f"... {hidden} more {what if hidden != 1 else what[:-1]} (--rows 0 for all, --json for every value) ..."
    return lines[:1 + head] + [gap] + lines[1 + head:]


def _largest(table_: SideBySide | CopyTable) -> str:
    if table_.max_abs_diff is None:
        return "no finite difference"
    if table_.max_abs_diff == 0.0 and table_.max_rel_diff == 0.0 and bool((table_.abs_diff == 0.0).all()):
        return "identical at every step"
    text = f"largest difference {exact(table_.max_abs_diff)} at step {table_.max_abs_diff_step}"
    if table_.max_rel_diff is not None:
        text += f", largest relative {relative(table_.max_rel_diff)}"
    return text


def _side_lines(comparison: SidesComparison, tag: SideBySide, rows: int, brief: bool) -> Iterator[str]:
    n = tag.steps.shape[0]
    holds = ", ".join(f"{letter(i)} {points}" for i, points in enumerate(tag.points))
    span = f", {fmt_range(int(tag.steps[0]), int(tag.steps[-1]))}" if n else ""
    head = f"{clean(tag.tag, newlines=False)}: {n} shared step{'s' if n != 1 else ''}{span} (steps logged: {holds})"
    if len(set(tag.kinds)) > 1:  # e.g. one side's event file against another's train.log (printed to 4 decimals)
        head += " from " + ", ".join(f"{letter(i)} {kind}" for i, kind in enumerate(tag.kinds))
    if not n:
        yield head
        return
    yield f"{head}; {_largest(tag)}"
    if brief:
        return
    shown, hidden = _cut(n, rows)
    lines = table([["step"] + [letter(i) for i in range(len(comparison.sides))] + ["difference", "relative"]] +
                  [[str(int(tag.steps[i]))] + [exact(v) for v in tag.values[i].tolist()] +
                   [exact(float(tag.abs_diff[i])), relative(float(tag.rel_diff[i]))] for i in shown])
    yield from ("  " + line for line in _with_gap(lines, (rows + 1) // 2, hidden, "shared steps"))


def sides_text(comparison: SidesComparison, rows: int = 30, brief: bool = False) -> str:
    """``compare RUN RUN...``: the sides named by letter, then per tag its shared steps side by side."""
    out = [f"Comparing {len(comparison.sides)} sides, {POLICY_WORDS[comparison.policy]}; difference = largest - "
           "smallest value of the step, relative = difference / largest magnitude:"]
    out += [f"  {letter(i)} = {clean(side.label, newlines=False)}" for i, side in enumerate(comparison.sides)]
    for tag in comparison.tags:
        out.append("")
        out += list(_side_lines(comparison, tag, rows, brief))
    if comparison.partial:
        out.append("")
        out.append("Not compared (not logged by every side): " + "; ".join(
            f"{clean(tag, newlines=False)} ({' '.join(letter(i) for i in holders)})"
            for tag, holders in comparison.partial))
    return "\n".join(out)


def _writer(writer: int | str) -> str:
    return f"#{writer}" if isinstance(writer, int) else clean(writer, newlines=False)


def _copy_lines(tag: CopyTable, rows: int, brief: bool) -> Iterator[str]:
    n = tag.steps.shape[0]
    kind = ("per step" if tag.per_step else "not per step: sparser than the densest tag, compared after it") + (
        f"; from {tag.source}" if tag.source else "")
    yield f"  {clean(tag.tag, newlines=False)} ({kind}): {n} step{'s' if n != 1 else ''} with copies; {_largest(tag)}"
    if brief:
        return
    shown, hidden = _cut(n, rows)
    copies = tag.copies
    body = [[str(int(tag.steps[i]))] + [exact(float(v)) if held else ABSENT
                                        for v, held in zip(tag.values[i], tag.present[i])] +
            [str(int(copies[i])), exact(float(tag.abs_diff[i])), relative(float(tag.rel_diff[i]))] for i in shown]
    lines = table([["step"] + [_writer(w) for w in tag.writers] + ["copies", "difference", "relative"]] + body)
    yield from ("    " + line for line in _with_gap(lines, (rows + 1) // 2, hidden, "steps"))


def attempts_text(comparison: AttemptsComparison, rows: int = 30, brief: bool = False) -> str:
    """``compare RUN --attempts``: the attempts, then per replayed range the copies of each tag side by side."""
    run = comparison.run
    out = [f"{clean_name(run.name)}: {len(run.attempts)} attempts"]
    for a in run.attempts:
        span = fmt_range(a.first_step, a.last_step) if a.first_step is not None and a.last_step is not None else "?"
        restored = f", restored step {a.restore_step}" if a.restore_step is not None else ""
        out.append(f"  #{a.index} steps {span}, {a.origin}{restored}")
    if not comparison.ranges:
        out.append("No step was written more than once: the attempts share no step to compare.")
        return "\n".join(out)
    out.append("Per replayed range, the copies of each step (per-step tags first); difference = largest - smallest "
               "copy, relative = difference / largest magnitude:")
    for r in comparison.ranges:
        out.append("")
        out.append(f"Steps {clean(describe(r.replayed), newlines=False)}")
        if not r.tags:
            out.append("  The files hold one copy of these steps (no tag was logged twice in the range), "
                       "so there are no values to compare.")
        for tag in r.tags:
            out += list(_copy_lines(tag, rows, brief))
    return "\n".join(out)

