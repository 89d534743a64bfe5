"""Read-only, no network, no code execution, no crash: guarantees checked end to end through the CLI."""

import hashlib
import os
import pickle
import shutil
import socket
import stat
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from pimm_inspect.cli.main import cli

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
COMMANDS = [["ls"], ["show"], ["show", "--json"], ["check"], ["check", "--json"], ["config"]]


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under root with its content hash, mode and mtime (ns)."""
    state = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            st = os.lstat(path)
            digest = None
            if stat.S_ISREG(st.st_mode):
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
            state[str(path.relative_to(root))] = (digest, st.st_mode, st.st_mtime_ns)
    return state


@pytest.fixture(scope="module")
def readonly_tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("ro") / "runs"
    shutil.copytree(RUNS, root, symlinks=True)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            p = Path(dirpath) / name
            if not p.is_symlink():
                p.chmod(0o444)
        Path(dirpath).chmod(0o555)
    yield root
    for dirpath, dirnames, _ in os.walk(root):
        Path(dirpath).chmod(0o755)


def test_commands_write_nothing_in_run_directories(readonly_tree):
    before = snapshot(readonly_tree)
    runner = CliRunner()
    for args in COMMANDS:
        result = runner.invoke(cli, [*args, str(readonly_tree / "e2_rollback")])
        assert result.exception is None or isinstance(result.exception, SystemExit), args
    for args in (["check", "--json"], ["ls"]):
        runner.invoke(cli, [*args, str(readonly_tree)])
    runner.invoke(cli, ["curves", str(readonly_tree / "e2_rollback"), "--tag", "train_batch/loss"])
    assert snapshot(readonly_tree) == before
    assert not list(readonly_tree.rglob("__pycache__")) and not list(readonly_tree.rglob("*.lock"))


def test_no_socket_is_opened(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("pimm-inspect tried to open a socket")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    runner = CliRunner()
    for args in (["check", "--json", str(RUNS)], ["show", "--json", str(RUNS)], ["url", str(RUNS / "wandb_clean")]):
        result = runner.invoke(cli, args)
        assert not isinstance(result.exception, AssertionError), result.exception
        assert result.exit_code in (0, 1)


class _Evil:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _torch_like_zip(path: Path, payload: bytes) -> None:
    """torch's zip layout: <archive>/data.pkl, byteorder and version records."""
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("archive/data.pkl", payload)
        zf.writestr("archive/byteorder", "little")
        zf.writestr("archive/version", "3\n")


def test_malicious_checkpoint_is_named_never_run(tmp_path):
    run = tmp_path / "evil_run"
    (run / "model").mkdir(parents=True)
    marker = tmp_path / "pwned"
    payload = pickle.dumps({"epoch": 3, "iter": 10, "state_dict": {}, "note": _Evil(marker)}, protocol=2)
    _torch_like_zip(run / "model" / "model_last.pth", payload)
    (run / "model" / "model_best.pth").write_bytes(pickle.dumps(_Evil(marker), protocol=0))
    runner = CliRunner()
    result = runner.invoke(cli, ["check", "--json", str(run)])
    assert not marker.exists()
    assert result.exit_code == 1
    assert '"checkpoint.unsafe"' in result.stdout and "system" in result.stdout
    for args in (["show", str(run)], ["show", "--json", str(run)], ["ls", str(run)]):
        runner.invoke(cli, args)
    assert not marker.exists()


