"""The suite's own environment: no terminal size leaks into the tests or the processes they start (tests/conftest.py).

pytest imports GNU readline at start-up, and readline exports COLUMNS and LINES (80x24 without a terminal) into the C
environment: os.environ never shows them, but every child process inherits them, pytest-xdist's workers included,
where `show`'s prose then wrapped at 80 columns instead of the piped 140."""

from __future__ import annotations

import os
import subprocess
import sys


def test_no_terminal_size_in_the_environment_of_a_test():
    assert "COLUMNS" not in os.environ and "LINES" not in os.environ


def test_no_terminal_size_in_a_child_process():
    code = "import os; print(os.environ.get('COLUMNS'), os.environ.get('LINES'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout
    assert out == "None None\n"
