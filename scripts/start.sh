#!/usr/bin/env bash
# One command from a fresh machine to a running model: installs what is
# missing, fetches the default model (once), builds omnibus, and runs it on an
# example prompt. Extra arguments go to `omnibus run` (e.g. -p "..." -n 64).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target omnibus
if [ $# -eq 0 ]; then
  set -- --chat -p "Explain in two sentences why the sky is blue." -n 96
fi
exec build/src/cli/omnibus run -m models/SmolLM2-135M-Instruct.Q4_1.gguf "$@"
