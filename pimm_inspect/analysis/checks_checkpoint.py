"""Checks about checkpoints: incomplete publishes, dangling links, unsafe pickles."""

from __future__ import annotations

from ..model import Finding, Run, Severity
from ..sources.checkpoint import save_unknown


def _pick(run: Run) -> str:
    chosen = next((ck for ck in run.checkpoints if ck.resume_candidate), None)
    if chosen is None:
        return "No complete checkpoint qualifies: a resume would fail (train.sh exits 2)."
    step = f" (global step {chosen.global_step})" if chosen.global_step is not None else ""
    return f"A resume would pick {chosen.path}{step}."


def _unreadable(run: Run) -> set[str]:
    """Checkpoints with a file or folder this user may not read (``file.unreadable``) or a Git LFS pointer in place of
    a file (``file.lfs-pointer``): not known to be incomplete."""
    paths = {p for f in run.findings if save_unknown(f) for p in f.paths}
    return {ck.path for ck in run.checkpoints if any(p == ck.path or p.startswith(ck.path + "/") for p in paths)}


def check_incomplete(run: Run) -> list[Finding]:
    """``checkpoint.incomplete``: publish leftovers, a ``last/`` without ``.complete``, a dangling ``model/`` link
    (an HF ``checkpoint-N`` folder's is the HF reader's, one per folder).

    A checkpoint that could not be read (no permission) is not called incomplete: nothing says its save was
    interrupted, and ``file.unreadable`` already names the file.
    """
    model_dir = run.model_dir
    unreadable = _unreadable(run)
    findings = []
    if model_dir is not None and model_dir.link_dangling:
        findings.append(Finding(
            "checkpoint.incomplete", Severity.ERROR,
            f"model/ is a dangling symlink to {model_dir.link_target}",
            ("model",), None,
            "The checkpoints live under $MODEL_DIR, which has moved or is not mounted here. Nothing can be resumed "
            "from this copy of the run; mount or copy the model directory."))
    incomplete = [ck for ck in run.checkpoints if not ck.complete and ck.format != "hf" and ck.path not in unreadable]
    leftovers = list(model_dir.leftovers) if model_dir is not None else []
    names = sorted({ck.path for ck in incomplete} | set(leftovers))
    if names:
        findings.append(Finding(
            "checkpoint.incomplete", Severity.WARNING,
            f"{len(names)} incomplete checkpoint(s) or leftovers: {', '.join(names[:4])}{' ...' if len(names) > 4 else ''}",
            tuple(names), None,
            "A save was interrupted (the process died while publishing): directories without `.complete`, "
            "`last.tmp/` or `*.tmp` files are left behind and are ignored on resume. " + _pick(run)))
    # An HF checkpoint-N folder gets its one checkpoint.incomplete from the HF reader (sources.hf.checkpoints): what is
    # missing and what resume_from_checkpoint does without it.
    return findings


def check_unsafe(run: Run) -> list[Finding]:
    """``checkpoint.unsafe``: pickles referencing globals outside the allow-list (named, never called by us): an error
    when the pickle calls one while loading, a warning when it only keeps them as values (a class in the
    hyperparameters), info for library classes (TrainingArguments)."""
    findings = []
    for ck in run.checkpoints:
        if not ck.unsafe_globals:
            continue
        benign = all(g.startswith(("transformers.", "accelerate.")) for g in ck.unsafe_globals)
        names = ", ".join(ck.unsafe_globals[:5])
        if benign:
            findings.append(Finding(
                "checkpoint.unsafe", Severity.INFO,
                f"{ck.path} references {len(ck.unsafe_globals)} callable(s) outside the allow-list: {names}",
                (ck.path,), None,
                "These are library classes (e.g. TrainingArguments) that `torch.load(weights_only=True)` refuses; "
                "pimm-inspect read the file without calling them."))
        elif not set(ck.unsafe_globals) <= set(ck.unsafe_uncalled):
            called = [g for g in ck.unsafe_globals if g not in ck.unsafe_uncalled]
            which = "these" if len(called) == len(ck.unsafe_globals) else ", ".join(called[:5])
            findings.append(Finding(
                "checkpoint.unsafe", Severity.ERROR,
                f"{ck.path} references {len(ck.unsafe_globals)} callable(s) outside the allow-list: {names}",
                (ck.path,), None,
                f"Loading this file with `torch.load(weights_only=False)` would call {which}; pimm-inspect replaced "
                "them with inert placeholders and ran nothing. Do not load it with pickle unless you trust its "
                "origin."))
        else:
            findings.append(Finding(
                "checkpoint.unsafe", Severity.WARNING,
                f"{ck.path} names {len(ck.unsafe_globals)} global(s) outside the allow-list as values, calling none: "
                f"{names}",
                (ck.path,), None,
                "The pickle keeps these as values (a class stored in the hyperparameters, such as an optimizer class) "
                "and calls none of them: `torch.load(weights_only=True)` refuses the file, and `weights_only=False` "
                "imports their modules (running their import-time code) but calls nothing it names. pimm-inspect "
                "imported nothing."))
    return findings
