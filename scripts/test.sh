#!/usr/bin/env bash
# The whole test suite, what CI runs (.ci/run): installs what is missing
# (scripts/setup.sh, which also fetches the default model), builds with
# -Werror, runs every unit, integration and golden test with ctest, then the
# CI stages (docs/CONTRIBUTING.md):
#   lint        scripts/ci_lint.sh: clang-format on the changed lines
#   isas        scripts/test_isas.sh: the x86 tables on older emulated CPUs
#               (qemu-user: Nehalem, Haswell), their bits checked
#   sanitizers  scripts/ci_sanitizers.sh: ASan+UBSan clang build (-Werror,
#               -Wthread-safety), every ctest test in it, e2e included
#   fuzz        scripts/fuzz_all.sh 60: each libFuzzer target 60 s on its corpus
#   cuda-build  scripts/ci_cuda_build.sh: the CUDA backend built (-DOMNIBUS_CUDA=ON,
#               its own folder) and its tests run, which skip without a GPU;
#               skipped, saying so, where nvcc is absent
#   aarch64     scripts/test_aarch64.sh: the aarch64 cross-build, its kernel
#               tests under qemu-aarch64 (every aarch64 table) and 32 greedy
#               tokens per table against the x86 build's
# The golden tests compare against llama.cpp's outputs on the real model
# (committed in tests/golden/) and are required here, not skipped. A failing
# stage does not stop the others; the script fails if any did, prints
# each stage's time and, last, the end of each failed stage's output (all
# of it in $BUILD_DIR/stage-logs/). OMNIBUS_SKIP_STAGES="sanitizers fuzz" leaves stages out
# (for a quick local run; CI runs them all).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
scripts/fetch_model.sh gemma3  # the second real model the golden tests check
BUILD_DIR=${BUILD_DIR:-build}

export OMNIBUS_MODEL="$PWD/models/SmolLM2-135M-Instruct.Q4_1.gguf"
export OMNIBUS_GEMMA_MODEL="$PWD/models/gemma-3-270m-q4_k_m.gguf"
export OMNIBUS_REQUIRE_MODEL=1

# (&& because `set -e` does not apply inside a function run as `f || ...`.)
build_and_test() {
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DOMNIBUS_WERROR=ON >/dev/null &&
    cmake --build "$BUILD_DIR" -j "$(nproc)" &&
    ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)"
}

summary=()
failed=()
stage_logs="$BUILD_DIR/stage-logs"
mkdir -p "$stage_logs"
stage() {
  local name="$1"; shift
  if [[ " ${OMNIBUS_SKIP_STAGES:-} " == *" $name "* ]]; then summary+=("$(printf '%-11s skipped' "$name")"); return; fi
  echo "=== stage $name: $*" >&2
  local start=$SECONDS rc=0 log="$stage_logs/$name.log"
  # Each stage's output is also kept, so the end of a failed stage's can be
  # printed again last, where a truncated CI log still shows it.
  set +e
  "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  local took=$((SECONDS - start))
  summary+=("$(printf '%-11s %s  %dm%02ds' "$name" "$([ $rc -eq 0 ] && echo ok || echo FAILED)" $((took / 60)) $((took % 60)))")
  ((rc == 0)) || failed+=("$name")
}

stage build build_and_test
stage lint scripts/ci_lint.sh
stage isas env BUILD_DIR="$BUILD_DIR" scripts/test_isas.sh
stage sanitizers scripts/ci_sanitizers.sh
stage fuzz scripts/fuzz_all.sh 60
stage cuda-build scripts/ci_cuda_build.sh
stage aarch64 env X86_BIN="$BUILD_DIR/src/cli/omnibus" scripts/test_aarch64.sh

for name in "${failed[@]}"; do
  echo "=== the end of stage $name's output ($stage_logs/$name.log)" >&2
  tail -n 100 "$stage_logs/$name.log" >&2
done
echo "=== stages" >&2
printf '  %s\n' "${summary[@]}" >&2
if ((${#failed[@]})); then
  echo "test.sh: failed: ${failed[*]}" >&2
  exit 1
fi
