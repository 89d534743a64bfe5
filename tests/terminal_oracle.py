"""The terminal-output oracle shared by a property test and the fuzz harness (issue 14).

``run_with(text)`` puts one arbitrary string into every field of a run that the text views print (folder
name, tag, checkpoint path, unsafe global, W&B id, host, commit, launch command, attempt ending, finding
message and explanation, log event), ``render_all`` prints every text view of it (``ls`` row, ``show``,
``check`` with and without ``--brief``, the ``curves`` chart) through a Rich console on a colour terminal, and
``foreign_controls`` lists any control character in the output that Rich did not put there itself.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np

from pimm_inspect.model import (Attempt, CheckpointInfo, Finding, LogEvent, Provenance, Run, Severity, WandbInfo,
                                make_series)

SGR = re.compile(r"\x1b\[[0-9;]*m")
"""Rich's own styling: the only escape sequence allowed in coloured output."""


def run_with(text: str) -> Run:
    """A run whose every printed string field holds ``text``."""
    series = make_series(text or "t", np.arange(1, 6), np.linspace(1.0, 0.5, 5), None, f"events.{text}", 1)
    return Run(
        root=Path("/nowhere") / (text.replace("/", "_").replace("\0", "_") or "run"), kind="pimm", era="E2",
        status="crashed", name=text or "run",
        attempts=(Attempt(1, started_at=text, first_step=1, last_step=5, origin="fresh", ended="crashed",
                          end_detail=text, resumed_from=text, sources=(text,)),),
        series=(series,),
        events=(LogEvent("traceback", text, "train.log", 3, "ERROR", text, 1, 5),),
        checkpoints=(CheckpointInfo(path=f"model/{text}", format="legacy", role="last", complete=True, global_step=5,
                                    wandb_run_id=text, unsafe_globals=(text,)),),
        provenance=Provenance(git_commit=text, host=text, command=text, launch_command=text, created_at=text,
                              source=text),
        wandb=WandbInfo(run_ids=(text,), project=text, entity=text, url=text, sync_command=text),
        findings=(Finding("run.crashed", Severity.ERROR, text, (text,), (5, 5), text),),
    )


def render_all(run: Run, color_system: str | None) -> str:
    """Every text view of ``run`` as a colour (or plain) terminal would receive it."""
    from rich.console import Console

    from pimm_inspect.report.plot import render
    from pimm_inspect.report.text import findings_brief, findings_view, run_summary, runs_table, runs_table_row

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system=color_system, width=120, markup=False,
                      emoji=False, highlight=False)
    base = run.root.parent
    console.print(runs_table([runs_table_row(run, base)]))
    console.print(run_summary(run, base))
    console.print(findings_view(run, base))
    for line in findings_brief(run, base):
        console.print(line, soft_wrap=True)
    chart = render(run, [s.tag for s in run.series], width=60, height=12, color=color_system is not None)
    return out.getvalue() + chart


def foreign_controls(output: str, coloured: bool) -> list[str]:
    """Control characters (C0 but newline, DEL, C1) left after removing Rich's SGR sequences (none when plain)."""
    rest = SGR.sub("", output) if coloured else output
    return [f"{ch!r} near {rest[max(0, i - 20):i + 10]!r}" for i, ch in enumerate(rest)
            if (ord(ch) < 0x20 and ch != "\n") or 0x7f <= ord(ch) <= 0x9f]
