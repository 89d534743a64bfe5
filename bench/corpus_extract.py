"""Rebuild the real-world corpus: extract the run folders of public repositories into a folder OUTSIDE this one.

    python bench/corpus_extract.py CORPUS_DIR --git-dir OWNER+NAME=PATH_TO_GIT_DIR [...]
    python bench/corpus_extract.py CORPUS_DIR --mirror /work/.mirror      (every SOURCES entry found there)

Each SOURCES entry is a public repository, the commit its run folders are taken from, and whether every run
artifact ever committed is wanted (``union``: each file from the newest commit holding it, for repositories whose
runs were committed a folder at a time). Get each repository as a git directory first (``git clone --bare
https://github.com/OWNER/NAME``, or the agents' ``fetch`` tool, which leaves one under ``/work/.mirror/OWNER+NAME/``),
then this script copies, with ``git show``, every file under each folder that holds a run artifact (event files, W&B
folders, ``trainer_state.json``, Lightning ``hparams.yaml``, ``train.log``, detectron2 ``metrics.json``,
Ultralytics ``results.csv``) to ``CORPUS_DIR/OWNER+NAME/`` with the repository's paths, and writes ``.source``
(URL and commit). Nothing of it belongs in this repository: the corpus is read, never committed. Files of 4 MiB and
more may be missing from a snapshot (and Git LFS files are pointers): the runs are judged as extracted.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path, PurePosixPath

SOURCES: list[tuple[str, str, bool]] = [
    # issue 11's corpus
    ("02hyc/VQ-VAE", "b5b9335ffd0119f9e84f7d6f48a118bf7f3b61da", False),
    ("10844110/t5-summarization-demo", "bf0ebb2464f6b3c2d6eec7df995767d2de010633", False),
    ("ADL-Group-10/lab0", "15d277f433db55729c20afe8fd1f78898b4e19e1", False),
    ("Aaidt/Lite-GPT", "ae76da9dfc49a418c54582cbc61e672e0c950564", False),
    ("AbhijeetAnand23/LLM_Assignment_3", "f344fe7c28dc8a0d2ce1bdb4f8b821576898e9c2", False),
    ("AkshayKulkarni3467/NAF_DQN", "c5947e254c6a48bf0d93cbcde886bbcbac26cc99", False),
    ("AradhyaSpace11/KANKAN", "ca3f071038d19fa8bfc0e9f1386d664fae5fb501", False),
    ("KaiboLiu/fancy-repos", "a75a67093d07585ef151b5828aed4a0cc63021c0", False),
    ("RohitBind123/falcon-lora-imdb-sentiment", "e6de0d5fa740a7c37afa23c2a403c6f8c38f2f32", False),
    ("Tashu014/lora-imdb-distilbert", "b43db57b9033dee045e6f1e984f984c3adb6607b", False),
    ("TheCodeheadMT/TensorBoard-Tutorial", "cfa2f7de49d1331a750c6ce5b130a68f80911bb9", False),
    ("aigoncharov/trainer_state_viz", "dadf91ac27c15f8dfe035445c3d969a7871fb94e", False),
    ("tanmayshishodia/cs-7643-proj", "1b6ba9f656ab18dfa890c102e4922a2918655d93", False),
    # issue 19: W&B SDK 0.10-0.19 (ids with spaces, resumes of one id beside other ids), HF, detectron2, Ultralytics
    ("3lLobo/HPC", "2172ed374ddf5e0952341e53ff50d3711b78143e", False),  # W&B 0.10.17, Keras logs/<ts>/train
    ("TijmenKort/vcnet-blind-image-inpainting", "00f30b3f4cba7de27237dc0cdada05a91a23df70", False),  # 0.11.0
    ("ToberoCat/TicTacToe", "3731f8f12d2ea326eb413954387d343b294a316c", False),  # 0.12.11, one id resumed 6 times
    ("ARM-software/keyword-transformer", "89d185482810396c41d800ca6fc56705bf9e485e", False),  # 0.12.15, Keras
    ("A-Ijishakin/beta-tcvae", "421bbaf7246ae614ecdadcd6ccf11fe8162016dc", False),  # 0.13.10
    ("1-13AM/CodeBertModel", "620aeaf2960fe85080262b3db017a64af717ad8f", False),  # 0.17.0, HF
    ("AaronLuo-ai/LighteningSegmentation", "8c6067969635b6bf2e33bda95ffe15745e5b9f3f", False),  # 0.18.0, Lightning
    ("yonatanyal/Mancala", "70873f0180a45209dc929f9b37645b3178f0af5a", False),  # 0.19.1, ids "Mancala 8"
    ("Asaf2101/Backgammon", "bfbabc3c58643bc243e7f1a7eb86ef3df2dd5cd5", False),  # 0.19.8, ids "Backgammon -test3"
    ("Yhwani/baseballAI", "6abf8807c57f7df7b9684966af8fa67e2b0ef398", False),  # detectron2 output/ (LFS pointers)
    ("norlab-ulaval/droneSegmentation", "fa0e17ff9c927ae7253e660cf77879fa6573542d", True),  # detectron2, notebooks
    ("coffee19850519/pathway_retinanet", "a029f632e64ef0f1d91f8ea519897c45e21811b5", False),  # detectron2
    ("Noba1anc3/Publaynet", "e0d15b4e1b2e7a872e18e8aca30c57892a39e428", False),  # detectron2
    ("29aitch/AIchatbot", "055a529f37a3a05d38a4590e159ed4d61e38393c", False),  # HF Trainer
    ("AhmedSheded/yolov8_ball_detector", "d0d78a4d27e8205ddac640920701a4a9f044841e", True),  # Ultralytics, 2 hosts
    ("vedovati-matteo/SmalltalkCodeGen", "8750a97235eb610359b25ad728fa3db91a6a68d9", True),  # HF, 8 processes
    ("odudler/dl2023", "2df3450ba5354fbb1ebdf9174488d884dfbd8218", True),  # HF, 18 trainer sessions
    # claims round five: shapes nobody here had looked at
    ("FlamingFury00/Advanced-ML-Rocket-League-bot-project", "57693bb80e1a3c543811a31804f83f2a829ce559",
     False),  # W&B id "general" in 14 folders, each beside a debug.log-only sibling
    ("JeffAsDRK/Semana_2_AS", "d1ba9f12deb9af4c9e85d14d0b9c07443e74e0cb", True),  # Lightning k-fold, 11 TB files/pid
    ("rodrigodelazcano/Asymmetric-Self-Play", "d028e9043391010e8ce1dc3c04954bd32b695709",
     True),  # Hydra outputs/, Ray Tune W&B ids with "_"
    ("mohammad21saif/onlineDT", "6e4920517ecc308cd5ed604b1a98ade440a79fab", False),  # HF checkpoint-N only
    ("MelDashti/Arol-ChatBot", "8c30178afd8597ced33c4123171577276cd3aeae", True),  # HF, checkpoint-40 .. 2760
    ("bronemos/view-fusion", "5127e5c0dd5fc8fe9c980cdfb1d97d6acf77b921", True),  # W&B, wandb-resume.json
    ("NatdanaiDan/Explore-a-new-method-of-forecasting-BTC-to-become-a-billionaire.",
     "02cc300ab7622cd0710a5fa4bbf4bbdd937ecaa9", True),  # Lightning version_0/1 with checkpoints
    ("shayFarj/HerbKeeper", "0a0ca17c794442389b84ef3a2fc387407f1ac638", False),  # W&B ids "Herb_Keeper 400"
    ("GarrentDSTRC/GLEAM_DeepSea", "75a30d0a252161e85923fc34a191a98427091208", False),  # TB runs/ + W&B 2025
    # claims round six: Lightning CSVLogger folders, SB3, W&B offline 2025-2026, HF dirs reused
    ("0Xero7/slm_training", "cb220b2f9bc7abbec75899387fb674ce8b015696", True),  # CSVLogger only, 40 versions
    ("AIRI-Institute/genrisk", "c910cf7779a8f546d6fc724c47f967792df4fd23", True),  # CSVLogger + checkpoints
    ("CooperBigFoot/CAMELS-CH", "f8ddfb8f21f5fb145e60dd3c7b6450094581e4f3",
     True),  # CSVLogger and TensorBoardLogger into one version folder
    ("Jhko725/Contact-Point-Detection", "88e00c11e259c58957d4076e3e56ac43c6f1568f", True),  # Lightning 0.6 test-tube
    ("0pk0/rl4avs", "08ccbcbb9f24f817e3ed582911062cf92491de8b", True),  # SB3 PPO_N, W&B offline 0.21
    ("MarcT03/Recipe-Generator", "fe953a8681a38b3139cb17d63c5a48bfd50f8c70", True),  # HF results/ of 5 trainings
    ("AKilalours/opendrivefm", "218d4a1dd9fdc58da46df2d73ba5ca84e9f0069c", True),  # W&B offline 2026
    # claims round seven: W&B ids resumed online and offline many times, HF results/ of two trainings, Lightning
    # versions without hparams.yaml, version folders with profiler logs and spaces in names
    ("crobbins327/stylegan2-pytorch-WSI", "7c9ad0ab452f73b18d48376de13f89ad17fdbe44",
     True),  # W&B 0.12 2021, id cxeenjh9 in 8 folders, some without a .wandb
    ("destiny0118/CASD", "e828292c4563e461e5cf3daa50c6c3fd24cb59fd", True),  # W&B offline id resumed 5 times
    ("c-jacobus/Nyx-TSIT", "7215b9a77513444dd5d0de4ee50baf459b0b7777", True),  # W&B 2022, many ids, resume file
    ("Hristo-Karagyozov/large-language-models", "3f789c5e1e3063b5d915f55ef08f41e0aa982fbd",
     True),  # HF results/ checkpoint-225 beside 500-2500
    ("SecurityLab-UCD/UniTSyn", "470c41e46056368c1d29c1356d4fdd82f8033d54", True),  # HF checkpoint-500 rewritten
    ("AGCpr/Medical-AI-Colon-Polyp-Segmentation", "f72add871588b16b21562fa25ccba999428db8b1",
     True),  # Lightning version_3: last.ckpt + metrics.csv, no hparams
    ("DyeDye-diyung/Framework_for_Financial_Time-Series_Forecasting", "6aaa233869090baefbbf10430d4209d2127c05b1",
     True),  # Lightning, many versions, profiler logs
    ("dhruvmetha/adaptive_roa", "9c6cb9ba50a2c49a3c9f2808cbf982d2757b53ed",
     True),  # Lightning TensorBoardLogger, two event files of one pid, last.ckpt + best-checkpoint per version
    ("kmchiti/MolGen", "84b8422a75354d3d7d901af9a9d0647ddbe50ef0", True),  # W&B 2023 beside wandb-resume.json
    # claims round eight (corpus7): W&B 2023 and 2026 ids resumed several times, Lightning loggers with their own
    # save_dir names and string versions
    ("Tarun-AK/scaling", "f72a9e5c285625ba945000388c0b25f84244603c", False),  # W&B 2026, 47 folders, ids x3-4
    ("aorvieto/VerySimpleTransformer", "e31370e01b3b46382944522884e0356ff29b56ac", False),  # W&B 2023, 31 folders
    ("Bokai-Ji/ConceptPPO", "620011959f06a26116bbfe02dc950ee38bf1f100", False),  # W&B 2023, latest-run/files
    ("jordanpainter/dial_post_train", "6f3cf6d7762d5725d0eb615a1e95a88fd7477eb4", False),  # W&B 2026, id x2
    ("AuroraEchos/TinyLM", "f24346334a116a6daf54110f9295c5ecee2ba0b0", False),  # W&B 2026, id x2
    ("10sajan10/CS6994FinalProject", "22b475a75dcee64c3cc1e071165ebcaffe055481",
     False),  # CSVLogger lightning_logs_<name>/version_N and <name>/site_N_season string versions
    ("EnderXiao/SATD", "7fdde6b3db41fdf280ebb5fc83a10ebe98cbbcda", False),  # Lightning version_0
    # claims round nine (claims8): LightningCLI's saved config.yaml beside hparams.yaml, 100+ CSV versions, W&B 2025
    # beside Lightning
    ("Green-Wood/CoMER", "ee15cdbe02467fd29f386fd554b4bc2185110fcc", False),  # LightningCLI, ckpt over 100 MB gone
    ("luo-simon/stock-predictions", "024d09c579a3ab3605adb0ebd1bc333e59c4a656", False),  # ~150 Lightning versions
    ("marc-harary/lit-lm", "46d0c31c91a52f614df9328cab5466f80845010a", False),  # Lightning CLI + W&B 2025 x3
]
"""(OWNER/NAME, commit, union)."""

ARTIFACT = re.compile(r"(tfevents|\.wandb$|(^|/)trainer_state\.json$|(^|/)hparams\.yaml$|(^|/)train\.log$|"
                      r"(^|/)metrics\.json$|(^|/)results\.csv$|(^|/)wandb-summary\.json$|(^|/)metrics\.csv$)")


def _git(git_dir: Path, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", str(git_dir), *args], capture_output=True, check=True).stdout


def _files(git_dir: Path, rev: str) -> list[str]:
    return _git(git_dir, "ls-tree", "-r", "--name-only", "-z", rev).decode(errors="replace").split("\0")[:-1]


def _containers(paths: list[str]) -> tuple[set[str], set[str]]:
    """(folders taken whole, folders of which only the top-level files are taken)."""
    whole, top = set(), set()
    for path in paths:
        if not ARTIFACT.search(path):
            continue
        parts = PurePosixPath(path).parts
        if "wandb" in parts[:-1]:
            i = len(parts) - 1 - parts[:-1][::-1].index("wandb") - 1
            whole.add("/".join(parts[:i + 1]))
            top.add("/".join(parts[:i]))
            continue
        parent = PurePosixPath(path).parent
        if re.fullmatch(r"checkpoint-\d+", parent.name):
            parent = parent.parent
        if parent.name.startswith("version_") and parent.parent.name == "lightning_logs":
            whole.add(str(parent.parent))
        elif parent.parent.name == "runs" and "tfevents" in path:
            whole.add(str(parent.parent))  # HF / torch runs/<date_host>/: the whole output dir's runs/ ...
            top.add(str(parent.parent.parent))  # ... and the output dir's own files
        else:
            whole.add(str(parent))
    return whole, top


def extract(name: str, commit: str, union: bool, git_dir: Path, corpus: Path) -> str:
    where = {path: commit for path in _files(git_dir, commit)}
    if union:
        for rev in _git(git_dir, "rev-list", "--all").decode().split()[:300]:
            for path in _files(git_dir, rev):
                where.setdefault(path, rev)
    whole, top = _containers(sorted(where))
    wanted = [p for p in where if any(d in ("", ".") or p.startswith(d + "/") for d in whole)
              or str(PurePosixPath(p).parent) in {t or "." for t in top}]
    out = corpus / name.replace("/", "+")
    missing = 0
    for path in wanted:
        try:
            data = _git(git_dir, "show", f"{where[path]}:{path}")
        except subprocess.CalledProcessError:
            missing += 1  # not in the snapshot (4 MiB and more)
            continue
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    (out / ".source").write_text(f"https://github.com/{name} {commit}{' union' if union else ''}\n")
    return f"{name}: {len(wanted)} files under {len(whole)} folders, {missing} not in the snapshot"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--git-dir", action="append", default=[], help="OWNER+NAME=PATH (repeatable)")
    parser.add_argument("--mirror", type=Path, help="a folder of OWNER+NAME/repo git directories")
    parser.add_argument("--only", action="append", default=[], help="only this OWNER/NAME (repeatable)")
    args = parser.parse_args()
    repo_root = Path(__file__).resolve().parents[1]
    corpus = args.corpus.resolve()
    if corpus.is_relative_to(repo_root):
        print("the corpus must live outside the repository", file=sys.stderr)
        return 2
    given = dict(item.split("=", 1) for item in args.git_dir)
    for name, commit, union in SOURCES:
        if args.only and name not in args.only:
            continue
        key = name.replace("/", "+")
        git_dir = Path(given[key]) if key in given else (args.mirror / key / "repo" if args.mirror else None)
        if git_dir is not None and (git_dir / ".git").is_dir():
            git_dir = git_dir / ".git"
        if git_dir is None or not git_dir.exists():
            print(f"{name}: no git directory (skipped)", file=sys.stderr)
            continue
        print(extract(name, commit, union, git_dir, corpus))
    os.makedirs(corpus, exist_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
