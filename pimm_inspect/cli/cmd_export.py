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
              help="Replayed steps: keep every copy (with its attempt), or per step the newest/oldest.")
def command(run: str, fmt: str, output: str, tags: tuple[str, ...], policy: str) -> None:
    """Export scalars as a tidy table: tag, step, value, wall_time, attempt, source.

    Example: pimm-inspect export exp/run --format parquet -o run.parquet
    """
    from ..report.export import scalar_frame

    target = load_runs(run, single=True)[0]
    frame = scalar_frame(target, tags, policy)
    if fmt == "parquet":
        if output == "-":
            stderr("pimm-inspect: parquet needs a file (-o FILE)")
            sys.exit(EXIT_USAGE)
        try:
            frame.to_parquet(output, index=False)
        except ImportError:
            stderr("pimm-inspect: parquet export needs pyarrow: pip install 'pimm-inspect[parquet]'")
            sys.exit(EXIT_USAGE)
    elif fmt == "csv":
        text = frame.to_csv(index=False)
        _write(output, text)
    else:
        text = frame.to_json(orient="records", lines=False, indent=None)
        _write(output, text + "\n")
    from ..report.safe_text import clean

    stderr(f"pimm-inspect: wrote {len(frame)} points of {frame['tag'].nunique()} tags to {clean(output, newlines=False)}")


def _write(output: str, text: str) -> None:
    if output == "-":
        from ..report.safe_text import clean

        # Tags are file-derived: a person reading the CSV in a terminal sees control characters as escapes.
        click.echo(clean(text) if sys.stdout.isatty() else text, nl=False)
    else:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
