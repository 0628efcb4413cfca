#!/usr/bin/env python3
"""Golden hashes for src/tensor/quant_golden_test.cpp, from the gguf package
(dequantization of every computable type; quantization where ours repeats ggml's).

Builds pseudo-random blocks of every computable type with the same generator
the C++ test uses (a 64-bit LCG, top byte per step; f16 scale fields get a
bounded exponent so no NaN/inf appears), dequantizes them with
gguf.quants.dequantize (numpy, an implementation independent of ours) and
prints the FNV-1a-64 hash of the resulting float32 bytes. Paste the output
into kGolden in the test when the generator changes.

Usage: python3 tools/check_quant_vs_gguf_py.py
"""
import numpy as np
from gguf import quants
from gguf.constants import GGMLQuantizationType as T

BLOCKS = 8
# type -> (elements per block, bytes per block, offsets of f16 fields)
TYPES = {
    "kF16": (T.F16, 1, 2, [0]),
    "kBF16": (T.BF16, 1, 2, []),
    "kQ4_0": (T.Q4_0, 32, 18, [0]),
    "kQ4_1": (T.Q4_1, 32, 20, [0, 2]),
    "kQ5_0": (T.Q5_0, 32, 22, [0]),
    "kQ5_1": (T.Q5_1, 32, 24, [0, 2]),
    "kQ8_0": (T.Q8_0, 32, 34, [0]),
    "kQ4_K": (T.Q4_K, 256, 144, [0, 2]),
    "kQ5_K": (T.Q5_K, 256, 176, [0, 2]),
    "kQ6_K": (T.Q6_K, 256, 210, [208]),
    "kQ2_K": (T.Q2_K, 256, 84, [80, 82]),
    "kQ3_K": (T.Q3_K, 256, 110, [108]),
    "kIQ4_NL": (T.IQ4_NL, 32, 18, [0]),
    "kIQ4_XS": (T.IQ4_XS, 256, 136, [0]),
    "kMXFP4": (T.MXFP4, 32, 17, []),
}
# Types whose first byte is an E8M0 exponent: kept in 64..191, away from 0
# and 1, which omnibus reads as 0 (ggml: 2^-128, 2^-127) (tensor/quant_blocks.h).
E8M0_FIRST_BYTE = {"kMXFP4"}
MASK = (1 << 64) - 1


def random_bytes(seed: int, count: int) -> bytearray:
    state = seed
    out = bytearray(count)
    for i in range(count):
        state = (state * 6364136223846793005 + 1442695040888963407) & MASK
        out[i] = state >> 56
    return out


def make_blocks(seed: int, block_elems: int, block_bytes: int, f16_offsets, e8m0: bool) -> tuple[bytearray, int]:
    # F16 rows use 64 elements (128 bytes) so the generator covers many values.
    blocks = BLOCKS if block_elems > 1 else 64
    data = random_bytes(seed, blocks * block_bytes)
    for b in range(blocks):
        for off in f16_offsets:
            hi = b * block_bytes + off + 1
            data[hi] = (data[hi] & 0x80) | (data[hi] & 0x3F)  # exponent <= 15: finite, |v| < 2
        if e8m0:
            data[b * block_bytes] = 64 + (data[b * block_bytes] & 0x7F)
    return data, blocks * block_elems


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for byte in data:
        h ^= byte
        h = (h * 0x100000001B3) & MASK
    return h


def main() -> None:
    for i, (name, (qtype, elems, nbytes, f16_offsets)) in enumerate(TYPES.items()):
        data, n = make_blocks(1000 + i, elems, nbytes, f16_offsets, name in E8M0_FIRST_BYTE)
        raw = np.frombuffer(bytes(data), dtype=np.uint8).reshape(1, -1)
        values = quants.dequantize(raw, qtype).astype(np.float32).reshape(-1)
        assert values.size == n, (name, values.size, n)
        print(f"    {{DType::{name}, {1000 + i}, 0x{fnv1a64(values.tobytes()):016X}ULL}},")
    # Quantization, for the types whose quantizer repeats ggml's: floats
    # (byte - 128) * 0.01 from the same generator, 256 of them, quantized by
    # gguf (the numpy port of ggml's reference quantizer); the hash of the bytes.
    print("quantize:")
    for name, qtype, seed in [("kMXFP4", T.MXFP4, 2000)]:
        x = (np.frombuffer(bytes(random_bytes(seed, 256)), dtype=np.uint8).astype(np.float32) - np.float32(128))
        x = (x * np.float32(0.01)).reshape(1, -1)
        q = quants.quantize(x, qtype)
        print(f"    {{DType::{name}, {seed}, 0x{fnv1a64(q.tobytes()):016X}ULL}},")


if __name__ == "__main__":
    main()
