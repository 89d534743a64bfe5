"""``pimm-inspect export RUN``: every scalar point as CSV, JSON or Parquet."""

from __future__ import annotations

import sys

import click

from ._common import EXIT_USAGE, load_runs, stderr


@click.command("export")
@click.argument("run", type=click.Path(), default=".")
@click.option("--format", "fmt", type=click.Choice(["csv", "json", "parquet"]), default="csv", show_default=True)
@click.option("-o", "--output", required=True, help="Output file ('-' for stdout; not for parquet).")
@click.option("--tag", "tags", multiple=True, help="Tag glob (repeatable).")
@click.option("--policy", type=click.Choice(["all", "newest", "oldest"]), default="all", show_default=True,
              help="Replayed steps: one row per (step, attempt), or per step the newest/oldest writer's.")
@click.option("--all-sources", is_flag=True,
              help="Keep every source's copy (TensorBoard, W&B, Trainer state, train.log), not only the preferred one.")
def command(run: str, fmt: str, output: str, tags: tuple[str, ...], policy: str, all_sources: bool) -> None:
    """Export scalars as a tidy table: tag, step, value, wall_time, attempt, source.

    One row per (tag, step, attempt) after --policy, from each tag's preferred source (the same points
    `show --json` counts). JSON floats read back exactly; NaN/inf values are the strings "NaN",
    "Infinity", "-Infinity"; a missing wall_time or attempt is null.

    Example: pimm-inspect export exp/run --format parquet -o run.parquet
    """
    from ..analysis.scalar_rows import scalar_rows, to_frame
    from ..report.export import write_json

    target = load_runs(run, single=True)[0]
    rows = scalar_rows(target, tags, policy, all_sources)
    tag_count = len({block.tag for block in rows if len(block)})
    if fmt == "json":
        if output == "-":
            count = write_json(rows, sys.stdout)
        else:
            with open(output, "w", encoding="utf-8") as fh:
                count = write_json(rows, fh)
        stderr(f"pimm-inspect: wrote {count} points of {tag_count} tags to {output}")
        return
    frame = to_frame(rows)  # pandas only for CSV and Parquet
    if fmt == "parquet":
        if output == "-":
            stderr("pimm-inspect: parquet needs a file (-o FILE)")
            sys.exit(EXIT_USAGE)
        try:
            frame.to_parquet(output, index=False)
        except ImportError:
            stderr("pimm-inspect: parquet export needs pyarrow: pip install 'pimm-inspect[parquet]'")
            sys.exit(EXIT_USAGE)
    else:
        _write(output, frame.to_csv(index=False))
    from ..report.safe_text import clean

    stderr(f"pimm-inspect: wrote {len(frame)} points of {tag_count} tags to {clean(output, newlines=False)}")


def _write(output: str, text: str) -> None:
    if output == "-":
        from ..report.safe_text import clean

        # Tags are file-derived: a person reading the CSV in a terminal sees control characters as escapes.
        click.echo(clean(text) if sys.stdout.isatty() else text, nl=False)
    else:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
