#!/usr/bin/env python3
"""Writes a few tiny valid GGUF files as a seed corpus for gguf_fuzz.

Usage: make_gguf_seeds.py OUT_DIR
Uses the `gguf` Python package (the reference writer), so the seeds also
check that we read what llama.cpp's tools write.
"""
import os
import sys

import numpy as np
import gguf


def write(path, fill, alignment=None, version=None):
    w = gguf.GGUFWriter(path, "llama")
    if alignment is not None:
        w.add_custom_alignment(alignment)
    fill(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    if version is not None:  # v2 and v3 share the layout for little-endian files
        with open(path, "r+b") as f:
            f.seek(4)
            f.write(version.to_bytes(4, "little"))


def minimal(w):
    w.add_uint32("llama.block_count", 1)
    w.add_tensor("output_norm.weight", np.arange(1, 8, dtype=np.float32))


def tokenizer_like(w):
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_array("tokenizer.ggml.tokens", ["<|im_start|>", "a", "b", "ab", "\u0120x"])
    w.add_array("tokenizer.ggml.merges", ["a b"])
    w.add_array("tokenizer.ggml.token_type", [3, 1, 1, 1, 1])
    w.add_array("tokenizer.ggml.scores", [0.0, -1.5, -2.25, -3.0, -4.0])
    w.add_bool("tokenizer.ggml.add_bos_token", False)
    w.add_float32("llama.rope.freq_base", 10000.0)
    w.add_float64("some.f64", -0.125)
    w.add_int8("some.i8", -3)
    w.add_uint16("some.u16", 513)
    w.add_int64("some.i64", -(1 << 40))
    w.add_uint64("some.u64", 1 << 50)
    w.add_array("some.nested", [[1, 2], [3]])
    q8 = np.arange(2 * 34, dtype=np.uint8).reshape(2, 34)
    w.add_tensor("blk.0.attn_q.weight", q8, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.add_tensor("token_embd.weight", np.linspace(-1, 1, 33, dtype=np.float32).reshape(3, 11))


def metadata_only(w):
    w.add_string("general.name", "seed")
    w.add_array("general.languages", ["en", "fr"])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    write(os.path.join(out, "minimal.gguf"), minimal)
    write(os.path.join(out, "minimal_v2.gguf"), minimal, version=2)
    write(os.path.join(out, "tokenizer_like.gguf"), tokenizer_like, alignment=64)
    write(os.path.join(out, "metadata_only.gguf"), metadata_only)


if __name__ == "__main__":
    main()
