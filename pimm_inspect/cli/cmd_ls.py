"""``pimm-inspect ls ROOT``: one line per run under ROOT, filtered, sorted and with the columns asked for."""

from __future__ import annotations

import click

from ._common import discovery_options, json_option, print_runs_table, stderr, stream_many

FILTER_HELP = ("Keep the runs this matches (the UI's filter): text, !text, /regex/ on the path, kind, status, W&B ids "
               "and finding codes, or cfg.KEY OP VALUE (OP: = == != > < >= <= ~) on the config. Repeat: all must "
               "match.")
SORT_HELP = ("Order by KEY[,KEY...] (a column key, see --columns); -KEY for descending. Runs without the value come "
             "last.")
COLUMNS_HELP = ("The table's columns, e.g. path,status,cfg.lr,last:train/loss,best:val/acc. Keys: path name kind era "
                "status attempts last_step wandb_run_ids findings errors warnings infos best_metric last_logged_at "
                "top_finding, cfg.KEY, last:TAG, best:TAG, min:TAG, max:TAG. With --json: a 'columns' object per run.")


def _complete_keys(_ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[str]:
    """Shell completion of the last key of ``--columns a,b,c`` / ``--sort a,-b``: the fixed keys and the prefixes
    ``cfg.``, ``last:``, ``best:``, ``min:``, ``max:``."""
    from ..report.ls_columns import FIXED, METRIC_KINDS

    head, comma, last = incomplete.rpartition(",")
    sign = "-" if last.startswith("-") else ""
    keys = [*FIXED, "cfg.", *(f"{kind}:" for kind in METRIC_KINDS)]
    return [f"{head}{comma}{sign}{key}" for key in keys if key.startswith(last[len(sign):])]


def _usage(option: str, message: str) -> click.BadParameter:
    return click.BadParameter(message, param_hint=f"'{option}'")


@click.command("ls")
@click.argument("roots", nargs=-1, type=click.Path())
@discovery_options
@click.option("--filter", "filters", multiple=True, metavar="EXPR", help=FILTER_HELP)
@click.option("--sort", "sorts", multiple=True, metavar="KEY[,KEY]", help=SORT_HELP, shell_complete=_complete_keys)
@click.option("--reverse", is_flag=True, help="Turn every --sort key's direction (without --sort: the listing "
                                                "reversed).")
@click.option("--columns", "column_specs", multiple=True, metavar="A,B,C", help=COLUMNS_HELP,
              shell_complete=_complete_keys)
@json_option
def command(roots: tuple[str, ...], filters: tuple[str, ...], sorts: tuple[str, ...], reverse: bool,
            column_specs: tuple[str, ...], as_json: bool) -> None:
    """List the runs under ROOT with kind, era, status, attempts and findings.

    Example: pimm-inspect ls exp/panda --filter 'cfg.lr>=1e-3' --sort -best:val/mIoU --columns path,cfg.lr,best:val/mIoU
    """
    from ..report.ls_columns import (
        UnknownKey,
        absent_everywhere,
        filter_columns,
        parse_columns,
        parse_sort,
        row_filter,
        sort_rows,
    )

    try:  # every option is checked before a run is read
        columns = parse_columns(column_specs) if column_specs else None
    except UnknownKey as exc:
        raise _usage("--columns", str(exc)) from None
    try:
        keys = parse_sort(sorts)
    except UnknownKey as exc:
        raise _usage("--sort", str(exc)) from None
    try:
        keep = row_filter(filters)
    except ValueError as exc:
        raise _usage("--filter", str(exc)) from None
    stream = stream_many(roots)
    base = stream.base
    found = list(stream.rows)
    for note in absent_everywhere(found, [*(columns or []), *(k.column for k in keys), *filter_columns(filters)]):
        stderr(f"note: {note}")  # a key no run has is most likely a typo
    listed = [row for row in found if keep(row, base)] if filters else found
    rows = sort_rows(listed, keys, base, reverse) if keys or reverse else listed
    if as_json and not columns:
        from ..report.json_doc import ls_document

        click.echo(ls_document(rows, base))  # each row's stored JSON object where it has one
    elif as_json and columns:
        from ..report.json_doc import SCHEMA_VERSION, dumps, ls_run
        from ..report.ls_columns import json_columns

        runs = [ls_run(r, base) | {"columns": json_columns(r, columns, base)} for r in rows]
        click.echo(dumps({"schema_version": SCHEMA_VERSION, "runs": runs}))
    else:
        from ..report.text import RUNS_COLUMNS, runs_table_row  # Rich: only for the table

        if rows:
            print_runs_table([runs_table_row(r, base, columns) for r in rows],
                             [c.header for c in columns] if columns else RUNS_COLUMNS)
        elif filters:
            stderr("no run matches the filter")
    stream.exit()
