"""Shared CLI plumbing: loading runs with progress on stderr, output helpers, exit codes."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, TypeVar
from pathlib import Path

import click

if TYPE_CHECKING:
    from rich.console import Console

    from ..evidence import RunRow
    from ..model import Run

    from ..session import Session

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
"""Exit codes: 0 ok, 1 `check` found something at or above --fail-on (or `url` has no link), 2 usage error or nothing readable."""


def stderr(message: str) -> None:
    """Diagnostics for people go to stderr; stdout carries the product. A stderr that cannot be written (closed,
    full) loses the diagnostic, never the command: its output and exit code stay what they would be.

    Every diagnostic is cleaned here (control and invisible characters as escapes, newlines kept): a message names
    paths, folders and values that a run's author chose, and one that forgot ``clean`` must still not reach the
    terminal as ESC, CR or a bidi override. Names inside a message still go through ``_name`` (a newline in a
    name is escaped there, so it cannot forge a line)."""
    from ..report.safe_text import clean

    try:
        click.echo(clean(message), err=True)
    except OSError:
        pass


_DISCOVERY = "pimm_inspect.discovery"
"""Key in the click context's ``meta`` (shared by the group and its command) of --max-depth / --follow-links."""
_SESSION = "pimm_inspect.session"


def _remember(ctx: click.Context, param: click.Parameter, value: object) -> object:
    ctx.meta.setdefault(_DISCOVERY, {})[param.name] = value
    return value


_GLOBAL = "pimm_inspect.global"
"""Key in the click context's ``meta`` of global options given after the command (``ls --no-cache``)."""


def remember_global(ctx: click.Context, param: click.Parameter, value: object) -> object:
    """Keep a global option given after the command for ``session``."""
    if value:
        ctx.meta.setdefault(_GLOBAL, {})[param.name] = value
    return value


def session() -> Session:
    """The command's session, built once per invocation from the environment, the global ``--no-cache`` and the
    command's --max-depth / --follow-links (nothing is kept in a module global)."""
    from ..session import default_session

    ctx = click.get_current_context()
    made = ctx.meta.get(_SESSION)
    if made is None:
        no_cache = bool(ctx.find_root().params.get("no_cache", False) or ctx.meta.get(_GLOBAL, {}).get("no_cache"))
        made = ctx.meta[_SESSION] = default_session(no_cache=no_cache, **ctx.meta.get(_DISCOVERY, {}))
        ctx.call_on_close(made.close)
    return made


_Decorated = TypeVar("_Decorated", bound="Callable[..., Any] | click.Command")
"""What click's option decorators accept and return unchanged in type: a command function or a built command."""


def discovery_options(func: _Decorated) -> _Decorated:
    """``--max-depth N`` and ``--follow-links`` for commands that search a tree for runs."""
    from ..load.discover import MAX_DEPTH

    func = click.option("--follow-links", is_flag=True, expose_value=False, callback=_remember,
                        help="Follow links that lead out of the searched folder (never into /proc, /sys, /dev).")(func)
    return click.option("--max-depth", type=click.IntRange(0, 1000), default=MAX_DEPTH, show_default=True,
                        expose_value=False, callback=_remember,
                        help="Folder levels searched below each PATH; deeper folders are listed as skipped.")(func)


def _name(path: object) -> str:
    """A path for a message: file and folder names are data, written by the one name escape (``clean_name``:
    backslashes doubled, undecodable bytes ``\\xNN``, control characters escaped), as ``ls`` writes them."""
    from ..report.safe_text import clean_name

    return clean_name(str(path))


def refuse_output_in_a_run(output: str, run_dirs: list[Path]) -> None:
    """Exit 2 (saying why) when the file ``output`` would be written inside one of ``run_dirs``: runs are read,
    never written (``session.output_place``, the rule the dataset and the report follow too)."""
    from ..session.output_place import run_holding

    inside = run_holding(output, run_dirs) if output != "-" else None
    if inside is not None:
        stderr(f"pimm-inspect: will not write {_name(output)} inside the run {_name(inside)} (runs are read, never "
               "written); choose another -o")
        sys.exit(EXIT_USAGE)


class UsageProblem(Exception):
    """A PATH that names no run (missing, or nothing recognisable under it); already reported on stderr."""

    def __init__(self, path: str, runs: int = 0) -> None:
        super().__init__(path)
        self.runs = runs
        """How many runs PATH holds when one was needed (0: none, or not that problem)."""


