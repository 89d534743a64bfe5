"""Issue 14's checkpoint and pickle attacks, each replayed in a fresh process under a memory and CPU ceiling.

Inputs live in tests/data/hostile/ (built by ``python -m tests.hostile_checkpoint_inputs``); the child
process caps its address space (so a regression fails instead of swapping the machine), then reports
its peak resident memory and CPU time, which the tests bound.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pimm_inspect.sources.checkpoint import _stand_ins as si
from pimm_inspect.sources.checkpoint._zip_member import MemberError, read_member
from pimm_inspect.sources.checkpoint.reader import read_checkpoint_file
from pimm_inspect.sources.checkpoint.safe_pickle import safe_loads
from tests import hostile_checkpoint_inputs as hostile
from tests.hostile_support import PEAK_KIB

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = hostile.HOSTILE
FIXTURES = ROOT / "fixtures" / "checkpoints"
MAX_RSS_MIB = 500
MAX_CPU_S = 30
ADDRESS_SPACE_CAP = 3 << 30

_CHILD = r"""
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))
from pathlib import Path
from pimm_inspect.sources.checkpoint.reader import read_checkpoint_file, read_model_dir

def summary(path, rel_path):
    try:
        read = read_checkpoint_file(Path(path), rel_path)
    except Exception as exc:
        return {{"raised": type(exc).__name__}}
    info = read.info
    return {{"codes": [f.code for f in read.findings], "messages": [f.message for f in read.findings],
            "unsafe": list(info.unsafe_globals), "epoch": info.epoch, "global_step": info.global_step,
            "complete": info.complete}}

