"""``pimm-inspect export RUN``: every scalar point as CSV, JSON or Parquet; ``export ROOT --format parquet -o DIR``:
the Parquet dataset of a whole tree of runs (tables runs, attempts, findings, scalars), updated in place."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from ._common import (EXIT_USAGE, UsageProblem, discovery_options, find_runs, iter_loaded, refuse_output_in_a_run,
                      session, stderr)


def _shard_option(_ctx: click.Context, _param: click.Parameter, value: str | None) -> tuple[int, int] | None:
    """``K/N`` as (K, N), 0 <= K < N."""
    if value is None:
        return None
    k, sep, n = value.partition("/")
    if not (sep and k.isdigit() and n.isdigit() and 0 <= int(k) < int(n) <= 999_999):
        raise click.BadParameter(f"{value!r} is not K/N with 0 <= K < N (e.g. 3/16, or $SLURM_ARRAY_TASK_ID/16)")
    return int(k), int(n)


def _dataset_wanted(output: str) -> bool:
    """Parquet to a directory (a name not ending in ``.parquet``, or an existing folder) is the dataset of a tree."""
    return output != "-" and (os.path.isdir(output) or not output.lower().endswith(".parquet"))


@click.command("export")
@click.argument("run", type=click.Path(), default=".")
@click.option("--format", "fmt", type=click.Choice(["csv", "json", "parquet"]), default="csv", show_default=True)
@click.option("-o", "--output", default=None,
              help="Output file ('-' or none: stdout, when it is not a terminal; not for parquet). Parquet: "
                   "FILE.parquet for one run's scalars, or a directory DIR for the dataset of every run under RUN.")
@click.option("--tag", "tags", multiple=True, help="Tag glob (repeatable).")
@click.option("--policy", type=click.Choice(["all", "newest", "oldest"]), default="all", show_default=True,
              help="Replayed steps: every record as written (all), or per step the newest/oldest writer's.")
@click.option("--all-sources", is_flag=True,
              help="Keep every source's copy (TensorBoard, W&B, Trainer state, train.log), not only the preferred one.")
@click.option("--prune", is_flag=True,
              help="Dataset: delete the partitions of runs no longer under ROOT (kept by default).")
@click.option("--shard", metavar="K/N", callback=_shard_option,
              help="Dataset: only shard K of N (0 <= K < N; a run's shard is the SHA-256 of its path relative to ROOT, "
                   "mod N), into its own manifest part, without the lock: N processes (a Slurm job array) build one "
                   "dataset at once; the next export without --shard merges the parts.")
@click.option("--compact", is_flag=True,
              help="Dataset: also write DIR/<table>.parquet, one file per table, rebuilt at the end (a query over "
                   "10,000 runs reads 2 files, not 20,000); an export without it removes them.")
@discovery_options
def command(run: str, fmt: str, output: str | None, tags: tuple[str, ...], policy: str, all_sources: bool,
            prune: bool, shard: tuple[int, int] | None, compact: bool) -> None:
    """Export scalars as a tidy table: tag, step, value, wall_time, attempt, source, seq.

    Rows keyed (tag, step, attempt, source, seq): --policy all keeps every record as written (seq numbers
    the repeats of a step within one file), newest/oldest one row per step; each tag from its preferred
    source (the same points `show --json` counts). JSON floats read back exactly; NaN/inf values are the strings "NaN",
    "Infinity", "-Infinity"; a missing wall_time or attempt is null.

    With --format parquet and -o DIR (not ending in .parquet), every run under RUN goes into a
    Hive-partitioned dataset: DIR/<table>/run=<id>/part-0.parquet for each of its tables (runs, attempts,
    findings, checkpoints, scalars). Exporting again rewrites only the runs whose files changed and adds new ones; runs no
    longer under RUN are kept unless --prune.

    Without -o, CSV and JSON go to stdout when it is a pipe or a file (a terminal gets an error: give -o FILE,
    or -o - to print there); nothing is said on stderr then, the table is the whole output.

    With --shard K/N, only the runs of shard K go into DIR, beside its own manifest part and without the lock, so
    a Slurm job array (--shard $SLURM_ARRAY_TASK_ID/N) builds one dataset; an export without --shard afterwards
    merges the parts (and reads again only what changed).

    Example: pimm-inspect export exp/ --format parquet -o runs_dataset
    """
    from ..analysis.scalar_rows import TagRows, iter_scalar_rows, scalar_rows, to_frame
    from ..report.export import csv_text, replaced_atomically, write_json
    from ..report.safe_text import clean

    if output is None:
        if fmt == "parquet":
            stderr("pimm-inspect: parquet needs -o: FILE.parquet for one run's scalars, or a directory DIR for the "
                   "dataset of every run under RUN")
            sys.exit(EXIT_USAGE)
        if _stdout_is_terminal():
            stderr(f"pimm-inspect: export writes a {fmt.upper()} table for a file or a pipe, and stdout is a terminal: "
                   "give -o FILE, pipe it (| less), or -o - to print it here")
            sys.exit(EXIT_USAGE)
        output = "-"
    if fmt == "parquet" and _dataset_wanted(output):
        _export_dataset(run, output, tags, policy, all_sources, prune, shard, compact)
        return
    for flag, given in (("--prune", prune), ("--shard", shard is not None), ("--compact", compact)):
        if given:
            stderr(f"pimm-inspect: {flag} is for the Parquet dataset (--format parquet -o DIR)")
            sys.exit(EXIT_USAGE)
    if fmt == "parquet" and output == "-":
        stderr("pimm-inspect: parquet needs a file (-o FILE)")
        sys.exit(EXIT_USAGE)
    try:
        run_dirs = find_runs(run, single=True)
        refuse_output_in_a_run(output, run_dirs)  # before the run is read: nothing is written inside a run
        target = next(iter_loaded(run_dirs))
    except UsageProblem as problem:
        if fmt == "parquet":
            stderr("pimm-inspect: (for the dataset of every run under a folder, give -o a directory: "
                   "a name not ending in .parquet)")
        elif problem.runs > 1:
            stderr(f"pimm-inspect: (export writes one run's table; the {problem.runs} runs of "
                   f"{clean(run, newlines=False)} go into one Parquet dataset: pimm-inspect export "
                   f"{clean(run, newlines=False)} --format parquet -o DIR)")
        sys.exit(EXIT_USAGE)
    shown_output = clean(output, newlines=False)
    if fmt == "json":
        written: set[str] = set()

        def streamed() -> Iterator[TagRows]:  # one tag's rows at a time, each dropped once written
            for block in iter_scalar_rows(target, tags, policy, all_sources):
                if len(block):
                    written.add(block.tag)
                yield block

        if output == "-":
            write_json(streamed(), sys.stdout)
            return  # a reader may stop early (| head): no claim that every point arrived
        with replaced_atomically(output) as fh:
            count = write_json(streamed(), fh)
        stderr(f"pimm-inspect: wrote {count} points of {len(written)} tags to {shown_output}")
        return
    rows = scalar_rows(target, tags, policy, all_sources)
    tag_count = len({block.tag for block in rows if len(block)})
    frame = to_frame(rows)  # pandas only for CSV and Parquet
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401  (the Parquet writer; optional)
        except ImportError:
            stderr("pimm-inspect: parquet export needs pyarrow: pip install 'pimm-inspect[parquet]'")
            sys.exit(EXIT_USAGE)
        with replaced_atomically(output, binary=True) as fh:
            frame.to_parquet(fh, index=False)
    else:
        _write(output, csv_text(frame))
        if output == "-":
            return  # a reader may stop early (| head): no claim that every point arrived
    stderr(f"pimm-inspect: wrote {len(frame)} points of {tag_count} tags to {shown_output}")


def _stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def _write(output: str, text: str) -> None:
    if output == "-":
        from ..report.safe_text import clean

        # Tags are file-derived: a person reading the CSV in a terminal sees control characters as escapes.
        click.echo(clean(text) if sys.stdout.isatty() else text, nl=False)
    else:
        from ..report.export import replaced_atomically

        with replaced_atomically(output) as fh:
            fh.write(text)


def _export_dataset(root: str, output: str, tags: tuple[str, ...], policy: str, all_sources: bool,
                    prune: bool, shard: tuple[int, int] | None = None, compact: bool = False) -> None:
    """``export ROOT --format parquet -o DIR``: write or update the dataset; exit 2 when DIR cannot be used."""
    from ..report.safe_text import clean

    try:
        import pyarrow  # noqa: F401  (the Parquet writer; optional)
    except ImportError:
        stderr("pimm-inspect: the Parquet dataset needs pyarrow: pip install 'pimm-inspect[parquet]'")
        sys.exit(EXIT_USAGE)
    from ..report.dataset_store import DatasetProblem
    from ..session.dataset_sync import DatasetOptions

    if shard is not None and (prune or compact):
        stderr(f"pimm-inspect: {'--prune' if prune else '--compact'} needs every run: run it without --shard "
               "(after the shards have finished)")
        sys.exit(EXIT_USAGE)
    try:
        run_dirs = find_runs(root)
    except UsageProblem:
        sys.exit(EXIT_USAGE)
    show_progress = len(run_dirs) > 1 and sys.stderr.isatty()

    def progress(i: int, total: int, run_id: str) -> None:
        if show_progress:
            click.echo(f"\rexporting {i}/{total} {clean(run_id, newlines=False)[:40]:<40}", err=True, nl=False)

    options = DatasetOptions(tags=tags, policy=policy, all_sources=all_sources, prune=prune, compact=compact)
    try:
        report = session().export_dataset(Path(root), Path(output), options, progress, run_dirs, shard)
    except DatasetProblem as exc:
        stderr(f"pimm-inspect: {clean(str(exc), newlines=False)}")
        sys.exit(EXIT_USAGE)
    finally:
        if show_progress:
            click.echo("\r" + " " * 60 + "\r", err=True, nl=False)
    if report.rewrite_all:
        stderr(f"pimm-inspect: every run was rewritten: {clean(report.rewrite_all, newlines=False)}")
    parts = [f"{len(report.added)} added", f"{len(report.rewritten)} rewritten", f"{len(report.unchanged)} unchanged"]
    if report.pruned:
        parts.append(f"{len(report.pruned)} pruned")
    which = (f" (shard {shard[0]}/{shard[1]}: {len(report.seen)} of {len(run_dirs)} runs)"
             if shard is not None else "")
    stderr(f"pimm-inspect: dataset {clean(output, newlines=False)}{which}: " + ", ".join(parts))
    if report.kept_missing:
        shown = ", ".join(clean(r, newlines=False) for r in report.kept_missing[:5])
        more = f" and {len(report.kept_missing) - 5} more" if len(report.kept_missing) > 5 else ""
        stderr(f"pimm-inspect: kept {len(report.kept_missing)} run(s) no longer under {clean(root, newlines=False)} "
               f"({shown}{more}); --prune removes them")
    if report.compacted:
        stderr(f"pimm-inspect: compact tables rebuilt: {clean(output, newlines=False)}/<table>.parquet")
    for folder in report.prune_left:
        stderr(f"pimm-inspect: left {clean(folder, newlines=False)}: it holds files this export did not write")
    for run_id in report.failed:
        stderr(f"pimm-inspect: {clean(run_id, newlines=False)}: its tables could not be built "
               "(internal.export-failed; please report)")
