"""Run code in a fresh interpreter and report which top-level modules it imported (import-cost contracts)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def modules_after(code: str) -> set[str]:
    """Top-level names in ``sys.modules`` after ``code`` ran in a new process (its assertions must pass)."""
    probe = code + "\nimport sys, json\nprint(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def all_modules_after(code: str) -> set[str]:
    """Every module name (``numpy.ma``, not only ``numpy``) in ``sys.modules`` after ``code`` ran in a new process."""
    probe = code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def cli_code(*args: str) -> str:
    """Code running ``python -m pimm_inspect ARGS`` (stdout captured; it must exit 0 with one JSON document)."""
    return ("import contextlib, io, runpy, sys\n"
            f"sys.argv = ['pimm-inspect', *{list(args)!r}]\n"
            "buf = io.StringIO()\n"
            "try:\n"
            "    with contextlib.redirect_stdout(buf):\n"
            "        runpy.run_module('pimm_inspect', run_name='__main__')\n"
            "except SystemExit as exc:\n"
            "    assert exc.code in (0, None), exc.code\n"
            "assert buf.getvalue().startswith('{') and '\"schema_version\": 1' in buf.getvalue(), buf.getvalue()[:200]\n")
