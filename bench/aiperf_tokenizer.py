"""A HuggingFace tokenizer for aiperf, made offline from a GGUF file and saved
in the HuggingFace cache's layout (aiperf 0.13 with HF_HUB_OFFLINE=1 finds
--tokenizer only there), then checked against the server's /tokenize."""

import hashlib
import re
import shutil
import tempfile
from pathlib import Path

from tool_processes import ToolError, http_post_json

TOKENIZER_REPO_OWNER = "omnibus-local"
# Checked against the server's /tokenize: words, punctuation, digits, a
# leading space and an archaic line like those aiperf's corpus is made of.
TOKENIZER_PROBE = (" Shall I compare thee to a summer's day? Thou art more lovely and more "
                   "temperate: 1234 tokens, e.g. don't STOP_now (x+y)*2 == 42;\n\tdone.")


# tokenizer_config names of the special tokens, and the GGUF keys of their ids
_SPECIAL_TOKEN_IDS = {"bos_token": "bos_token_id", "eos_token": "eos_token_id",
                      "unk_token": "unknown_token_id", "pad_token": "padding_token_id"}


def _tokenizer_from_gguf_metadata(model):
    """transformers' own GGUF tokenizer conversion, fed metadata read with `gguf` (no torch)."""
    try:
        from gguf import GGUFReader
        from transformers import PreTrainedTokenizerFast
        from transformers.integrations.gguf.gguf_tokenizer_mapping import (
            GGUF_TOKENIZER_MAPPING, convert_gguf_tokenizer)
    except ImportError as e:
        raise ToolError(f"cannot build a tokenizer from {model}: transformers needs torch to read "
                        f"GGUF, and the fallback needs the `gguf` package and transformers' GGUF "
                        f"converter ({e}); pip install gguf (or torch)")
    reader = GGUFReader(str(model))
    meta = {key: field.contents() for key, field in reader.fields.items()
            if key.startswith("tokenizer.") or key == "general.architecture"}
    groups = {group: {name: meta[f"tokenizer.{key}"] for key, name in renames.items()
                      if f"tokenizer.{key}" in meta}
              for group, renames in GGUF_TOKENIZER_MAPPING.items()}
    tokenizer_dict, config = groups["tokenizer"], groups["tokenizer_config"]
    for name, key in _SPECIAL_TOKEN_IDS.items():
        token_id = meta.get(f"tokenizer.ggml.{key}")
        config[name] = tokenizer_dict["tokens"][token_id] if token_id is not None else None
    backend, extra = convert_gguf_tokenizer(meta["general.architecture"], tokenizer_dict)
    config.update(extra)
    return PreTrainedTokenizerFast(tokenizer_object=backend, **config)


def build_tokenizer(model, out_dir):
    try:
        from transformers import AutoTokenizer
    except ImportError as e:
        raise ToolError(f"transformers is needed to make aiperf's tokenizer ({e}); pip install transformers")
    try:
        tok = AutoTokenizer.from_pretrained(str(model.parent), gguf_file=model.name)
        how = "AutoTokenizer.from_pretrained(gguf_file=...)"
    except ImportError:  # transformers 5 reads GGUF through torch
        tok = _tokenizer_from_gguf_metadata(model)
        how = "transformers' GGUF tokenizer converter on metadata read with gguf (no torch)"
    tok.save_pretrained(str(out_dir))
    return how


def prepare_tokenizer(model, cache_root):
    """Makes (once) and returns (HF_HUB_CACHE dir, repo id, snapshot dir, how it was made): aiperf
    finds the model's tokenizer offline as that repo id in that cache."""
    stat = model.stat()
    revision = hashlib.sha1(f"{model.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()
    name = re.sub(r"[^A-Za-z0-9._-]", "-", model.stem)
    name = re.sub(r"-{2,}", "-", re.sub(r"\.{2,}", ".", name)).strip("-.")[:80] or "model"
    repo_id = f"{TOKENIZER_REPO_OWNER}/{name}"
    hub = cache_root / "hub"
    repo_dir = hub / f"models--{TOKENIZER_REPO_OWNER}--{name}"
    snapshot = repo_dir / "snapshots" / revision
    if (snapshot / "tokenizer.json").exists() or (snapshot / "tokenizer_config.json").exists():
        how = "cached"
    else:
        (repo_dir / "snapshots").mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=repo_dir / "snapshots"))
        try:
            how = build_tokenizer(model, staging)
            if snapshot.exists():
                shutil.rmtree(snapshot)
            staging.rename(snapshot)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
    (repo_dir / "refs").mkdir(parents=True, exist_ok=True)
    (repo_dir / "refs" / "main").write_text(revision)
    return hub, repo_id, snapshot, how


def check_tokenizer(snapshot, server_url):
    """Compares the saved tokenizer with the server's on a probe text; returns a note or None."""
    from transformers import AutoTokenizer
    ours = AutoTokenizer.from_pretrained(str(snapshot)).encode(TOKENIZER_PROBE, add_special_tokens=False)
    try:
        theirs = http_post_json(server_url + "/tokenize", {"content": TOKENIZER_PROBE, "add_special": False})["tokens"]
    except (OSError, KeyError, ValueError) as e:
        return f"could not check the tokenizer against the server's /tokenize: {e}"
    if ours != theirs:
        return (f"aiperf's tokenizer and the server's disagree on the probe text ({len(ours)} vs "
                f"{len(theirs)} tokens): aiperf's prompt lengths will be a little off")
    return None
