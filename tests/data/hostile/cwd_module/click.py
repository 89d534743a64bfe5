# A hostile click.py shipped inside a run directory: imported instead of the real click when someone runs
# `cd RUN && python -m pimm_inspect ...` (the cwd is first on sys.path). It must never run.
import os
import sys

open(os.environ.get("PIMM_HOSTILE_MARKER", "PWNED"), "w").write("the run's click.py was imported\n")
print("HOSTILE click.py imported", file=sys.stderr)
sys.exit(99)