args = sys.argv[1:]
outcome = {{}}
{body}
usage = resource.getrusage(resource.RUSAGE_SELF)
outcome["max_rss_mib"] = {peak} / 1024  # this process's own peak (tests/hostile_support.PEAK_KIB)
outcome["cpu_s"] = usage.ru_utime + usage.ru_stime
print(json.dumps(outcome))
"""


def run_limited(body: str, *args: str, timeout: float = 180) -> dict:
    """Run ``body`` (which fills ``outcome``) in a fresh interpreter; check its memory and CPU ceilings."""
    script = _CHILD.format(cap=ADDRESS_SPACE_CAP, body=body, peak=PEAK_KIB)
    try:
        run = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                             timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"no answer within {timeout} s")
    assert run.returncode == 0, run.stderr[-3000:]
    outcome = json.loads(run.stdout.strip().splitlines()[-1])
    assert outcome["max_rss_mib"] < MAX_RSS_MIB, outcome
    assert outcome["cpu_s"] < MAX_CPU_S, outcome
    return outcome


def _hostile_file(tmp_path: Path, name: str) -> Path:
    """A hostile input: committed, or built now when it is cheap to build and not worth committing."""
    if name in hostile.BUILDERS_AT_TEST_TIME:
        path = tmp_path / name
        path.write_bytes(hostile.BUILDERS_AT_TEST_TIME[name]())
        return path
    return HOSTILE / name


@pytest.mark.parametrize("name", sorted(set(hostile.COMMITTED) - hostile.SLOW))
def test_committed_inputs_match_their_builder(name: str) -> None:
    assert (HOSTILE / name).read_bytes() == hostile.COMMITTED[name]()


# ---------------------------------------------------------------- cross-file poisoning

def test_poisoning_checkpoint_changes_nothing_for_later_files() -> None:
    files = [(str(HOSTILE / "ckpt-poison-stand-ins.pth"), "model/poison.pth"),
             (str(FIXTURES / "e2_model_last.pth"), "model/clean.pth"),
             (str(HOSTILE / "ckpt-unsafe-os-system.pth"), "model/unsafe.pth")]
    flat = [part for pair in files for part in pair]
    together = run_limited("outcome['reads'] = [summary(args[i], args[i + 1]) for i in range(0, len(args), 2)]",
                           *flat)["reads"]
    alone = [run_limited("outcome['reads'] = [summary(args[0], args[1])]", *pair)["reads"][0] for pair in files]
    assert together == alone
    poison, clean, unsafe = together
    assert poison["codes"] == ["file.corrupt"] and "BUILD on a class refused" in poison["messages"][0]
    assert clean["codes"] == [] and clean["global_step"] == 120 and clean["complete"]
    assert unsafe["unsafe"] == ["os.system"] and unsafe["epoch"] == 3


@pytest.mark.parametrize("module, name", sorted(si._FIXED))
def test_build_never_sets_attributes_on_a_stand_in(module: str, name: str) -> None:
    stand_in = si.lookup(module, name)
    before = (dict(vars(stand_in)) if hasattr(stand_in, "__dict__") else None,
              getattr(stand_in, "__defaults__", None))
    data = (b"\x80\x02" + f"c{module}\n{name}\n".encode() + b"N}(X\x08\x00\x00\x00__init__" + hostile.INERT
            + b"X\x0c\x00\x00\x00__defaults__K\x07\x85X\x04\x00\x00\x00keysK\x07u\x86b.")
    result, _ = safe_loads(data)
    assert not result.ok and "BUILD on a" in result.error
    after = (dict(vars(stand_in)) if hasattr(stand_in, "__dict__") else None,
             getattr(stand_in, "__defaults__", None))
    assert after == before


def test_build_on_our_instances_still_sets_data_not_dunders() -> None:
    # An OrderedDict with the ``_metadata`` attribute torch state dicts carry, and a dunder key dropped.
    data = (b"\x80\x02ccollections\nOrderedDict\n)R}(X\t\x00\x00\x00_metadataK\x01X\x09\x00\x00\x00__class__"
            b"K\x02ub.")
    result, _ = safe_loads(data)
    assert result.ok, result.error
    assert result.value._metadata == 1 and type(result.value) is si.OrderedDictStandIn


# ---------------------------------------------------------------- bombs past the caps

@pytest.mark.parametrize("name", ["ckpt-bzip2-bomb-3GiB-declares-55.pth", "ckpt-lzma-bomb-128MiB-declares-55.pth"])
def test_compressed_member_is_bounded_by_its_output(name: str) -> None:
    read = run_limited("outcome['read'] = summary(args[0], 'model/model_last.pth')", str(HOSTILE / name))["read"]
    assert read["codes"] == ["file.corrupt"], read
    message = read["messages"][0]
    assert message.startswith("model/model_last.pth: zip member archive/data.pkl inflates past its declared 55 bytes")


def test_bytearray_calls_share_one_budget(tmp_path: Path) -> None:
    path = tmp_path / "model_last.pth"
    path.write_bytes(hostile.torch_zip((HOSTILE / "pickle-bytearray-3000x1MiB.pkl").read_bytes()))
    read = run_limited("outcome['read'] = summary(args[0], 'model/model_last.pth')", str(path))["read"]
    assert read["codes"] == ["file.corrupt"]
    assert "more than 268435456 bytes allocated" in read["messages"][0] and "budget" in read["messages"][0]


def test_bytearray_bomb_as_a_bare_pickle() -> None:
    body = ("from pimm_inspect.sources.checkpoint.safe_pickle import safe_loads\n"
            "result, _ = safe_loads(Path(args[0]).read_bytes())\n"
            "outcome.update(ok=result.ok, error=result.error)")
    outcome = run_limited(body, str(HOSTILE / "pickle-bytearray-3000x1MiB.pkl"))
    assert outcome["ok"] is False and "budget" in outcome["error"]


def test_tensor_with_huge_dimensions_is_refused_before_arithmetic(tmp_path: Path) -> None:
    path = tmp_path / "model_best.pth"
    path.write_bytes(hostile.torch_zip(_hostile_file(tmp_path, "pickle-tensor-64-dims-of-64KiB.pkl").read_bytes()))
    read = run_limited("outcome['read'] = summary(args[0], 'model/model_best.pth')", str(path))["read"]
    assert read["codes"][0] == "file.corrupt" and "tensor size is out of range" in read["messages"][0], read


def test_tensor_bounds_keep_real_shapes() -> None:
    def rebuild(size: tuple, stride: tuple, offset: int = 0):
        return si._rebuild_tensor_v2(None, offset, size, stride)

    assert rebuild((2, 3), (3, 1)).numel == 6
    assert rebuild((2**31, 2**31), (2**31, 1)).numel == 2**62
    assert rebuild((1,) * 64, (1,) * 64).shape == (1,) * 64
    for size, stride, offset in (((2**63,), (1,), 0), ((2**32, 2**32), (1, 1), 0), ((1,) * 65, (1,) * 65, 0),
                                 ((2,), (2**63,), 0), ((2,), (1,), 2**63)):
        with pytest.raises(ValueError):
            rebuild(size, stride, offset)


# ---------------------------------------------------------------- huge numbers

def test_out_of_range_numbers_are_findings_on_their_fields() -> None:
    read = run_limited("outcome['read'] = summary(args[0], 'model/model_last.pth')",
                       str(HOSTILE / "ckpt-huge-numbers.pth"))["read"]
    fields = [m.split(": ")[1].split(" is out of range")[0] for m in read["messages"]]
    assert read["codes"] == ["file.corrupt"] * 9
    assert fields == ["epoch", "iter_in_epoch", "global_step", "best_metric_value", "wandb_cursor",
                      "wandb_step_offset", "wandb_checkpoint_global_step", "world_size", "num_workers"]
    assert "about 5001 digits" in read["messages"][0] and "about 401 digits" in read["messages"][3]
    assert read["complete"] and read["epoch"] is None and read["global_step"] is None
    body = ("from pimm_inspect.sources.checkpoint.safe_pickle import to_plain\n"
            "info = read_checkpoint_file(Path(args[0]), 'model/model_last.pth').info\n"
            "outcome.update(keys=list(info.top_level_keys), run_id=info.wandb_run_id, schema=info.schema,\n"
            "               version=info.version, state=info.wandb_state)")
    other = run_limited(body, str(HOSTILE / "ckpt-huge-numbers.pth"))
    assert other["keys"][-1] == "<integer of 16610 bits>" and (other["run_id"], other["version"]) == ("huge0001", 3)
    assert other["state"]["resume_step"] == "<integer of 16610 bits>" and other["schema"] == "pimm.trainer_checkpoint"


_CLI = r"""
from click.testing import CliRunner
from pimm_inspect.cli.main import cli
runs = {}
for command in (["show"], ["show", "--json"], ["check"], ["check", "--json"], ["ls"]):
    result = CliRunner().invoke(cli, [*command, args[0]])
    error = None if result.exception is None or isinstance(result.exception, SystemExit) else \
        f"{type(result.exception).__name__}: {result.exception}"[:300]
    runs[" ".join(command)] = {"code": result.exit_code, "error": error, "stdout": result.stdout,
                               "stderr": result.stderr[-500:]}
