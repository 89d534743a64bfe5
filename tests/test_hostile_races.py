"""Races: a file of the run swapped between the check and the read (for a link out of the run, for a FIFO).

Deterministic, not a race: the swap is made by a hook at the moment the file's type has just been checked
(``stat.S_ISREG`` is what every version of the open helper asks), so the open comes after the swap every time.
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from pimm_inspect.sources._common import UnreadableFile, open_regular, read_bytes_capped
from pimm_inspect.sources.confine import confined_to

ORIGINAL = b"lr = 0.1  # the run's own config.py\n"
OUTSIDE = b"-----BEGIN OPENSSH PRIVATE KEY----- not for anyone's eyes\n"


def _run(tmp_path: Path) -> tuple[Path, Path]:
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.py").write_bytes(ORIGINAL)
    secret = tmp_path / "id_rsa"
    secret.write_bytes(OUTSIDE)
    return run, secret


def _swap_after_the_type_check(monkeypatch: pytest.MonkeyPatch, swap) -> list[bool]:
    """Make ``swap()`` run once, right after the open helper learned the file is a regular file."""
    done: list[bool] = []
    real = stat.S_ISREG

    def checked_then_swapped(mode: int) -> bool:
        answer = real(mode)
        if not done:
            done.append(True)
            swap()
        return answer

    monkeypatch.setattr(stat, "S_ISREG", checked_then_swapped)
    return done


def test_a_link_swapped_in_after_the_check_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run, secret = _run(tmp_path)
    target = run / "config.py"

    def swap() -> None:  # atomically: config.py becomes a link to a file outside the run
        (run / "tmp-link").symlink_to(secret)
        os.replace(run / "tmp-link", target)

    done = _swap_after_the_type_check(monkeypatch, swap)
    with confined_to(run):
        data, findings = read_bytes_capped(target, "config.py", 1 << 20)
    assert done and target.is_symlink()  # the swap happened between the check and the read
    assert OUTSIDE not in data
    assert data == ORIGINAL or data == b"" and [f.paths for f in findings] == [("config.py",)]


def test_a_link_swapped_in_through_the_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same through ``config.py``'s own reader (what `config` prints)."""
    from pimm_inspect.sources.config.json_docs import read_config_py

    run, secret = _run(tmp_path)
    target = run / "config.py"

    def swap() -> None:
        (run / "tmp-link").symlink_to(secret)
        os.replace(run / "tmp-link", target)

    _swap_after_the_type_check(monkeypatch, swap)
    with confined_to(run):
        result = read_config_py(target, "config.py")
    shown = repr(result.value)
    assert "OPENSSH" not in shown


def test_a_fifo_swapped_in_after_the_check_does_not_hang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run, _secret = _run(tmp_path)
    target = run / "config.py"

    def swap() -> None:
        os.mkfifo(run / "tmp-fifo")
        os.replace(run / "tmp-fifo", target)

    _swap_after_the_type_check(monkeypatch, swap)
    outcome: list[object] = []

    def read() -> None:
        with confined_to(run):
            outcome.append(read_bytes_capped(target, "config.py", 1 << 20))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=20)  # a hang guard: the read takes milliseconds
    if reader.is_alive():  # release the reader blocked on the FIFO, then fail
        fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        reader.join(timeout=5)
        pytest.fail("the reader blocked on a FIFO swapped in after the check")
    ((data, findings),) = outcome
    assert data == ORIGINAL or data == b"" and "replaced while it was being opened" in findings[0].message


def test_a_fifo_in_place_is_refused_without_blocking(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / "config.py")
    with pytest.raises(UnreadableFile) as refused:
        open_regular(run / "config.py", "config.py", run)
    assert "not a regular file" in refused.value.finding.message


def test_a_link_out_of_the_run_is_refused_naming_its_target(tmp_path: Path) -> None:
    run, secret = _run(tmp_path)
    (run / "config.py").unlink()
    (run / "config.py").symlink_to(secret)
    with pytest.raises(UnreadableFile) as refused:
        open_regular(run / "config.py", "config.py", run)
    assert refused.value.finding.code == "file.outside-run" and str(secret) in refused.value.finding.message
