"""Secret detection and masking."""

from pimm_inspect.analysis.secrets import MASK, find_in_mapping, find_in_text, mask_text, mask_value

FAKE_WANDB = "0123456789abcdef0123456789abcdef01234567"
FAKE_HF = "hf_" + "A" * 34


def test_mask_text_assignments_and_token_shapes():
    line = f"export WANDB_API_KEY={FAKE_WANDB} && pimm launch --token {FAKE_HF}"
    masked = mask_text(line)
    assert FAKE_WANDB not in masked and FAKE_HF not in masked
    assert f"WANDB_API_KEY={MASK}" in masked
    assert "pimm launch" in masked
    assert mask_text("AKIAABCDEFGHIJKLMNOP is aws") == f"{MASK} is aws"


def test_commit_hashes_and_benign_keys_are_not_secrets():
    doc = {"git": {"commit": FAKE_WANDB}, "max_tokens": "1234567890", "tokenizer": "bert-base-uncased",
           "optimizer": {"lr": 0.1}}
    assert find_in_mapping(doc) == []
    assert mask_value(doc) == doc


def test_find_and_mask_nested_mapping():
    doc = {"wandb_api_key": FAKE_WANDB, "hooks": [{"type": "PushToHub", "hf_token": FAKE_HF}],
           "launch_command": f"WANDB_API_KEY={FAKE_WANDB} pimm submit"}
    hits = find_in_mapping(doc)
    assert [h.where for h in hits] == ["hooks[0].hf_token", "launch_command", "wandb_api_key"]
    masked = mask_value(doc)
    assert masked["wandb_api_key"] == MASK
    assert masked["hooks"][0]["hf_token"] == MASK
    assert FAKE_WANDB not in masked["launch_command"]


def test_find_in_text_by_line():
    text = "#!/bin/bash\n#SBATCH --job-name=x\nexport WANDB_API_KEY=" + FAKE_WANDB + "\n"
    hits = find_in_text(text)
    assert [h.where for h in hits] == ["line 3"]
