"""``pimm-inspect cache info|clear``: where the persistent cache lives, how big it is; empty it."""

from __future__ import annotations

from pathlib import Path

import click

from ._common import json_option


def _folder() -> Path | None:
    """The cache directory of this invocation's session (None: off or refused)."""
    from ._common import session

    disk = session().disk
    return disk.directory if disk is not None else None


@click.group("cache")
def command() -> None:
    """Show or clear the persistent cache of decoded run files.

    The cache lives in $PIMM_INSPECT_CACHE_DIR, else $XDG_CACHE_HOME/pimm-inspect, else
    ~/.cache/pimm-inspect, never inside a run. Turn it off with --no-cache or
    PIMM_INSPECT_CACHE_DIR=off.

    Example: pimm-inspect cache info
    """


@command.command("info")
@json_option
def info(as_json: bool) -> None:
    """Print the cache directory, its entries and their total size.

    Example: pimm-inspect cache info --json
    """
    from ..session.store.disk_cache import entries
    from ._common import session
    from ..report.json_doc import SCHEMA_VERSION, dumps
    from ..report.safe_text import clean

    folder = _folder()
    found = entries(folder) if folder is not None else []
    total = sum(size for _p, size, _t in found)
    if as_json:
        click.echo(dumps({"schema_version": SCHEMA_VERSION, "enabled": folder is not None,
                          "directory": str(folder) if folder is not None else None,
                          "entries": len(found), "size_bytes": total, "max_bytes": session().settings.cache_max_bytes}))
        return
    if folder is None:
        click.echo("cache: off (--no-cache or PIMM_INSPECT_CACHE_DIR=off)")
        return
    click.echo(f"cache: {clean(str(folder), newlines=False)}")
    click.echo(f"entries: {len(found)}, {total / 1e6:.1f} MB of at most {session().settings.cache_max_bytes / 1e9:.1f} GB")


@command.command("clear")
def clear() -> None:
    """Delete every cache entry (the runs themselves are never touched).

    Example: pimm-inspect cache clear
    """
    from ..session.store.disk_cache import clear as clear_dir
    from ..report.safe_text import clean

    folder = _folder()
    if folder is None:
        click.echo("cache: off; nothing to clear")
        return
    files, size = clear_dir(folder)
    click.echo(f"removed {files} entries ({size / 1e6:.1f} MB) from {clean(str(folder), newlines=False)}")
