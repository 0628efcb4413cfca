#!/usr/bin/env bash
# Cross-builds omnibus for aarch64 (Debian's g++-aarch64-linux-gnu,
# cmake/toolchain-aarch64.cmake) into build-aarch64/, runs the kernels tests
# under qemu-user, then the default model greedily for 32 tokens under qemu
# and compares the text with the x86 build's scalar table
# (OMNIBUS_FORCE_SCALAR=1 build/src/cli/omnibus): the aarch64 build has only
# the scalar kernels, compiled with -ffp-contract=off to round as the x86
# scalar ones do (CMakeLists.txt), so the greedy tokens should match (a
# difference is a portability bug: libm, or an unguarded ISA assumption).
# Installs what is missing (the cross compiler, qemu-user and the arm64
# libraries, through Debian multiarch) and prints each phase's time.
#
#   scripts/test_aarch64.sh            # needs build/src/cli/omnibus (x86)
# Environment: BUILD_DIR (build-aarch64), X86_BIN (build/src/cli/omnibus),
# JOBS (nproc), OMNIBUS_MODEL (models/SmolLM2-135M-Instruct.Q4_1.gguf),
# TOKENS (32).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build-aarch64}
X86_BIN=${X86_BIN:-build/src/cli/omnibus}
JOBS=${JOBS:-$(nproc)}
MODEL=${OMNIBUS_MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
TOKENS=${TOKENS:-32}
PROMPT="The capital of France is"
# No -L /usr/aarch64-linux-gnu: the multiarch libc6:arm64 loads the binaries
# (cmake/toolchain-aarch64.cmake says why).
QEMU=(qemu-aarch64)

phases=()
script_start=$SECONDS
phase_start=$SECONDS
phase_done() {
  local took=$((SECONDS - phase_start))
  phases+=("$(printf '%-10s %dm%02ds' "$1" $((took / 60)) $((took % 60)))")
  echo "=== $1: $((took / 60))m$((took % 60))s" >&2
  phase_start=$SECONDS
}

# The cross compiler, qemu-user, and the arm64 builds of the libraries the
# build links (the headers-only ones, nlohmann-json and CLI11, are shared).
install_missing() {
  local packages=(g++-aarch64-linux-gnu qemu-user libfmt-dev:arm64 libpcre2-dev:arm64 libxxhash-dev:arm64
    libgtest-dev:arm64 libcpp-httplib-dev:arm64 libspdlog-dev:arm64)
  local missing=() p
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "test_aarch64: installing Debian packages: ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  dpkg --print-foreign-architectures | grep -qx arm64 || $sudo dpkg --add-architecture arm64
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >&2
}

install_missing
[ -x "$X86_BIN" ] || { echo "test_aarch64: $X86_BIN is missing: build the x86 CLI first (scripts/test.sh)" >&2; exit 1; }
[ -f "$MODEL" ] || { echo "test_aarch64: $MODEL is missing (scripts/fetch_model.sh)" >&2; exit 1; }
phase_done setup

cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DOMNIBUS_BUILD_TESTS=ON -DOMNIBUS_WERROR=ON \
  -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake >/dev/null
phase_done configure

cmake --build "$BUILD_DIR" -j "$JOBS" --target kernels_test omnibus
phase_done build

# Benchmarks (matmul_bench_test) are DISABLED_ in the binary already; the
# kernels tests run on the only table this build has, scalar.
"${QEMU[@]}" "$BUILD_DIR/src/kernels/kernels_test" --gtest_brief=1
phase_done kernels

run_args=(run -m "$MODEL" -p "$PROMPT" -n "$TOKENS" --temp 0 -t 2 --verbose --stats-json)
aarch64_err=$(mktemp) x86_err=$(mktemp) aarch64_stats=$(mktemp) x86_stats=$(mktemp)
trap 'rm -f "$aarch64_err" "$x86_err" "$aarch64_stats" "$x86_stats"' EXIT
aarch64_text=$("${QEMU[@]}" "$BUILD_DIR/src/cli/omnibus" "${run_args[@]}" "$aarch64_stats" 2>"$aarch64_err") || {
  cat "$aarch64_err" >&2
  exit 1
}
grep -E "kernels|prompt [0-9]+ tokens, TTFT" "$aarch64_err" | sed 's/^/aarch64 (qemu): /' >&2
phase_done run-arm64

x86_text=$(OMNIBUS_FORCE_SCALAR=1 "$X86_BIN" "${run_args[@]}" "$x86_stats" 2>"$x86_err") || {
  cat "$x86_err" >&2
  exit 1
}
grep -E "kernels|prompt [0-9]+ tokens, TTFT" "$x86_err" | sed 's/^/x86 scalar:     /' >&2
phase_done run-x86

generated() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["generated_tokens"])' "$1"; }
echo "aarch64 ($(generated "$aarch64_stats") tokens): $aarch64_text" >&2
echo "x86     ($(generated "$x86_stats") tokens): $x86_text" >&2
status=0
if [ "$aarch64_text" == "$x86_text" ] && [ "$(generated "$aarch64_stats")" == "$(generated "$x86_stats")" ]; then
  echo "test_aarch64: greedy text identical to the x86 scalar table's" >&2
else
  echo "test_aarch64: FAILED: the aarch64 build's greedy text differs from the x86 scalar table's" >&2
  status=1
fi

echo "=== phases" >&2
printf '  %s\n' "${phases[@]}" >&2
total=$((SECONDS - script_start))
printf '  %-10s %dm%02ds\n' total $((total / 60)) $((total % 60)) >&2
exit $status
