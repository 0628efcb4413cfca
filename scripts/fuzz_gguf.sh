#!/usr/bin/env bash
# Fuzzes the GGUF reader with libFuzzer (+ ASan/UBSan) for N seconds.
#   scripts/fuzz_gguf.sh [seconds, default 600]
# Builds build-fuzz/ with clang, writes a seed corpus of tiny valid GGUF files
# (Python `gguf` package), then runs tests/fuzz/gguf_fuzz. Exits nonzero when
# the fuzzer finds a crash, leak or timeout; the input is saved under
# build-fuzz/gguf_artifacts/ (reproduce: build-fuzz/tests/fuzz/gguf_fuzz FILE).
set -euo pipefail

seconds="${1:-600}"
source "$(dirname "$0")/fuzz_build.sh"
fuzz_build gguf_fuzz

corpus="$build/gguf_corpus"
artifacts="$build/gguf_artifacts"
mkdir -p "$corpus" "$artifacts"
python3 "$root/tests/fuzz/make_gguf_seeds.py" "$corpus"

# -rss_limit_mb and -malloc_limit_mb catch a file that makes us allocate
# far more than its size; -timeout catches quadratic or endless parsing.
exec "$build/tests/fuzz/gguf_fuzz" \
  -max_len=65536 -max_total_time="$seconds" -timeout=10 \
  -rss_limit_mb=2048 -malloc_limit_mb=512 \
  -dict="$root/tests/fuzz/gguf.dict" \
  -artifact_prefix="$artifacts/" -print_final_stats=1 \
  "$corpus"
