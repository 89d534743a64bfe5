"""``pimm-inspect curves RUN``: plot scalar curves in the terminal."""

from __future__ import annotations

import shutil
import sys
import textwrap

import click

from ._common import EXIT_USAGE, color_wanted, json_option, load_runs, stderr


@click.command("curves")
@click.argument("runs", nargs=-1, type=click.Path())
@click.option("--attempt", "attempts", type=click.IntRange(1), multiple=True,
              help="Draw only this attempt of each RUN (repeatable: attempts overlaid, the legend names each).")
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
def command(runs: tuple[str, ...], attempts: tuple[int, ...], tags: tuple[str, ...], smooth: float, x_axis: str,
            policy: str, log_y: bool, width: int | None, height: int | None, as_json: bool) -> None:
    """Plot the scalar curves of a run, or of several runs and attempts overlaid; resume seams are marked and
    replays shown per the policy.

    Example: pimm-inspect curves exp/run --tag train_batch/loss --policy all --smooth 0.6

    \b
    Overlays: pimm-inspect curves exp/run_a exp/run_b --tag train_batch/loss
              pimm-inspect curves exp/run --attempt 1 --attempt 2
    """
    from ..analysis.compare import make_sides
    from ..report.plot import empty_sides, render_sides, select_tags, side_lines
    from ..report.safe_text import clean, clean_name

    loaded = [run for path in runs or (".",) for run in load_runs(path, single=True)]
    sides, missing = make_sides(loaded, attempts)
    for run, index in missing:
        stderr(f"pimm-inspect: {clean_name(run.name)} has no attempt {index} "
               f"(attempts: {', '.join(str(a.index) for a in run.attempts) or 'none'})")
    if not sides:
        sys.exit(EXIT_USAGE)
    every_tag = sorted({t for run in loaded for t in run.tags()})
    chosen = sorted({t for run in loaded for t in select_tags(run, tags)})
    if not chosen:
        stderr(f"pimm-inspect: no tag matches {clean(', '.join(tags) or '*', newlines=False)}; "
               f"tags: {clean(', '.join(every_tag[:20]), newlines=False)}")
        sys.exit(EXIT_USAGE)
    if not tags and len(chosen) > 4:
        preferred = [t for t in chosen if t.endswith("loss")] or chosen
        chosen = preferred[:4]
        stderr(f"pimm-inspect: plotting {clean(', '.join(chosen), newlines=False)} "
               f"(use --tag to choose among {len(every_tag)} tags)")
    for side in empty_sides(sides, chosen):
        stderr(f"pimm-inspect: {clean(side.label, newlines=False)} has no point of "
               f"{clean(', '.join(chosen), newlines=False)} to draw"
               + (" (its files do not say which points this attempt wrote)" if side.attempt is not None else ""))
    if as_json:
        from ..report.json_doc import dumps

        doc = {"schema_version": 1, "policy": policy, "x": x_axis, "smooth": smooth, "lines": [
            {"tag": tag, "label": label, "run": side.run_label, "attempt": line.attempt,
             "x": line.x.tolist(), "y": line.y.tolist()}
            for tag in chosen
            for side, line, label in side_lines(sides, [tag], policy, smooth, x_axis, max_points=10**9)]}
        click.echo(dumps(doc))
        if missing:
            sys.exit(EXIT_USAGE)
        return
    columns, lines = shutil.get_terminal_size((100, 30))
    color = color_wanted()
    chart = render_sides(sides, chosen, policy, smooth, x_axis, width or columns,
                         height or min(max(lines - 4, 12), 30), log_y, color=color)
    click.echo(chart, color=color)  # click would strip the colours whenever stdout is not a terminal
    from ..analysis.summary import policy_note

    for run in dict.fromkeys(side.run for side in sides):
        note = clean(policy_note(run, policy), newlines=False)
        named = note if len(loaded) == 1 else f"{clean_name(run.name)}: {note}"
        click.echo("\n" + textwrap.fill(named, width=width or columns))  # per replayed range: copies, attempts
    if missing:
        sys.exit(EXIT_USAGE)  # as for a PATH that holds no run: the rest is drawn, the exit code says so
