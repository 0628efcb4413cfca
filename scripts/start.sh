#!/usr/bin/env bash
# One command from a fresh machine to a running server: installs what is
# missing, fetches the default model (once), builds omnibus, and starts the
# OpenAI-compatible server on http://127.0.0.1:8080 with the default model.
# Extra arguments go to `omnibus serve` (e.g. --port 9000 --api-key KEY).
# Ctrl-C drains running requests and stops it.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target omnibus
cat >&2 <<'HELP'
omnibus: starting the server. Try, from another shell:
  curl -s localhost:8080/v1/chat/completions -H 'Content-Type: application/json' \
    -d '{"messages": [{"role": "user", "content": "Why is the sky blue?"}], "max_tokens": 64}'
HELP
exec build/src/cli/omnibus serve -m models/SmolLM2-135M-Instruct.Q4_1.gguf "$@"