def _damage_copies(tmp_path: Path) -> Path:
    """A copy of one fixture of each kind with every file truncated to half, plus flipped and empty files."""
    root = tmp_path / "damaged"
    for name in ("e2_rollback", "e3a_running", "wandb_clean", "hf_resumed", "e0_legacy"):
        shutil.copytree(RUNS / name, root / name, symlinks=True)
    for i, path in enumerate(sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())):
        data = path.read_bytes()
        if i % 3 == 0:
            path.write_bytes(data[: len(data) // 2])
        elif i % 3 == 1 and data:
            mutated = bytearray(data)
            for k in range(0, len(mutated), max(1, len(mutated) // 7)):
                mutated[k] ^= 0x5A
            path.write_bytes(bytes(mutated))
        else:
            path.write_bytes(b"")
    return root


def test_corrupted_copies_of_every_fixture_kind_never_crash(tmp_path):
    root = _damage_copies(tmp_path)
    runner = CliRunner()
    for args in (["check", "--json", "--fail-on", "never"], ["show", "--json"], ["ls"]):
        result = runner.invoke(cli, [*args, str(root)])
        assert result.exception is None or isinstance(result.exception, SystemExit), (args, result.exception)
        assert result.exit_code in (0, 1, 2)
        assert "Traceback" not in result.stdout + result.stderr
        assert "internal.load-failed" not in result.stdout, result.stdout[:2000]
        assert "internal.reader-failed" not in result.stdout, result.stdout[:2000]
    check = runner.invoke(cli, ["check", "--json", "--fail-on", "never", str(root)]).stdout
    assert '"file.' in check


def test_hostile_names_fifo_and_links(tmp_path):
    run = tmp_path / "run with spaces\nand newline"
    run.mkdir()
    shutil.copy(RUNS / "e2_clean" / "train.log", run / "train.log")
    os.mkfifo(run / "resolved_config.json")
    (run / "model").symlink_to(run / "model")  # a link to itself
    (tmp_path / "loop").symlink_to(tmp_path)
    weird = tmp_path / os.fsdecode(b"bad\xffname")
    weird.mkdir()
    (weird / "train.log").write_bytes(b"\xff\xfe garbage\n")
    runner = CliRunner()
    result = runner.invoke(cli, ["check", "--json", "--fail-on", "never", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "file.unreadable" in result.stdout


def _check_json(run: Path) -> list[dict]:
    import json
    import subprocess
    import sys

    # -P: never import modules from the cwd (a run could ship its own click.py)
    result = subprocess.run([sys.executable, "-P", "-m", "pimm_inspect", "check", "--json", "--fail-on", "never",
                             str(run)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["runs"][0]["findings"]


DEVICE_FILES = {"train.log": "/dev/zero", "events.out.tfevents.1700000000.host": "/dev/urandom",
                "run_metadata.json": "/dev/zero", "resolved_config.json": "/dev/urandom", "config.py": "/dev/zero",
                "launch.sbatch": "/dev/zero", "model/model_last.pth": "/dev/zero",
                "wandb/run-20260101_000000-abc/run-abc.wandb": "/dev/urandom"}


def _device_run(tmp_path: Path) -> Path:
    run = tmp_path / "devices"
    (run / "model").mkdir(parents=True)
    (run / "wandb" / "run-20260101_000000-abc").mkdir(parents=True)
    return run


def test_links_to_device_files_are_named_never_read(tmp_path):
    """Every file kind linked to /dev/zero or /dev/urandom (endless): a link out of the run, named, never read."""
    run = _device_run(tmp_path)
    for name, device in DEVICE_FILES.items():
        (run / name).symlink_to(device)
    findings = _check_json(run)
    outside = {f["paths"][0]: f["message"] for f in findings if f["code"] == "file.outside-run"}
    assert set(outside) == set(DEVICE_FILES)
    assert outside["train.log"] == "train.log is a link to /dev/zero, outside the run; not read"


def test_device_nodes_inside_the_run_are_unreadable(tmp_path):
    """The same devices as nodes inside the run (no link to catch): refused as not regular, never read forever."""
    run = _device_run(tmp_path)
    try:
        for name, device in DEVICE_FILES.items():
            st = os.stat(device)
            os.mknod(run / name, stat.S_IFCHR | 0o444, st.st_rdev)
    except (PermissionError, OSError):
        pytest.skip("cannot create device nodes here (needs CAP_MKNOD)")
    findings = _check_json(run)
    unreadable = {f["paths"][0] for f in findings if f["code"] == "file.unreadable"}
    assert unreadable == set(DEVICE_FILES)
