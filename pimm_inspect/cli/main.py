"""The ``pimm-inspect`` command group; ``pimm-inspect [PATH]`` opens the UI."""

from __future__ import annotations

import importlib
import sys

import click

from .. import __version__


_COMMANDS = {"ls": "cmd_ls", "show": "cmd_show", "check": "cmd_check", "curves": "cmd_curves",
             "config": "cmd_config", "export": "cmd_export", "url": "cmd_url", "ui": "cmd_ui", "cache": "cmd_cache"}
"""Command name -> its module in this package, imported only when that command runs (or help lists them all)."""


class _DefaultToUi(click.Group):
    """A group whose first argument may be a PATH for the UI instead of a command name; commands load lazily."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        lead = 1 if args and args[0] == "--no-cache" else 0  # global options before the command or PATH
        if len(args) == lead:
            args = [*args, "ui"]
        elif args[lead] not in _COMMANDS and not args[lead].startswith("-"):
            _refuse_typo(ctx, args[lead], list(_COMMANDS))
            args = [*args[:lead], "ui", *args[lead:]]
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command's module is imported here, so one command's run never imports the others' code."""
        module = _COMMANDS.get(cmd_name)
        if module is None:
            return None
        if cmd_name not in self.commands:
            self.add_command(importlib.import_module(f"{__package__}.{module}").command, cmd_name)
        return self.commands[cmd_name]


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


def main() -> None:
    """Console-script entry point."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):  # a file name with undecodable bytes must not crash the output
            stream.reconfigure(errors="backslashreplace")
    try:
        cli.main(prog_name="pimm-inspect", standalone_mode=True)
    except BrokenPipeError:  # `pimm-inspect ... | head` closes stdout early: that is fine
        sys.stderr.close()
        sys.exit(0)
