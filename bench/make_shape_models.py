#!/usr/bin/env python3
"""Random-weight GGUFs with the exact shapes of the models people run.

Speed at 1B-8B is what users see, and no such model comes from PyPI here.
Decode and prefill speed depend on the shapes and the weight types, not on
the values, so this writes llama-architecture models with the layer shapes
of Llama 3.2 1B, Llama 3.2 3B and Llama 3.1 8B, a qwen3moe model with
Qwen3-30B-A3B's layer shape (128 experts of 768, 8 per token) in fewer
layers (12 of 48: the F16 file of all 48 would be 61 GB; --layers sets
it), and a gpt-oss model with gpt-oss-20b's (32 experts of 2,880, 4 per
token, windows, sinks, biases; 8 of 24 layers) (and their vocabulary size:
SmolLM2's tokenizer, padded with unused tokens to the real vocabulary so the
embedding and output matrices are the real size), as F16, then optionally
quantizes them with llama.cpp's own llama-quantize into the common types.

Files go to --out (default ~/.cache/omnibus/shapes), never into the
repository, and are kept: a file already there is not written again.

  bench/make_shape_models.py --shapes llama-3.2-1b --types Q4_K_M,Q4_0 \\
      --quantize /tmp/llama-server-build/.../build/bin/llama-quantize

(bench/build_llama_server.sh builds llama-quantize and llama-bench with
TARGETS="llama-quantize llama-bench".) The text such a model writes is
noise; it is for timing only.
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

try:
    import gguf
except ImportError:  # pragma: no cover
    sys.exit("make_shape_models: needs the gguf package (pip install gguf)")

REPO_ROOT = Path(__file__).resolve().parents[1]
TOKENIZER_SOURCE = REPO_ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"

# name: (layers, n_embd, heads, kv heads, head_dim, n_ff, vocab, tied output, rope base)
SHAPES = {
    "llama-3.2-1b": (16, 2048, 32, 8, 64, 8192, 128256, True, 500000.0),
    "llama-3.2-3b": (28, 3072, 24, 8, 128, 8192, 128256, True, 500000.0),
    "llama-3.1-8b": (32, 4096, 32, 8, 128, 14336, 128256, False, 500000.0),
}
# Mixture of experts: name: (layers, n_embd, heads, kv heads, head_dim,
# experts, experts per token, expert n_ff, vocab, tied output, rope base,
# layers written by default).
MOE_SHAPES = {
    "qwen3-30b-a3b": (48, 2048, 32, 4, 128, 128, 8, 768, 151936, False, 1000000.0, 12),
    # gpt-oss's architecture (its o200k vocabulary's size; 8 of 24 layers by
    # default: the F16 file of all 24 would be 40 GB). Its own keys and
    # tensors: see GPT_OSS below. Quantize it with MXFP4_MOE (MXFP4 experts,
    # Q8_0 elsewhere), the published files' mix.
    "gpt-oss-20b": (24, 2880, 64, 8, 64, 32, 4, 2880, 201088, False, 150000.0, 8),
}
# gpt-oss shapes: (sliding window of every other layer, YaRN factor,
# original context).
GPT_OSS = {"gpt-oss-20b": (128, 32.0, 4096)}
DEFAULT_TYPES = "Q4_0,Q4_K_M,Q5_K_M,Q6_K,Q8_0,IQ4_XS,Q3_K_M"


def tokenizer_fields(path, vocab_size):
    """SmolLM2's BPE vocabulary and merges, padded with unused tokens."""
    r = gguf.GGUFReader(str(path))

    def strings(key):
        f = r.fields[key]
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]

    tokens = strings("tokenizer.ggml.tokens")
    types = [int(r.fields["tokenizer.ggml.token_type"].parts[i][0]) for i in r.fields["tokenizer.ggml.token_type"].data]
    merges = strings("tokenizer.ggml.merges")
    pad = vocab_size - len(tokens)
    if pad < 0:
        sys.exit(f"make_shape_models: {path} has {len(tokens)} tokens, more than {vocab_size}")
    tokens += [f"<|shape_pad_{i}|>" for i in range(pad)]
    types += [int(gguf.TokenType.UNUSED)] * pad
    return tokens, types, merges


class RandomSource:
    """F16 values ~ N(0, 0.02) taken from one pool at varying offsets: fast
    for billions of values, and no two tensors start alike."""

    def __init__(self, seed=1234, pool=1 << 24):
        rng = np.random.default_rng(seed)
        self.pool = (rng.standard_normal(pool, dtype=np.float32) * 0.02).astype(np.float16)
        self.offset = 0

    def take(self, count):
        out = np.empty(count, dtype=np.float16)
        done = 0
        while done < count:
            start = self.offset % len(self.pool)
            n = min(count - done, len(self.pool) - start)
            out[done:done + n] = self.pool[start:start + n]
            done += n
            self.offset += n + 7919  # a prime stride: rows do not line up with earlier tensors
        return out


