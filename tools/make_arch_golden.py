#!/usr/bin/env python3
"""Golden data from llama.cpp for the small random-weight model of each
architecture in tests/arch_golden_models.cpp (checked by
tests/arch_golden_test.cpp).

For each model NAME it writes tests/golden/arch/NAME/:
  golden.json  the model file's sha256 and size; the teacher-forced token
               sequences (random tokens, seeded); llama.cpp's greedy
               continuations (64 tokens) of a few prompts with the top-2
               gap at each step; and llama.cpp's own noise: the mean and
               largest KL divergence between its logits with flash
               attention on (the golden ones) and off, and their top-1
               agreement where the top-2 gap is >= 0.5.
  logits.f16   llama.cpp's logits (flash attention on, f16 KV cache) at
               every teacher-forced position (from each sequence's
               logits_from: the long-context models keep the last 256
               of 8,960 positions): float16 little-endian,
               positions x vocab, the sequences one after the other
               (rounding to f16 moves the KL below by about 1e-6, against
               llama.cpp's own noise of about 3e-4).

The model bytes come from omnibus's own tiny-model writer (the
write_golden_model binary of the test build), so the test rebuilds the
same bytes and needs no model file; llama.cpp runs them through
tools/llamacpp_golden/llama_golden.cpp (its header says how to build it
against a llama.cpp build tree: bench/build_llama_server.sh makes one).

Usage:
  python3 tools/make_arch_golden.py [--llama-golden /tmp/llama_golden]
      [--writer build/tests/write_golden_model] [--out-dir tests/golden/arch]
      [--llama-version 0.3.36] NAME...
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
SEQUENCES = 2            # teacher-forced sequences ...
SEQUENCE_TOKENS = 128    # ... of this many tokens: 256 positions
GREEDY_PROMPTS = 4
PROMPT_TOKENS = 8
GREEDY_TOKENS = 64       # llama_golden's G command
# Models checked at long context instead: one sequence of `tokens`, the
# logits of its last `last` positions (past the original training context
# of the RoPE scaling under test), a context of `n_ctx`, no greedy runs.
LONG = {"llama31": {"tokens": 8960, "last": 256, "n_ctx": 9216},
        "phi3long": {"tokens": 1984, "last": 256, "n_ctx": 2048},
        "qwen3yarn": {"tokens": 1984, "last": 256, "n_ctx": 2048}}


def run_llama(binary, model, lines, fa_off, n_ctx=1024):
    env = dict(os.environ)
    env.pop("LLG_FA_OFF", None)
    env["LLG_N_CTX"] = str(n_ctx)
    if fa_off:
        env["LLG_FA_OFF"] = "1"
    out = subprocess.run([binary, model], input="\n".join(lines) + "\n", capture_output=True, text=True,
                         check=True, env=env).stdout.splitlines()
    return iter(out)


def read_logits(it):
    head = next(it).split()
    assert head[0] == "LOGITS", head[:2]
    n, vocab = int(head[1]), int(head[2])
    rows = [np.array(next(it).split(), dtype=np.float64) for _ in range(n)]
    assert all(r.size == vocab for r in rows)
    return np.stack(rows)


def log_softmax(x):
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def kl(p_logits, q_logits):
    """KL(p || q) per row, from logits."""
    lp, lq = log_softmax(p_logits), log_softmax(q_logits)
    return (np.exp(lp) * (lp - lq)).sum(axis=-1)


def top2_gap(x):
    s = np.sort(x, axis=-1)
    return s[:, -1] - s[:, -2]


def make_one(name, args):
    out_dir = Path(args.out_dir) / name
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        model = str(Path(tmp) / (name + ".gguf"))
        subprocess.run([args.writer, name, model], check=True)
        data = Path(model).read_bytes()
        rng = np.random.default_rng(20261206)
        # The vocabulary's ordinary tokens are the 256 byte tokens (the rest
        # are special or fillers): sequences draw from all of them.
        long = LONG.get(name)
        n_ctx = long["n_ctx"] if long else 1024
        if long:
            sequences = [rng.integers(0, 256, long["tokens"]).tolist()]
            logits_from = [long["tokens"] - long["last"]]
            prompts = []
        else:
            sequences = [rng.integers(0, 256, SEQUENCE_TOKENS).tolist() for _ in range(SEQUENCES)]
            logits_from = [0] * len(sequences)
            prompts = [rng.integers(0, 256, PROMPT_TOKENS).tolist() for _ in range(GREEDY_PROMPTS)]
        lines = [f"L s{i} {f} " + " ".join(map(str, s)) for i, (s, f) in enumerate(zip(sequences, logits_from))]
        greedy_lines = [f"G p{i} " + " ".join(map(str, p)) for i, p in enumerate(prompts)]
        it = run_llama(args.llama_golden, model, lines + greedy_lines, fa_off=False, n_ctx=n_ctx)
        fa_on = [read_logits(it) for _ in sequences]
        greedy = []
        for p in prompts:
            gen = next(it).split()
            gap = next(it).split()
            assert gen[0] == "GEN" and gap[0] == "GAP"
            greedy.append({"prompt_tokens": p, "generated_tokens": list(map(int, gen[1:])),
                           "top2_gap_milli": list(map(int, gap[1:]))})
        it = run_llama(args.llama_golden, model, lines, fa_off=True, n_ctx=n_ctx)
        fa_off = [read_logits(it) for _ in sequences]
    on, off = np.concatenate(fa_on), np.concatenate(fa_off)
    divergence = kl(on, off)
    gaps = top2_gap(on)
    confident = gaps >= 0.5
    agree = on.argmax(-1) == off.argmax(-1)
    golden = {
        "model": name,
        "model_sha256": hashlib.sha256(data).hexdigest(),
        "model_bytes": len(data),
        "llama_cpp": args.llama_version,
        "llama_cpp_settings": f"n_ctx {n_ctx}, n_batch = n_ubatch = 512, f16 K and V cache, flash attention on, "
                              "2 threads (tools/llamacpp_golden/llama_golden.cpp)",
        "context": n_ctx,
        "vocab": int(on.shape[1]),
        "logits_file": "logits.f16",
        "sequences": [{"name": f"s{i}", "tokens": s, "logits_from": f}
                      for i, (s, f) in enumerate(zip(sequences, logits_from))],
        "greedy": greedy,
        "llama_cpp_flash_attention_off": {
            "mean_kl": float(divergence.mean()),
            "max_kl": float(divergence.max()),
            "confident_positions": int(confident.sum()),
            "confident_top1_agree": int((agree & confident).sum()),
        },
    }
    on.astype("<f2").tofile(out_dir / "logits.f16")
    with open(out_dir / "golden.json", "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")
    print(f"{name}: {on.shape[0]} positions x {on.shape[1]} logits; {int(confident.sum())} with a top-2 gap "
          f">= 0.5; llama.cpp flash attention on vs off: mean KL {divergence.mean():.3e}, "
          f"max {divergence.max():.3e}, top-1 {int(agree.sum())}/{agree.size}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="+")
    parser.add_argument("--llama-golden", default="/tmp/llama_golden")
    parser.add_argument("--writer", default=str(REPO_ROOT / "build" / "tests" / "write_golden_model"))
    parser.add_argument("--out-dir", default=str(REPO_ROOT / "tests" / "golden" / "arch"))
    parser.add_argument("--llama-version", default="llama-cpp-python 0.3.36's vendored llama.cpp")
    args = parser.parse_args()
    for name in args.names:
        make_one(name, args)


if __name__ == "__main__":
    sys.exit(main())