def find_runs(path: str, single: bool = False) -> list[Path]:
    """The run directories under ``path``; raise ``UsageProblem`` (after saying why on stderr) when there is none,
    or several where one is needed."""
    from ..load.discover import run_containing

    root = Path(path)
    if not root.exists() and not root.is_symlink():
        stderr(f"pimm-inspect: {_name(path)}: no such file or directory")
        raise UsageProblem(path)
    owner = run_containing(root)
    if owner is not None:  # RUN/train.log, RUN/model, an HF Trainer's RUN/checkpoint-10: part of a run, not one
        stderr(f"pimm-inspect: {_name(path)} is inside the run {_name(owner)}: name that run")
        raise UsageProblem(path)
    run_dirs, errors = session().discover_with_errors(root)
    for folder, reason in errors:
        stderr(f"pimm-inspect: skipped {_name(folder)}: {_name(reason)}")
    if not run_dirs:
        from ..load.discover import RUN_MARKERS_TEXT

        stderr(f"pimm-inspect: no run found under {_name(path)} (looked for {RUN_MARKERS_TEXT})")
        raise UsageProblem(path)
    if single and len(run_dirs) > 1 and root in run_dirs:
        return [root]  # PATH is a run itself (its subfolders may be runs too, as TensorBoard's can)
    if single and len(run_dirs) > 1:
        stderr(f"pimm-inspect: {_name(path)} holds {len(run_dirs)} runs; name one of them:")
        for d in run_dirs[:20]:
            stderr(f"  {_name(d)}")
        if len(run_dirs) > 20:
            stderr(f"  ... and {len(run_dirs) - 20} more")
        raise UsageProblem(path, len(run_dirs))
    return run_dirs


def discover_paths(path: str, single: bool = False) -> list[Path]:
    """The run directories under ``path``; exit 2 when there is none (or several where one is needed)."""
    try:
        return find_runs(path, single)
    except UsageProblem:
        sys.exit(EXIT_USAGE)


def iter_loaded(run_dirs: list[Path]) -> Iterator[Run]:
    """Load and analyse runs one at a time, so a tree of thousands never sits in memory at once."""
    front_door = session()
    show_progress = len(run_dirs) > 1 and sys.stderr.isatty()
    for i, run_dir in enumerate(run_dirs, start=1):
        if show_progress:
            click.echo(f"\rloading {i}/{len(run_dirs)} {_name(run_dir.name)[:40]:<40}", err=True, nl=False)
        yield front_door.load_found(run_dir)
    if show_progress:
        click.echo("\r" + " " * 60 + "\r", err=True, nl=False)


def iter_show_documents(run_dirs: list[Path], base: Path) -> Iterator[dict[str, Any]]:
    """Each run's ``show --json`` document, one at a time (from the disk cache while the run is unchanged)."""
    front_door = session()
    show_progress = len(run_dirs) > 1 and sys.stderr.isatty()
    for i, run_dir in enumerate(run_dirs, start=1):
        if show_progress:
            click.echo(f"\rloading {i}/{len(run_dirs)} {_name(run_dir.name)[:40]:<40}", err=True, nl=False)
        yield front_door.show_document(run_dir, base)
    if show_progress:
        click.echo("\r" + " " * 60 + "\r", err=True, nl=False)


def iter_rows(run_dirs: list[Path], under: Path | None = None) -> Iterator[RunRow]:
    """The ``ls`` row of each run, from the disk cache where still valid, else loaded and analysed now (``under``:
    the folder they were found in, whose row index serves a warm tree)."""
    show_progress = len(run_dirs) > 1 and sys.stderr.isatty()
    for i, (run_dir, row) in enumerate(zip(run_dirs, session().rows(run_dirs, under)), start=1):
        if show_progress:
            click.echo(f"\rloaded {i}/{len(run_dirs)} {_name(run_dir.name)[:40]:<40}", err=True, nl=False)
        yield row
    if show_progress:
        click.echo("\r" + " " * 60 + "\r", err=True, nl=False)


def load_runs(path: str, single: bool = False) -> list[Run]:
    """Discover and load (with analysis) every run under ``path``; exit 2 when there is none."""
    return list(iter_loaded(discover_paths(path, single)))


def color_wanted(stream: TextIO | None = None) -> bool:
    """Colour for ``stream`` (stdout): NO_COLOR turns it off, FORCE_COLOR on, else only on a terminal."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return (stream or sys.stdout).isatty()


PIPED_WIDTH = 140
"""Where prose wraps when stdout is not a terminal (and COLUMNS is unset); tables are never narrowed to it."""


def console(no_color: bool = False) -> Console:
    """A Rich console writing to stdout (colour off when not a terminal or NO_COLOR is set).

    Markup and emoji codes are off: run files provide the strings printed, and they are data. When stdout is not a
    terminal, a data table keeps its natural width (no column dropped, shrunk or cut with ``…``: scripts and
    ``| head`` see every column) and no line ends in padding spaces; prose still wraps at COLUMNS, else 140.
    """
    from rich.console import Console

    piped = not sys.stdout.isatty()
    width = None if not piped else int(os.environ["COLUMNS"]) if os.environ.get("COLUMNS", "").isdigit() else PIPED_WIDTH

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            """Rich exits 1 on EPIPE; ``main``'s rule for every command (EPIPE is a normal end) decides instead."""
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

        def print(self, *objects: Any, **kwargs: Any) -> None:
            if not piped:
                return super().print(*objects, **kwargs)
            with self.capture() as captured:
                super().print(*(_unshrunk(o) for o in objects), **{**kwargs, "crop": False})
            self.file.write(strip_trailing_spaces(captured.get()))

    return _Console(no_color=no_color or None, highlight=False, soft_wrap=False, width=width, markup=False,
                    emoji=False)


