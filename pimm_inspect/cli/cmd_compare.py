"""``pimm-inspect compare RUN RUN...`` / ``compare RUN --attempts``: values side by side, exactly as logged."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ._common import EXIT_USAGE, json_option, load_runs, stderr


@click.command("compare")
@click.argument("runs", nargs=-1, type=click.Path())
@click.option("--attempts", "by_attempt", is_flag=True,
              help="Compare the attempts of each RUN: per replayed range, every copy of a step side by side.")
@click.option("--attempt", "attempts", type=click.IntRange(1), multiple=True,
              help="Compare these attempts (repeatable) of the RUNs instead of whole runs.")
@click.option("--tag", "tags", multiple=True, help="Tag glob (repeatable), e.g. 'train_batch/loss' or 'val/*'.")
@click.option("--policy", type=click.Choice(["newest", "oldest"]), default="newest", show_default=True,
              help="A run (or attempt) that logged a step more than once: its newest or its oldest copy.")
@click.option("--rows", type=click.IntRange(0), default=30, show_default=True,
              help="Step rows per tag in the text output, first and last halves (0: all; --json has every row).")
@click.option("--brief", is_flag=True, help="One line per tag (shared steps, largest difference), no step rows.")
@json_option
def command(runs: tuple[str, ...], by_attempt: bool, attempts: tuple[int, ...], tags: tuple[str, ...], policy: str,
            rows: int, brief: bool, as_json: bool) -> None:
    """Compare runs (each RUN, or every run under a folder of runs), or the attempts of a run, per tag over the
    steps they share; values exact.

    Example: pimm-inspect compare exp/run_a exp/run_b --tag 'train_batch/loss'
    """
    from ..analysis.compare import compare_attempts, compare_sides, make_sides
    from ..report.json_doc import dumps
    from ..report.safe_text import clean, clean_name

    paths = runs or (".",)
    if by_attempt and attempts:
        stderr("pimm-inspect: --attempts compares every attempt of a run; --attempt N picks attempts to compare "
               "as sides: use one of them")
        sys.exit(EXIT_USAGE)
    loaded = [run for path in paths for run in load_runs(path)]  # a tree: every run under it
    base = Path(paths[0]) if len(paths) == 1 else Path(".")
    if by_attempt:
        from ..report.compare_doc import attempts_document, attempts_run
        from ..report.compare_text import attempts_text

        compared = [compare_attempts(run, tags) for run in loaded]
        if as_json:
            click.echo(dumps(attempts_document([attempts_run(c, base) for c in compared])))
            return
        click.echo("\n\n".join(attempts_text(c, rows, brief) for c in compared))
        return
    sides, missing = make_sides(loaded, attempts)
    for run, index in missing:
        stderr(f"pimm-inspect: {clean_name(run.name)} has no attempt {index} "
               f"(attempts: {', '.join(str(a.index) for a in run.attempts) or 'none'})")
    if len(sides) < 2:
        stderr("pimm-inspect: compare needs two or more runs (compare RUN RUN...), attempts of a run "
               "(--attempt 1 --attempt 2), or --attempts for the copies of a run's replayed steps")
        sys.exit(EXIT_USAGE)
    comparison = compare_sides(sides, tags, policy)
    if not comparison.tags and not comparison.partial:
        stderr(f"pimm-inspect: no tag matches {clean(', '.join(tags) or '*', newlines=False)} on any side")
        sys.exit(EXIT_USAGE)
    if as_json:
        from ..report.compare_doc import sides_document

        click.echo(dumps(sides_document(comparison, base)))
    else:
        from ..report.compare_text import sides_text

        click.echo(sides_text(comparison, rows, brief))
    if missing:
        sys.exit(EXIT_USAGE)  # as for a PATH that holds no run: the rest is compared, the exit code says so
