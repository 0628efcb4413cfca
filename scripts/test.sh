#!/usr/bin/env bash
# The whole test suite: installs what is missing (scripts/setup.sh, which
# also fetches the default model), builds, and runs every unit, integration
# and golden test with ctest. The golden tests compare against llama.cpp's
# outputs on the real model (committed in tests/golden/) and are required
# here, not skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
scripts/fetch_model.sh gemma3  # the second real model the golden tests check
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"

export OMNIBUS_MODEL="$PWD/models/SmolLM2-135M-Instruct.Q4_1.gguf"
export OMNIBUS_GEMMA_MODEL="$PWD/models/gemma-3-270m-q4_k_m.gguf"
export OMNIBUS_REQUIRE_MODEL=1
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)"