def attention_plan(p, d, q, kv):
    return [
        (p + "attn_norm.weight", (d,), np.float32),
        (p + "attn_q.weight", (q, d), np.float16),
        (p + "attn_k.weight", (kv, d), np.float16),
        (p + "attn_v.weight", (kv, d), np.float16),
        (p + "attn_output.weight", (d, q), np.float16),
    ]


def model_plan(layers, d, vocab, tied, layer_tensors):
    """The embedding, each layer's tensors (layer_tensors("blk.i.")), the
    output norm and, when not tied, the output matrix."""
    plan = [("token_embd.weight", (vocab, d), np.float16)]
    for i in range(layers):
        plan += layer_tensors(f"blk.{i}.")
    plan.append(("output_norm.weight", (d,), np.float32))
    if not tied:
        plan.append(("output.weight", (vocab, d), np.float16))
    return plan


def tensor_plan(shape):
    layers, d, heads, kv_heads, hd, ff, vocab, tied, _ = shape
    q, kv = heads * hd, kv_heads * hd
    return model_plan(layers, d, vocab, tied, lambda p: attention_plan(p, d, q, kv) + [
        (p + "ffn_norm.weight", (d,), np.float32),
        (p + "ffn_gate.weight", (ff, d), np.float16),
        (p + "ffn_up.weight", (ff, d), np.float16),
        (p + "ffn_down.weight", (d, ff), np.float16),
    ])


def experts_plan(p, d, experts, ff):
    """The router (F32, as converted files keep it) and the experts' matrices."""
    return [
        (p + "ffn_gate_inp.weight", (experts, d), "router"),
        (p + "ffn_gate_exps.weight", (experts, ff, d), np.float16),
        (p + "ffn_up_exps.weight", (experts, ff, d), np.float16),
        (p + "ffn_down_exps.weight", (experts, d, ff), np.float16),
    ]


def moe_tensor_plan(shape, layers):
    _, d, heads, kv_heads, hd, experts, _, ff, vocab, tied, _, _ = shape
    q, kv = heads * hd, kv_heads * hd
    return model_plan(layers, d, vocab, tied, lambda p: attention_plan(p, d, q, kv) + [
        (p + "attn_q_norm.weight", (hd,), np.float32),
        (p + "attn_k_norm.weight", (hd,), np.float32),
        (p + "ffn_norm.weight", (d,), np.float32),
    ] + experts_plan(p, d, experts, ff))


def gpt_oss_tensor_plan(shape, layers):
    """gpt-oss: biased q/k/v/o, attention sinks, the FFN norm named
    post_attention_norm, a biased router and biased experts (biases F32:
    llama-quantize quantizes only tensors named *weight)."""
    _, d, heads, kv_heads, hd, experts, _, ff, vocab, tied, _, _ = shape
    q, kv = heads * hd, kv_heads * hd
    return model_plan(layers, d, vocab, tied, lambda p: attention_plan(p, d, q, kv) + [
        (p + "attn_q.bias", (q,), np.float32),
        (p + "attn_k.bias", (kv,), np.float32),
        (p + "attn_v.bias", (kv,), np.float32),
        (p + "attn_output.bias", (d,), np.float32),
        (p + "attn_sinks.weight", (heads,), np.float32),
        (p + "post_attention_norm.weight", (d,), np.float32),
        (p + "ffn_gate_inp.bias", (experts,), np.float32),
        (p + "ffn_gate_exps.bias", (experts, ff), np.float32),
        (p + "ffn_up_exps.bias", (experts, ff), np.float32),
        (p + "ffn_down_exps.bias", (experts, d), np.float32),
    ] + experts_plan(p, d, experts, ff))


