#!/usr/bin/env bash
# Fuzzes the GGUF reader (tests/fuzz/gguf_fuzz.cpp) with libFuzzer (+ ASan/UBSan)
# for N seconds, from the committed corpus tests/fuzz/corpus/gguf_fuzz/ (tiny
# valid GGUF files written by tests/fuzz/make_gguf_seeds.py with the Python
# `gguf` package). scripts/fuzz_all.sh says where findings go.
#   scripts/fuzz_gguf.sh [seconds, default 600]
exec "$(dirname "$0")/fuzz_all.sh" "${1:-600}" gguf_fuzz