def _without_trailing_spaces(line: str) -> str:
    """``line`` without its trailing spaces and tabs, the colour codes (SGR) among them kept in order."""
    stripped = line.rstrip(" \t")
    kept: list[str] = []
    while stripped.endswith("m"):
        start = stripped.rfind("\x1b[")
        if start < 0 or stripped[start + 2:-1].strip("0123456789;"):
            break
        kept.append(stripped[start:])
        stripped = stripped[:start].rstrip(" \t")
    return stripped + "".join(reversed(kept))


def strip_trailing_spaces(text: str) -> str:
    """Every line of ``text`` without the spaces Rich pads it with (colour codes among them are kept).

    Line by line from the end, in time linear in the text: a regular expression for "spaces then end of line"
    retried at every space was quadratic in a run of spaces inside a line (a table column as wide as a 20,000-character
    tag name: 26 s for ``show``)."""
    return "\n".join(_without_trailing_spaces(line) for line in text.split("\n"))


def _unshrunk(renderable: Any) -> Any:
    """``renderable`` with each data table in it (a Table without a flexible prose column) at its natural width."""
    from rich.console import Group
    from rich.table import Table

    if isinstance(renderable, Table) and not any(column.ratio for column in renderable.columns):
        return _NaturalWidth(renderable)
    if isinstance(renderable, Group):
        return Group(*(_unshrunk(r) for r in renderable.renderables), fit=renderable.fit)
    return renderable


class _NaturalWidth:
    """A table rendered as wide as its widest cells need, whatever the console's width (piped output only)."""

    def __init__(self, table: Any) -> None:
        self.table = table

    def _options(self, console: Any, options: Any) -> Any:
        from rich.measure import Measurement

        natural = Measurement.get(console, options.update_width(1_000_000), self.table).maximum
        return options.update_width(max(options.max_width, natural))

    def __rich_console__(self, console: Any, options: Any) -> Any:
        yield from console.render(self.table, self._options(console, options))

    def __rich_measure__(self, console: Any, options: Any) -> Any:
        from rich.measure import Measurement

        return Measurement.get(console, self._options(console, options), self.table)


def print_runs_table(rows: list[Any], headers: Sequence[str] | None = None) -> None:
    """The ``ls`` table on stdout (also the piped ``pimm-inspect PATH``): without Rich's per-cell layout when it
    is plain text that fits (piped, every table fits: no column is dropped or cut). ``headers``: those of ``ls
    --columns`` (the default table's without)."""
    from ..report.text import RUNS_COLUMNS, plain_runs_table, runs_table

    heads = RUNS_COLUMNS if headers is None else headers
    out = console()
    piped = not sys.stdout.isatty()
    plain = plain_runs_table(rows, 1_000_000 if piped else out.width, heads) if out.color_system is None else None
    if plain is None:
        out.print(runs_table(rows, heads))
    else:
        out.file.write(strip_trailing_spaces(plain) if piped else plain)


json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document (schema_version 1).")


class RunStream:
    """Runs under every PATH given, loaded lazily; ``exit`` ends the command (2 when some PATH named no run)."""

    def __init__(self, paths: tuple[str, ...]):
        paths = paths or (".",)
        self.paths = paths
        self.base = Path(paths[0]) if len(paths) == 1 else Path(".")
        """Output paths are relative to this."""
        self.bad_paths: list[str] = []
        """PATHs that named no run (each already reported on stderr)."""
        run_dirs = []
        for path in paths:
            try:
                run_dirs += find_runs(path)
            except UsageProblem:
                self.bad_paths.append(path)
        if not run_dirs:
            sys.exit(EXIT_USAGE)
        self.run_dirs = run_dirs
        self.runs = iter_loaded(run_dirs)
        """Each run loaded and analysed, one at a time."""

    @property
    def show_documents(self) -> Iterator[dict[str, Any]]:
        """Each run's ``show --json`` document (cached documents where still valid), one at a time."""
        return iter_show_documents(self.run_dirs, self.base)

    @property
    def rows(self) -> Iterator[RunRow]:
        """Each run's ``ls`` row (cached rows where still valid), one at a time."""
        return iter_rows(self.run_dirs, self.base if len(self.paths) == 1 else None)

    def exit(self, code: int = EXIT_OK) -> NoReturn:
        """Exit with ``code``, or 2 when a PATH named no run (the runs found were still printed)."""
        sys.exit(EXIT_USAGE if self.bad_paths else code)


def stream_many(paths: tuple[str, ...]) -> RunStream:
    """Runs under every PATH given ('.' when none).

    Every PATH is discovered first, so its problems are on stderr before any output; the runs of the PATHs that
    hold some are then loaded one by one. With no run at all this exits 2 at once.
    """
    return RunStream(paths)
