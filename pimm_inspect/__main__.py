"""``python -m pimm_inspect`` runs the CLI (the ``pimm-inspect`` command is the way to run it: see the README)."""

import os
import sys


def _drop_cwd_from_path() -> None:
    """Remove the cwd that ``-m`` puts first on ``sys.path``, unless this package lives there.

    Run from inside a run directory, it would otherwise import that run's own modules (a ``click.py``, a
    ``numpy.py``) in place of the real ones: code from the run, executed.
    """
    cwd = os.path.realpath(os.getcwd())
    if os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) == cwd:
        return  # a source checkout run from its root: the cwd is where this package comes from
    sys.path[:] = [p for p in sys.path if p not in ("", ".") and os.path.realpath(p) != cwd]


_drop_cwd_from_path()

from .cli.main import main  # noqa: E402  (only once the cwd is off sys.path)

main()