def write_f16(name, shape, path, layers=None):
    moe = name in MOE_SHAPES
    gpt_oss = name in GPT_OSS
    if moe:
        _, d, heads, kv_heads, hd, experts, used, ff, vocab, tied, rope_base, _ = shape
        arch = "gpt-oss" if gpt_oss else "qwen3moe"
    else:
        layers, d, heads, kv_heads, hd, ff, vocab, tied, rope_base = shape
        arch = "llama"
    tokens, types, merges = tokenizer_fields(TOKENIZER_SOURCE, vocab)
    tmp = path.with_suffix(".partial")
    w = gguf.GGUFWriter(str(tmp), arch)
    w.add_name(f"{name} shape, random weights (omnibus bench)")
    w.add_context_length(131072 if not moe or gpt_oss else 40960)
    w.add_embedding_length(d)
    w.add_block_count(layers)
    w.add_feed_forward_length(ff if not moe or gpt_oss else 6144)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_rope_freq_base(rope_base)
    w.add_rope_dimension_count(hd)
    w.add_layer_norm_rms_eps(1e-5 if not moe or gpt_oss else 1e-6)
    if gpt_oss:
        window, yarn_factor, original = GPT_OSS[name]
        w.add_sliding_window(window)
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(yarn_factor)
        w.add_rope_scaling_orig_ctx_len(original)
    if moe:
        w.add_key_length(hd)
        w.add_value_length(hd)
        w.add_expert_count(experts)
        w.add_expert_used_count(used)
        w.add_expert_feed_forward_length(ff)
    w.add_vocab_size(vocab)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(False)
    if gpt_oss:
        plan = gpt_oss_tensor_plan(shape, layers)
    else:
        plan = moe_tensor_plan(shape, layers) if moe else tensor_plan(shape)
    for tname, tshape, dtype in plan:
        dt = np.dtype(np.float32 if dtype == "router" else dtype)
        w.add_tensor_info(tname, tshape, dt, int(np.prod(tshape)) * dt.itemsize)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    source = RandomSource()
    total = sum(int(np.prod(s)) for _, s, _ in plan)
    written = 0
    start = last_print = time.monotonic()
    for tname, tshape, dtype in plan:
        n = int(np.prod(tshape))
        if isinstance(dtype, str):  # a router: logits of a few units, so tokens spread over the experts
            data = (source.take(n).astype(np.float32) * 5.0).reshape(tshape)
        elif tname.endswith(".bias"):  # biases: small, around 0
            data = source.take(n).astype(np.float32).reshape(tshape)
        elif tname.endswith("attn_sinks.weight"):  # sinks: logits of a few units, as trained ones
            data = (source.take(n).astype(np.float32) * 100.0).reshape(tshape)
        elif dtype == np.float32:  # norm weights: near 1, as trained ones are
            data = (1.0 + source.take(n).astype(np.float32)).reshape(tshape)
        else:
            data = source.take(n).reshape(tshape)
        w.write_tensor_data(data)
        written += n
        if time.monotonic() - last_print >= 5 or written == total:
            last_print = time.monotonic()
            print(f"  {name} f16: {100 * written / total:5.1f}% ({last_print - start:.0f} s)", file=sys.stderr,
                  flush=True)
    w.close()
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="llama-3.2-1b,llama-3.1-8b",
                    help="comma-separated: " + ", ".join(list(SHAPES) + list(MOE_SHAPES)))
    ap.add_argument("--layers", type=int, help="layers of a MoE shape (default: " +
                    ", ".join(f"{k} {v[-1]}" for k, v in MOE_SHAPES.items()) + ")")
    ap.add_argument("--types", default=DEFAULT_TYPES, help="llama-quantize types (needs --quantize)")
    ap.add_argument("--quantize", help="path of llama.cpp's llama-quantize; without it only the F16 files are made")
    ap.add_argument("--out", default=str(Path.home() / ".cache" / "omnibus" / "shapes"))
    ap.add_argument("--keep-f16", action="store_true", help="keep the F16 file after quantizing (it is large)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if REPO_ROOT in out.resolve().parents or out.resolve() == REPO_ROOT:
        sys.exit("make_shape_models: --out must be outside the repository")
    if not TOKENIZER_SOURCE.exists():
        sys.exit(f"make_shape_models: {TOKENIZER_SOURCE} is missing (scripts/fetch_model.sh)")
    for name in args.shapes.split(","):
        if name not in SHAPES and name not in MOE_SHAPES:
            sys.exit(f"make_shape_models: unknown shape {name!r}; known: {', '.join(list(SHAPES) + list(MOE_SHAPES))}")
        types = [t for t in args.types.split(",") if t] if args.quantize else []
        layers = None
        file_name = name
        if name in MOE_SHAPES:
            layers = args.layers or MOE_SHAPES[name][-1]
            if layers != MOE_SHAPES[name][0]:
                file_name = f"{name}-{layers}L"  # the shape of each layer, fewer of them
        f16 = out / f"{file_name}-F16.gguf"
        wanted = [out / f"{file_name}-{t}.gguf" for t in types]
        if not f16.exists() and (not types or not all(p.exists() for p in wanted)):
            write_f16(name, SHAPES.get(name) or MOE_SHAPES[name], f16, layers)
        for t, path in zip(types, wanted):
            if path.exists():
                print(f"  {path} (kept)", file=sys.stderr)
                continue
            print(f"  {name} -> {t}", file=sys.stderr)
            subprocess.run([args.quantize, str(f16), str(path.with_suffix(".partial")), t], check=True,
                           stdout=subprocess.DEVNULL)
            os.replace(path.with_suffix(".partial"), path)
        if types and not args.keep_f16 and f16.exists():
            f16.unlink()
        for p in ([f16] if f16.exists() else []) + [p for p in wanted if p.exists()]:
            print(p)


if __name__ == "__main__":
    main()
