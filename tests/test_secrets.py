"""Secret detection and masking."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pimm_inspect
from pimm_inspect.analysis import secrets

from pimm_inspect.analysis.secrets import MASK, find_in_mapping, find_in_text, mask_text, mask_value

REPO = Path(__file__).resolve().parents[1]

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


# Issue 14: what still leaked. Each case is (input, the secret that must be gone, text that must stay).
FAKE_JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
PEM = ("-----BEGIN OPENSSH " + "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
       "QyNTUxOQAAACBSb2Y3ZmFrZWtleWZha2VrZXlmYWtla2V5ZmFrZWtleQAAAJgAAAAAAAAA\n-----END OPENSSH " + "PRIVATE KEY-----\n")
TEXT_CASES = [
    (f"wandb.key = '{FAKE_WANDB}'", FAKE_WANDB, "wandb.key = "),
    (f"wandb_key: {FAKE_WANDB}", FAKE_WANDB, "wandb_key: "),
    (f'  File "train.py", line 3, in <module>\n    wandb.login(key="{FAKE_WANDB}")', FAKE_WANDB, "wandb.login(key="),
    ("clone https://alice:s3cr3t@git.example.org/repo.git", "s3cr3t", "https://alice:"),
    ("OperationalError: postgresql://admin:pw@db:5432/runs refused", ":pw@", "postgresql://admin:"),
    (f"pimm train --wandb-key {FAKE_WANDB} --run.no-timestamp", FAKE_WANDB, "--run.no-timestamp"),
    ("pimm train --password 'spaced secret' --lr 0.1", "spaced secret", "--lr 0.1"),
    ("pimm train --token x --run.no-timestamp", " x ", "--run.no-timestamp"),
    ("curl -H 'Authorization: Bearer abcdef123456' https://x", "abcdef123456", "Authorization: Bearer "),
    ("X-Auth-Token: abc123", "abc123", "X-Auth-Token: "),
    ("api-key=xyz", "xyz", "api-key="),
    ("pass=ab", "=ab", "pass="),
    ("Val result {'password': 'hunter2', 'lr': 0.1}", "hunter2", "'lr': 0.1"),
    ('payload {"password": "hunter2", "step": 5}', "hunter2", '"step": 5'),
    (f"cookie from {FAKE_JWT} end", FAKE_JWT[:20], " end"),
    ("requests.get(url, headers=h)  # Bearer 9f8e7d6c5b4a", "9f8e7d6c5b4a", "Bearer "),
    (PEM, "b3BlbnNzaC1rZXkt", ""),
]


@pytest.mark.parametrize("text,secret,kept", TEXT_CASES)
def test_mask_text_issue14_leaks(text, secret, kept):
    masked = mask_text(text)
    assert secret not in masked, masked
    assert kept in masked, masked
    assert find_in_text(text), "the check must report what the display masks"


def test_pem_body_lines_are_masked_one_by_one():
    """The Log tab masks line by line: a PEM body line with no header on it is still masked."""
    for line in PEM.splitlines()[1:3]:
        assert mask_text(line) == MASK


HARMLESS = ["pimm submit configs/x.py --run.name semseg-oom --run.no-timestamp",
            "pimm train --token-budget 5 --no-wandb", "tokens: 512", "token: 5", "max_tokens=1234567890",
            f"git checkout {FAKE_WANDB}", "api_key = os.environ['WANDB_API_KEY']", "export WANDB_API_KEY=$KEY",
            "bypass: true", "num_passes=3", "https://example.org:8080/path@x", "Basic augmentation: enabled",
            "Bearer tokens are refreshed hourly"]


@pytest.mark.parametrize("text", HARMLESS)
def test_harmless_text_is_not_masked(text):
    assert mask_text(text) == text


def test_mask_value_by_name_position_and_shape():
    doc = {"wandb": {"key": FAKE_WANDB, "project": "p"}, "wandb_key": FAKE_WANDB,
           "args": ["--token", "x", "--lr", "0.1", "--password", "spaced secret", "--wandb-key", FAKE_WANDB,
                    "--api-key", "--run.no-timestamp"],
           "db": {"pass": "ab", "url": "postgresql://admin:pw@db/x"}, "api-key": "k1", "headers":
           {"Authorization": "Bearer abcdef123456", "X-Auth-Key": "zz"}, "ssh_key": PEM, "session": FAKE_JWT,
           "hf_" + "A" * 34: 1, "pad_token": "<pad>", "token_id": "5", "git": {"commit": FAKE_WANDB},
           "passwords": ("a", ("b",)), "tokenizer": {"pad_token": "[PAD]"}}
    masked = mask_value(doc)
    text = repr(masked)
    assert masked["wandb"]["key"] == MASK and masked["wandb_key"] == MASK
    for secret in ("'x'", "spaced secret", "'ab'", ":pw@", "'k1'", "abcdef123456", "'zz'",
                   "b3BlbnNzaC1", FAKE_JWT[:20], "hf_AAAA", "('a'"):
        assert secret not in text, (secret, text)
    assert masked["args"][0::2] == doc["args"][0::2], "flag names stay; only their values go"
    assert masked["args"][-1] == "--run.no-timestamp"
    assert masked["git"]["commit"] == FAKE_WANDB
    assert masked["pad_token"] == "<pad>" and masked["token_id"] == "5" and masked["tokenizer"] == {"pad_token": "[PAD]"}
    assert masked["wandb"]["project"] == "p"
    assert isinstance(masked["passwords"], tuple)
    hits = {h.where for h in find_in_mapping(doc)}
    assert {"wandb.key", "wandb_key", "args[1]", "args[5]", "args[7]", "db.pass", "db.url", "api-key",
            "headers.Authorization", "headers.X-Auth-Key", "ssh_key", "session", MASK} <= hits, hits
    assert not any("hf_AAAA" in h for h in hits), "a secret used as a key is not repeated in the finding"


def test_two_secret_keys_stay_two_entries():
    doc = {"hf_" + "A" * 34: 1, "hf_" + "B" * 34: 2}
    masked = mask_value(doc)
    assert sorted(masked.values()) == [1, 2] and all(k.startswith(MASK) for k in masked)


def test_masking_any_depth_without_recursion():
    deep: dict = {}
    node = deep
    for _ in range(20_000):
        node["a"] = {}
        node = node["a"]
    node["password"] = "hunter2"
    masked = mask_value(deep)
    assert "hunter2" not in repr(find_in_mapping(deep))
    for _ in range(20_000):
        masked = masked["a"]
    assert masked == {"password": MASK}


_FRAGMENTS = ["hf_", "a" * 34, "AKIA", "ABCDEFGHIJKLMNOP", "ghp_", "github_pat_", "glpat-", "sk-", "AIza", "xoxb-",
              "pypi-", "npm_", "local-", "0123456789abcdef" * 3, "eyJ", "abcdefgh.", "-----BEGIN PRIVATE KEY-----",
              "-----END PRIVATE KEY-----", "://", "user:", "pw@", "Bearer ", "basic ", "Authorization: ",
              "wandb", "key", "token", "--token", "--password", "=", ":", " ", "\n", "'", '"', "-", "--", "_",
              "api_key", "max_tokens", "lr", "0.001", "Qm9iIGlzIGEgc2VjcmV0IGtleSB3aXRoIE1peGVkQ2FzZTEyMzQ1Njc4OTAK",
              "x", "Z", "9", "/", "+", "{", "}", ",", "****", "hooks.slack.com/services/", "AccountKey=",
              "machine h ", "login u ", "password ", "FwoGZXIvYXdz", "wJalrXUtnFEMI/K7MDENG/bPxRfiCY", "EXAMPLEKEY",
              "!!binary |", "\n    "]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=12))
def test_mask_text_prefilters_change_nothing(parts):
    """The fast paths (one scan for every token literal, length and character checks) mask exactly as before."""
    from tests import secrets_reference

    text = "".join(parts)
    assert secrets.mask_text(text) == secrets_reference.mask_text(text)


def test_mask_text_prefilters_change_nothing_on_the_fixtures_strings():
    from tests import secrets_reference

    texts = []
    for path in pimm_inspect.discover(REPO / "fixtures" / "runs"):
        run = pimm_inspect.load_run(path)
        texts += [line for doc in run.configs if doc.text for line in doc.text.splitlines()]
        texts += [str(v) for doc in run.configs if isinstance(doc.data, dict) for v in doc.data.values()]
        texts += [f.message for f in run.findings] + [f.explanation for f in run.findings]
    assert len(texts) > 500
    assert [secrets.mask_text(t) for t in texts] == [secrets_reference.mask_text(t) for t in texts]


_REMEMBERED_CASES = ["api_key=sk-abcdefghijklmnopqrstuvwxyz0123", "--wandb-key 0123456789abcdef0123456789abcdef01234567",
                     "lr=0.1", "plain words", "https://user:hunter2@example.com/x", "token: ghp_" + "a" * 36]


@pytest.mark.parametrize("text", _REMEMBERED_CASES)
def test_remembered_masking_is_the_masking(text):
    """A short text is masked once per process: the first, the remembered and the worked-out answers agree."""
    secrets._mask_short.cache_clear()
    first = mask_text(text)
    assert mask_text(text) == first == secrets._mask_text(text)
    assert secrets._mask_short.cache_info().hits == 1


def test_long_texts_are_never_remembered():
    secrets._mask_short.cache_clear()
    long_text = "x = 1 " * 60 + "api_key=sk-abcdefghijklmnopqrstuvwxyz0123"
    assert len(long_text) > secrets.MEMO_MAX_CHARS
    assert MASK in mask_text(long_text) and "sk-abc" not in mask_text(long_text)
    assert secrets._mask_short.cache_info().currsize == 0


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_remembered_masking_matches_for_any_text(text):
    assert mask_text(text) == secrets._mask_text(text) == mask_text(text)


_KEYS = ["password", "api_key", "token", "lr", "name", "wandb", "key", "max_tokens", "hf_token", "x", "--token",
         "ghp_" + "a" * 36, "pass", "id", "args", "command", "p"]
_LEAVES = (st.sampled_from(_FRAGMENTS) | st.lists(st.sampled_from(_FRAGMENTS), max_size=3).map("".join)
           | st.integers(-5, 10**12) | st.floats(allow_nan=True) | st.booleans() | st.none()
           | st.sampled_from(["-p", "--key", "--pat", "-u", "bob:pw1", "8080", "x" * 300 + " --token t0k"]))
_DOCS = st.recursive(_LEAVES, lambda inner: st.lists(inner, max_size=5) | st.lists(inner, max_size=3).map(tuple)
                     | st.dictionaries(st.sampled_from(_KEYS), inner, max_size=5), max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(_KEYS), _DOCS, max_size=6), st.sampled_from(["", "config", "hub_token"]))
def test_document_walk_masks_and_finds_as_the_reference(doc, key):
    """The walk's fast paths (leaves masked where their container is copied, remembered short strings and int names,
    lists of numbers copied whole) mask and find exactly what the plain walk of the reference does."""
    from tests import secrets_reference

    assert repr(mask_value(doc, key)) == repr(secrets_reference.mask_value(doc, key))
    assert _hits(find_in_mapping(doc)) == _hits(secrets_reference.find_in_mapping(doc))


def test_document_walk_masks_as_the_reference_on_the_fixtures_documents():
    from tests import secrets_reference

    docs = []
    for path in pimm_inspect.discover(REPO / "fixtures" / "runs"):
        run = pimm_inspect.load_run(path)
        docs += [doc.data for doc in run.configs if doc.data is not None]
    assert len(docs) > 50
    assert [repr(mask_value(d)) for d in docs] == [repr(secrets_reference.mask_value(d)) for d in docs]
    assert [_hits(find_in_mapping(d)) for d in docs] == [_hits(secrets_reference.find_in_mapping(d)) for d in docs]


def _hits(hits) -> list[tuple[str, str]]:
    return [(h.where, h.kind) for h in hits]
