"""``pimm-inspect curves RUN``: plot scalar curves in the terminal."""

from __future__ import annotations

import shutil
import sys
import textwrap

import click

from ._common import EXIT_USAGE, color_wanted, json_option, load_runs, stderr


@click.command("curves")
@click.argument("run", type=click.Path(), default=".")
@click.option("--tag", "tags", multiple=True, help="Tag glob (repeatable), e.g. 'train_batch/loss' or 'val/*'.")
@click.option("--smooth", type=click.FloatRange(0.0, 0.999), default=0.0, show_default=True,
              help="EMA smoothing weight (TensorBoard's debiased formula).")
@click.option("--x", "x_axis", type=click.Choice(["step", "wall", "relative"]), default="step", show_default=True)
@click.option("--policy", type=click.Choice(["all", "newest", "oldest"]), default="all", show_default=True,
              help="Replayed steps: all copies as attempt segments, or per step the newest/oldest copy.")
@click.option("--log-y", is_flag=True, help="Logarithmic y axis.")
@click.option("--width", type=click.IntRange(20, 1000), default=None,
              help="Plot width in characters (default: terminal width; 100 when piped).")
@click.option("--height", type=click.IntRange(5, 500), default=None,
              help="Plot height in lines, without the legend (default: terminal height - 4, 12 to 30).")
@json_option
def command(run: str, tags: tuple[str, ...], smooth: float, x_axis: str, policy: str, log_y: bool,
            width: int | None, height: int | None, as_json: bool) -> None:
    """Plot a run's scalar curves; resume seams are marked and replays shown per the policy.

    Example: pimm-inspect curves exp/run --tag train_batch/loss --policy all --smooth 0.6
    """
    from ..report.plot import lines_for, render, select_tags
    from ..report.safe_text import clean

    runs = load_runs(run, single=True)
    target = runs[0]
    chosen = select_tags(target, tags)
    if not chosen:
        stderr(f"pimm-inspect: no tag matches {clean(', '.join(tags) or '*', newlines=False)}; "
               f"tags: {clean(', '.join(target.tags()[:20]), newlines=False)}")
        sys.exit(EXIT_USAGE)
    if not tags and len(chosen) > 4:
        preferred = [t for t in chosen if t.endswith("loss")] or chosen
        chosen = preferred[:4]
        stderr(f"pimm-inspect: plotting {clean(', '.join(chosen), newlines=False)} "
               f"(use --tag to choose among {len(target.tags())} tags)")
    if as_json:
        from ..report.json_doc import dumps

        doc = {"schema_version": 1, "policy": policy, "x": x_axis, "smooth": smooth, "lines": [
            {"tag": tag, "label": line.label, "attempt": line.attempt, "x": line.x.tolist(), "y": line.y.tolist()}
            for tag in chosen for line in lines_for(target, tag, policy, smooth, x_axis, max_points=10**9)]}
        click.echo(dumps(doc))
        return
    columns, lines = shutil.get_terminal_size((100, 30))
    color = color_wanted()
    chart = render(target, chosen, policy, smooth, x_axis, width or columns, height or min(max(lines - 4, 12), 30),
                   log_y, color=color)
    click.echo(chart, color=color)  # click would strip the colours whenever stdout is not a terminal
    from ..analysis.summary import policy_note

    note = textwrap.fill(clean(policy_note(target, policy), newlines=False), width=width or columns)
    click.echo("\n" + note)  # per replayed range: how many copies, which attempts; what each viewer shows