outcome["runs"] = runs
"""


@pytest.mark.parametrize("field", ["global_step", "epoch", "iter_in_epoch", "resume_step", "best_metric_value"])
def test_show_check_and_json_survive_a_huge_number(tmp_path: Path, field: str) -> None:
    run = tmp_path / "run"
    shutil.copytree(ROOT / "fixtures" / "runs" / "e2_clean", run, symlinks=True)
    (run / "model" / "model_last.pth").write_bytes(hostile.huge_numbers_checkpoint((field,)))
    runs = run_limited(_CLI, str(run))["runs"]
    for command, result in runs.items():
        assert result["code"] in (0, 1) and result["error"] is None, (command, result)
    name = {"resume_step": "wandb_cursor"}.get(field, field)
    document = json.loads(runs["check --json"]["stdout"])
    messages = [f["message"] for f in document["runs"][0]["findings"]] if "runs" in document else \
        [f["message"] for f in document["findings"]]
    assert f"model/model_last.pth: {name} is out of range" in " ".join(messages)
    assert "model/model_last.pth" in runs["show --json"]["stdout"]


# ---------------------------------------------------------------- one bad file never hides its siblings

def test_dcp_planner_path_with_a_list_hides_no_sibling(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "standard", run)
    shutil.copy(HOSTILE / "dcp-planner-list.metadata", run / "model/last/trainer.dcp/.metadata")
    body = ("result = read_model_dir(Path(args[0]) / 'model', Path(args[0]))\n"
            "outcome.update(paths=[c.path for c in result.checkpoints], best=[c.format for c in result.checkpoints\n"
            "               if c.path.endswith('best.pth')], findings=[[f.code, f.message] for f in result.findings])")
    outcome = run_limited(body, str(run))
    assert outcome["paths"] == ["model/last", "model/model_best.pth"] and outcome["best"] == ["weights"]
    assert outcome["findings"] == [["file.corrupt", "model/last/trainer.dcp/.metadata: DCP planner_data holds 1 "
                                    "unusable key path(s) (e.g. for trainer.global_step); those items are placed "
                                    "by their dotted names"]]


def test_a_crash_inside_a_last_folder_costs_only_that_folder(tmp_path: Path, monkeypatch) -> None:
    from pimm_inspect.sources.checkpoint import reader as checkpoint

    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "standard", run)

    def boom(*args, **kwargs):
        raise IndexError("a bug")

    monkeypatch.setattr(checkpoint, "_read_last_dir", boom)
    result = checkpoint.read_model_dir(run / "model", run)
    assert [c.path for c in result.checkpoints] == ["model/model_best.pth"]
    assert [(f.code, f.paths) for f in result.findings] == [("internal.reader-failed", ("model/last",))]


# ---------------------------------------------------------------- the bounded zip-member reader

_METHODS = [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA]


@pytest.mark.parametrize("method", _METHODS)
def test_every_compression_method_reads_the_same_checkpoint(tmp_path: Path, method: int) -> None:
    source = FIXTURES / "e2_model_last.pth"
    path = tmp_path / "model_last.pth"
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(path, "w", method) as dst:
        for item in src.infolist():
            dst.writestr(item.filename, src.read(item), compress_type=method)
    read, reference = read_checkpoint_file(path, "m.pth"), read_checkpoint_file(source, "m.pth")
    assert read.findings == () and read.info.global_step == 120 and read.byteorder == "little"
    assert read.info.tensor_count == reference.info.tensor_count and read.archive_version == "3"


@pytest.mark.parametrize("method", _METHODS)
def test_a_member_longer_shorter_or_other_than_declared_is_refused(method: int) -> None:
    data = bytes(range(256)) * 40
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as archive:
        archive.writestr("archive/data.pkl", data)
    raw = buf.getvalue()
    info = zipfile.ZipFile(io.BytesIO(raw)).getinfo("archive/data.pkl")
    assert read_member(io.BytesIO(raw), info, 1 << 20) == data
    for declared, crc, message in ((100, info.CRC, "inflates past its declared 100 bytes"),
                                   (len(data) + 1, info.CRC, "ends after"),
                                   (len(data), info.CRC ^ 1, "fails its CRC check")):
        info.file_size, saved_crc, info.CRC = declared, info.CRC, crc
        with pytest.raises(MemberError, match=message):
            read_member(io.BytesIO(raw), info, 1 << 20)
        info.file_size, info.CRC = len(data), saved_crc
    with pytest.raises(MemberError, match="over the 100 byte cap"):
        read_member(io.BytesIO(raw), info, 100)


def test_dcp_items_share_one_budget(tmp_path: Path) -> None:
    """1,000 DCP byte items all pointing at one 1 MB archive: 1 GB of payload from a 290 KB .metadata (992 MiB RSS before the shared budget)."""
    hostile.dcp_many_items(tmp_path / "trainer.dcp")
    body = ("from pimm_inspect.sources.checkpoint._containers import read_dcp_directory, DcpUnread\n"
            "out = read_dcp_directory(Path(args[0]), 'model/last/trainer.dcp')\n"
            "items = out.payload['extra']\n"
            "outcome.update(read=sum(isinstance(v, dict) for v in items.values()),\n"
            "               unread=sum(isinstance(v, DcpUnread) for v in items.values()),\n"
            "               findings=[[f.code, f.message] for f in out.findings])")
    outcome = run_limited(body, str(tmp_path / "trainer.dcp"))
    assert outcome["read"] + outcome["unread"] == 1000 and 100 < outcome["read"] < 300, outcome
    assert outcome["findings"] == [["file.corrupt", "model/last/trainer.dcp/__0_0.distcp: DCP items past the "
                                    "per-checkpoint budget are not read (unpickling stopped: more than 268435456 "
                                    "bytes allocated)"]]


def test_safetensors_header_of_many_tiny_values_is_not_parsed(tmp_path: Path) -> None:
    """90 MB of ``[],`` under the 100 MiB header cap: json.loads would build 30M lists (GBs)."""
    path = tmp_path / "model.safetensors"
    with path.open("wb") as out:  # in chunks: this test process must stay small too
        chunk = b"[]," * 1_000_000
        out.write((6 + 30 * len(chunk) + 4).to_bytes(8, "little") + b'{"a":[')
        for _ in range(30):
            out.write(chunk)
        out.write(b"[]]}")
    body = ("from pimm_inspect.sources.hf.checkpoints import safetensors_meta\n"
            "count, total, dtypes, findings = safetensors_meta(Path(args[0]), 'checkpoint-5/model.safetensors')\n"
            "outcome.update(count=count, findings=[[f.code, f.message] for f in findings])")
    outcome = run_limited(body, str(path))
    assert outcome["findings"] == [["file.corrupt", "checkpoint-5/model.safetensors: safetensors header holds "
                                    "over 2000000 JSON values; not parsed"]]


def test_wandb_state_deeper_than_the_cap_is_cut_with_a_finding() -> None:
    """A pickled W&B state nested 200 levels deep: cut at the one depth cap, and a finding says so."""
    from pimm_inspect.sources._limits import DEPTH_CUT
    from pimm_inspect.sources.checkpoint.reader import checkpoint_fields

    deep: dict = {"leaf": 1}
    for _ in range(200):
        deep = {"d": deep}
    payload = {"trainer": {"global_step": 10}, "logger": {"wandb": {"run_id": "abc", "next_step": 11, "x": deep}}}
    findings: list = []
    fields = checkpoint_fields(payload, "model/last.pth", findings)
    assert fields["wandb_run_id"] == "abc" and fields["wandb_cursor"] == 11 and fields["global_step"] == 10
    assert [(f.code, f.paths) for f in findings] == [("file.over-limit", ("model/last.pth",))]
    assert "nested deeper than 50 levels" in findings[0].message
    node = fields["wandb_state"]["x"]
    while isinstance(node, dict):
        node = node["d"]
    assert node == DEPTH_CUT
    findings.clear()
    checkpoint_fields({"logger": {"wandb": {"run_id": "abc", "next_step": 11}}}, "model/last.pth", findings)
    assert findings == []  # a real-sized state: no finding
