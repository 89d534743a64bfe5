"""The ``pimm-inspect`` command group; ``pimm-inspect [PATH]`` opens the UI."""

from __future__ import annotations

import errno
import importlib
import os
import sys
import threading
from typing import Any

import click

from .. import __version__


_COMMANDS = {"ls": "cmd_ls", "show": "cmd_show", "check": "cmd_check", "curves": "cmd_curves",
             "config": "cmd_config", "export": "cmd_export", "url": "cmd_url", "ui": "cmd_ui", "cache": "cmd_cache",
             "report": "cmd_report", "compare": "cmd_compare"}
"""Command name -> its module in this package, imported only when that command runs (or help lists them all)."""


class _OutputError(Exception):
    """An ``OSError`` carried past click, which would turn EPIPE into exit 1 even in non-standalone mode."""

    def __init__(self, error: OSError):
        super().__init__(str(error))
        self.error = error


class _Interrupted(Exception):
    """Ctrl-C, carried past click."""


class _DefaultToUi(click.Group):
    """A group whose first argument may be a PATH for the UI instead of a command name; commands load lazily."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        lead = 1 if args and args[0] == "--no-cache" else 0  # global options before the command or PATH
        if len(args) == lead:
            if not ctx.resilient_parsing:  # shell completion of the first word: complete command names, not ui's PATH
                args = [*args, "ui"]
        elif args[lead] not in _COMMANDS and not args[lead].startswith("-"):
            if not ctx.resilient_parsing:
                _refuse_typo(ctx, args[lead], list(_COMMANDS))
            args = [*args[:lead], "ui", *args[lead:]]
        return super().parse_args(ctx, args)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[Any]:
        """The first word completes to a command name, else (no command starts so) to a path for the UI."""
        from click.shell_completion import CompletionItem

        return [CompletionItem(incomplete, type="file"), *super().shell_complete(ctx, incomplete)]

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)  # --help and --version print here
        except OSError as exc:
            raise _OutputError(exc) from exc
        except KeyboardInterrupt as exc:  # past click, which would print an empty line and exit 1
            raise _Interrupted() from exc

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OSError as exc:
            raise _OutputError(exc) from exc
        except KeyboardInterrupt as exc:  # past click, which would print an empty line and exit 1
            raise _Interrupted() from exc

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command's module is imported here, so one command's run never imports the others' code."""
        module = _COMMANDS.get(cmd_name)
        if module is None:
            return None
        if cmd_name not in self.commands:
            command = importlib.import_module(f"{__package__}.{module}").command
            _accept_global_options(command)
            self.add_command(command, cmd_name)
        return self.commands[cmd_name]


def _accept_global_options(command: click.Command) -> None:
    """The global ``--no-cache`` is also accepted after the command (``pimm-inspect ls --no-cache ROOT``), with the
    same meaning as before it: users put options after the command, and "No such option" would not say why."""
    from ._common import remember_global

    if not any("--no-cache" in param.opts for param in command.params):
        command.params.append(click.Option(
            ["--no-cache"], is_flag=True, expose_value=False, callback=remember_global,
            help="Neither read nor write the persistent cache (a global option: also `pimm-inspect --no-cache "
                 "COMMAND`)."))


def _refuse_typo(ctx: click.Context, word: str, commands: list[str]) -> None:
    """A first argument that is no existing path but close to a command name is a mistyped command (exit 2)."""
    import difflib
    import os

    if os.path.lexists(word):
        return
    close = difflib.get_close_matches(word, commands, n=3, cutoff=0.6)
    if close:
        from ..report.safe_text import clean

        hint = " or ".join(repr(c) for c in close)
        raise click.UsageError(f"No such command {clean(word, newlines=False)!r} and no such path. "
                               f"Did you mean {hint}?", ctx)


@click.group(cls=_DefaultToUi, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pimm-inspect")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the persistent cache (also: PIMM_INSPECT_CACHE_DIR=off).")
def cli(no_cache: bool) -> None:
    """Offline inspector for pimm, TensorBoard, W&B and Hugging Face Trainer runs.

    Run `pimm-inspect PATH` to browse runs in the terminal UI, or use the commands
    below from scripts. Exit codes: 0 ok, 1 `check` found something at or above
    --fail-on (or `url` has no link), 2 usage error or nothing readable.

    Example: pimm-inspect check exp/ --json
    """
    # --no-cache is read by each command's session (``_common.session``), built once the command's options are known.


class _ClosedStdout:
    """``sys.stdout`` when the process started with file descriptor 1 closed (``>&-``): Python then sets it to None;
    this makes the first write fail as writing to a closed descriptor does (EBADF), so the one rule below applies."""

    encoding = "utf-8"
    errors = "backslashreplace"

    def write(self, _text: str) -> int:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))


EXIT_INTERRUPTED = 130
"""Ctrl-C: 128 + SIGINT, as a shell reports a process its signal ended."""


def main() -> None:
    """Console-script entry point: the exit code, and one rule for broken output and Ctrl-C in every command.

    A reader that closed the pipe (EPIPE: ``| head``) is a normal end: exit 0, silently. Any other failure to
    write stdout (EBADF for ``>&-``, ENOSPC for ``>/dev/full``, EIO ...) is one line on stderr and exit 1.
    Ctrl-C is one line on stderr and exit 130. None of them shows a traceback. click's own handling (which
    turns EPIPE into exit 1) is bypassed: it runs in non-standalone mode and this function decides.
    """
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):  # a file name with undecodable bytes must not crash the output
            stream.reconfigure(errors="backslashreplace")
    if sys.stdout is None:
        sys.stdout = _ClosedStdout()
    _quiet_interrupts()
    sys.exit(_run())


