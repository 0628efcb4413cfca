#!/usr/bin/env bash
# Fuzzes the KV handover blob's decoder (what POST /v1/kv/import reads;
# tests/fuzz/kv_transfer_fuzz.cpp) with libFuzzer (+ ASan/UBSan) for N
# seconds, from the committed corpus tests/fuzz/corpus/kv_transfer_fuzz/.
# Each input is also tried with a correct checksum appended, so mutations
# reach the header and size checks. scripts/fuzz_all.sh says where findings go.
#   scripts/fuzz_kv_transfer.sh [seconds, default 600]
exec "$(dirname "$0")/fuzz_all.sh" "${1:-600}" kv_transfer_fuzz
