#!/usr/bin/env bash
# Fuzzes the server's request handling (JSON parsing, validation, chat
# template, tokenization; tests/fuzz/openai_request_fuzz.cpp) with libFuzzer
# (+ ASan/UBSan) for N seconds.
#   scripts/fuzz_server.sh [seconds, default 600]
# Shares build-fuzz/ with scripts/fuzz_gguf.sh. Exits nonzero on a finding;
# the input is saved under build-fuzz/openai_artifacts/ (reproduce:
# build-fuzz/tests/fuzz/openai_request_fuzz FILE). An input's first byte
# picks the route (0 completions, 1 chat, 2 tokenize, 3 detokenize, mod 4).
set -euo pipefail

seconds="${1:-600}"
source "$(dirname "$0")/fuzz_build.sh"
fuzz_build openai_request_fuzz

corpus="$build/openai_corpus"
artifacts="$build/openai_artifacts"
mkdir -p "$corpus" "$artifacts"
seed() { printf '%b%s' "$1" "$2" > "$corpus/$3"; }
seed '\x00' '{"prompt":"Hello world","max_tokens":4,"stop":["\n"],"logprobs":2,"n":2,"echo":true}' completion
seed '\x00' '{"prompt":[[1,2,3],"x"],"logit_bias":{"5":-100},"temperature":0.7,"seed":1}' completion_ids
seed '\x01' '{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"Hi"}]}],"stream":true,"stream_options":{"include_usage":true},"top_logprobs":3,"logprobs":true}' chat
seed '\x02' '{"content":"Hello <|im_start|> world","add_special":true,"parse_special":true}' tokenize
seed '\x03' '{"tokens":[1,2,3,300]}' detokenize

exec "$build/tests/fuzz/openai_request_fuzz" \
  -max_len=8192 -max_total_time="$seconds" -timeout=10 \
  -rss_limit_mb=2048 -malloc_limit_mb=512 \
  -artifact_prefix="$artifacts/" -print_final_stats=1 \
  "$corpus"