_INTERRUPTED = threading.Event()
"""Set by Ctrl-C, before the KeyboardInterrupt is raised."""


def _quiet_interrupts() -> None:
    """Ctrl-C marks the process interrupted before raising KeyboardInterrupt, and a thread that fails once the
    process is interrupted says nothing: when Ctrl-C ends `ls`'s worker processes, the process pool's manager
    thread races the command's own shutdown of the pool (it may try to fail a future the shutdown just cancelled,
    an InvalidStateError) and would print that thread's traceback after the one line the interrupt prints."""
    import signal

    def interrupted(_signum: int, _frame: object) -> None:
        _INTERRUPTED.set()
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, interrupted)
    default_hook = threading.excepthook

    def thread_failed(args: threading.ExceptHookArgs) -> None:
        from concurrent.futures import InvalidStateError

        pool_race = isinstance(args.exc_value, InvalidStateError) and "ExecutorManager" in type(args.thread).__name__
        if _INTERRUPTED.is_set() or pool_race:
            return
        default_hook(args)

    threading.excepthook = thread_failed


def _run() -> int:
    """Run the command; its exit code under the rule of ``main``."""
    try:
        try:
            code = _exit_code(cli.main(prog_name="pimm-inspect", standalone_mode=False))
        except SystemExit as exc:
            code = _exit_code(exc.code)
        except click.ClickException as exc:
            _clean_click_message(exc)
            exc.show()
            code = exc.exit_code
        except click.exceptions.Abort as exc:  # click's form of Ctrl-C (and of EOF at a prompt)
            if isinstance(exc.__cause__, KeyboardInterrupt):
                return _interrupted()
            _say("Aborted!")
            return 1
        sys.stdout.flush()  # here, not at interpreter exit, where a failure could no longer be reported
        return code
    except (KeyboardInterrupt, _Interrupted):
        return _interrupted()
    except _OutputError as exc:
        return _output_failed(exc.error)
    except OSError as exc:
        try:
            return _output_failed(exc)
        except OSError:
            return _crashed(exc)
    except Exception as exc:  # noqa: BLE001 - a bug: its traceback must not print run data raw (below)
        return _crashed(exc)


def _clean_click_message(exc: click.ClickException) -> None:
    """Click quotes what was typed in its errors (``Got unexpected extra argument (PATH)``, ``Invalid value for
    '--x': 'VALUE'``): a path a shell glob expanded from a run's folder name carries its newlines, escape sequences
    and bidi controls; they are escaped (the message is one line, as click writes it)."""
    from ..report.safe_text import clean

    # click types ``message`` as final, yet ``show`` reads it back: set through setattr, the one field it formats.
    setattr(exc, "message", clean(exc.message, newlines=False))  # noqa: B010


def _crashed(exc: BaseException) -> int:
    """An internal error: the traceback (no values, secrets masked, controls escaped) goes to a private file, the
    terminal gets one line naming it, exit 70, as the UI does (``session.crash``). Python's own traceback would print
    the exception's message raw: a message quoting a tag, a path or a config value carries the run's control
    sequences and secrets to the terminal."""
    from ..session.crash import CRASH_EXIT_CODE, write_crash

    _silence_stdout()
    _path, line = write_crash(exc, reading=_named_paths())
    _say(line)
    return CRASH_EXIT_CODE


def _named_paths() -> list[str]:
    """The existing files and folders the command line names (its PATHs): a crash file is never written in them."""
    try:
        return [arg for arg in sys.argv[1:] if arg and not arg.startswith("-") and os.path.lexists(arg)]
    except (OSError, ValueError):
        return []


def _exit_code(value: object) -> int:
    """``sys.exit``'s argument as an exit code (None is 0; a message is 1, as the interpreter does)."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    _say(str(value))
    return 1


def _output_failed(exc: OSError) -> int:
    """A failed write: EPIPE ends quietly (0); any other error is one line (1)."""
    _silence_stdout()
    if exc.errno == errno.EPIPE:
        return 0
    if exc.errno in (errno.EBADF, errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG):
        from ..report.safe_text import clean

        where = f" {clean(exc.filename, newlines=False)}" if exc.filename else " the output"
        _say(f"pimm-inspect: cannot write{where}: {exc.strerror or exc}")
        return 1
    if exc.filename:  # a file named on the command line (an export's -o) that cannot be opened or written
        from ..report.safe_text import clean

        _say(f"pimm-inspect: {clean(exc.filename, newlines=False)}: {exc.strerror or exc}")
        return 1
    raise exc


def _interrupted() -> int:
    _silence_stdout()
    _say("pimm-inspect: interrupted")
    return EXIT_INTERRUPTED


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush of what is still buffered cannot fail again."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    except OSError:
        pass
    if isinstance(sys.stdout, _ClosedStdout) or sys.stdout is None:
        return
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass


def _say(line: str) -> None:
    """One line on stderr, if stderr can still take it."""
    try:
        if sys.stderr is not None:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
    except (OSError, ValueError):
        pass
