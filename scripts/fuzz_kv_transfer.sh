#!/usr/bin/env bash
# Fuzzes the KV handover blob's decoder (what POST /v1/kv/import reads;
# tests/fuzz/kv_transfer_fuzz.cpp) with libFuzzer (+ ASan/UBSan) for N
# seconds. Each input is also tried with a correct checksum appended, so
# mutations reach the header and size checks.
#   scripts/fuzz_kv_transfer.sh [seconds, default 600]
# Shares build-fuzz/ with the other fuzz scripts. Exits nonzero on a
# finding; the input is saved under build-fuzz/kv_transfer_artifacts/
# (reproduce: build-fuzz/tests/fuzz/kv_transfer_fuzz FILE).
set -euo pipefail

seconds="${1:-600}"
source "$(dirname "$0")/fuzz_build.sh"
fuzz_build kv_transfer_fuzz

corpus="$build/kv_transfer_corpus"
artifacts="$build/kv_transfer_artifacts"
mkdir -p "$corpus" "$artifacts"
# A seed the fuzz target accepts once its checksum is appended: the shape
# kv_transfer_fuzz.cpp expects (f16, blocks of 2 positions, 1 layer, 1 KV
# head, head size 2: 16 bytes a block), 4 tokens, 2 blocks.
python3 - "$corpus/valid_body" <<'PY'
import struct, sys
body = b"OMKV" + struct.pack("<IQ", 1, 0x0123456789ABCDEF) + b"f16".ljust(8, b"\0")
body += struct.pack("<IIIIQQ", 2, 1, 1, 2, 16, 4) + struct.pack("<4i", 1, 2, 3, 63) + bytes(range(32))
open(sys.argv[1], "wb").write(body)
PY

exec "$build/tests/fuzz/kv_transfer_fuzz" \
  -max_len=4096 -max_total_time="$seconds" -timeout=10 \
  -rss_limit_mb=2048 -malloc_limit_mb=512 \
  -artifact_prefix="$artifacts/" -print_final_stats=1 \
  "$corpus"
