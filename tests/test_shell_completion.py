"""Shell completion (click's): `_PIMM_INSPECT_COMPLETE={bash,zsh,fish}_source pimm-inspect` prints the script, and
the first word completes to command names although a PATH there opens the UI. Real processes."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _env(**extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO), **extra)


def _complete(words: str, cword: int) -> list[str]:
    proc = subprocess.run([sys.executable, "-P", "-m", "pimm_inspect"], capture_output=True, text=True, timeout=60,
                          env=_env(_PIMM_INSPECT_COMPLETE="bash_complete", COMP_WORDS=words, COMP_CWORD=str(cword)))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_each_shell_gets_its_script(shell: str) -> None:
    proc = subprocess.run([sys.executable, "-P", "-m", "pimm_inspect"], capture_output=True, text=True, timeout=60,
                          env=_env(_PIMM_INSPECT_COMPLETE=f"{shell}_source"))
    assert proc.returncode == 0 and f"_PIMM_INSPECT_COMPLETE={shell}_complete" in proc.stdout
    assert "_pimm_inspect_completion" in proc.stdout


def test_first_word_completes_to_commands_options_to_their_values() -> None:
    assert "plain,check" in _complete("pimm-inspect ch", 1)  # the UI's default PATH did not swallow it
    first = _complete("pimm-inspect ", 1)
    assert {"plain,ls", "plain,show", "plain,check", "plain,config"} <= set(first) and "file," in first
    assert _complete("pimm-inspect check --fail-on ", 3) == ["plain,info", "plain,warning", "plain,error",
                                                             "plain,never"]
    assert "plain,--no-cache" in _complete("pimm-inspect ls --no-c", 2)


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_script_completes_in_bash(tmp_path: Path) -> None:
    """The generated script, sourced into bash, fills COMPREPLY for `pimm-inspect ch<TAB>`."""
    wrapper = tmp_path / "pimm-inspect"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} -P -m pimm_inspect \"$@\"\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    script = f"""
        source <("{wrapper}" 2>/dev/null)
        COMP_WORDS=(pimm-inspect conf); COMP_CWORD=1
        _pimm_inspect_completion "{wrapper}" 2>/dev/null
        echo "${{COMPREPLY[@]}}"
    """
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60,
                          env=_env(_PIMM_INSPECT_COMPLETE="bash_source"))
    assert proc.stdout.split() == ["config"], proc.stderr
