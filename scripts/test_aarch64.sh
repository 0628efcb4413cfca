#!/usr/bin/env bash
# Cross-builds omnibus for aarch64 (Debian's g++-aarch64-linux-gnu,
# cmake/toolchain-aarch64.cmake) into build-aarch64/ (only the kernels
# tests and the CLI), runs the kernels tests under qemu-user (whose default
# CPU, "max", has dotprod and i8mm, so every aarch64 table runs: neon-i8mm,
# neon-dotprod, neon, scalar), against the scalar reference and bit for bit
# against a model of the avx2 arithmetic (matmul_bits_test,
# ops_bits_test), then the default model greedily for 32 tokens under qemu
# with each aarch64 table and compares the text with the x86 build's:
#  * OMNIBUS_KERNELS=scalar on both: must be identical (the scalar kernels
#    are built with -ffp-contract=off to round as the x86 ones do,
#    CMakeLists.txt; a difference is a portability bug: libm, or an
#    unguarded ISA assumption). Failure otherwise.
#  * the neon, neon-dotprod and neon-i8mm tables against x86's avx2 table:
#    must be identical too. The neon matmuls, small ops and attention
#    compute the avx2 kernels' arithmetic in the same order
#    (matmul_bits_test, ops_bits_test and attention_bits_test hold both to
#    one model, bit for bit), so the logits are avx2's. Failure otherwise;
#    skipped, and said so, when this
#    x86 CPU cannot run the avx2 table.
# Installs what is missing (the cross compiler, qemu-user and the arm64
# libraries, through Debian multiarch) and prints each phase's time.
#
#   scripts/test_aarch64.sh            # needs build/src/cli/omnibus (x86)
# Environment: AARCH64_BUILD_DIR (build-aarch64), X86_BIN (build/src/cli/omnibus),
# JOBS (nproc), OMNIBUS_MODEL (models/SmolLM2-135M-Instruct.Q4_1.gguf),
# TOKENS (32). From a clean build-aarch64 on the 2-core Zen 4 VM, packages
# installed: about 6 minutes (build 2m58s, kernels tests 2m08s, the greedy
# runs 43 s).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${AARCH64_BUILD_DIR:-build-aarch64}  # not BUILD_DIR: scripts/test.sh's x86 build
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
  phases+=("$(printf '%-12s %dm%02ds' "$1" $((took / 60)) $((took % 60)))")
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

# The two targets this script runs, and what they link: not the other
# layers' tests, the bench tools or the fuzzers.
cmake --build "$BUILD_DIR" -j "$JOBS" --target kernels_test omnibus
phase_done build

# Benchmarks (matmul_bench_test) are DISABLED_ in the binary already; the
# kernels tests run every table this build has (neon-i8mm, neon-dotprod,
# neon, scalar).
"${QEMU[@]}" "$BUILD_DIR/src/kernels/kernels_test" --gtest_brief=1
phase_done kernels

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run_args=(run -m "$MODEL" -p "$PROMPT" -n "$TOKENS" --temp 0 -t 2 --verbose)

# greedy LABEL TABLE CMD...: the text of a greedy run with OMNIBUS_KERNELS=TABLE
# in $tmp/LABEL.txt (generated token count in $tmp/LABEL.tokens).
greedy() {
  local label=$1 table=$2
  shift 2
  OMNIBUS_KERNELS=$table "$@" "${run_args[@]}" --stats-json "$tmp/$label.json" >"$tmp/$label.txt" \
    2>"$tmp/$label.err" || {
    cat "$tmp/$label.err" >&2
    exit 1
  }
  grep -E "kernels|prompt [0-9]+ tokens, TTFT" "$tmp/$label.err" | sed "s/^/$(printf '%-15s' "$label:") /" >&2
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["generated_tokens"])' "$tmp/$label.json" \
    >"$tmp/$label.tokens"
}

greedy arm64-neoni8mm neon-i8mm "${QEMU[@]}" "$BUILD_DIR/src/cli/omnibus"
greedy arm64-neondot neon-dotprod "${QEMU[@]}" "$BUILD_DIR/src/cli/omnibus"
greedy arm64-neon neon "${QEMU[@]}" "$BUILD_DIR/src/cli/omnibus"
greedy arm64-scalar scalar "${QEMU[@]}" "$BUILD_DIR/src/cli/omnibus"
phase_done run-arm64

greedy x86-scalar scalar "$X86_BIN"
x86_simd=""
# The CLI refuses a table this CPU cannot run before it loads anything.
if OMNIBUS_KERNELS=avx2 "$X86_BIN" run -m "$MODEL" -p x -n 1 --temp 0 >/dev/null 2>&1; then
  greedy x86-avx2 avx2 "$X86_BIN"
  x86_simd=x86-avx2
fi
phase_done run-x86

for label in arm64-neoni8mm arm64-neondot arm64-neon arm64-scalar x86-scalar $x86_simd; do
  echo "$(printf '%-13s' "$label") ($(cat "$tmp/$label.tokens") tokens): $(cat "$tmp/$label.txt")" >&2
done

# same A B: whether two runs generated the same tokens and text; if not,
# says where the text first differs.
same() {
  cmp -s "$tmp/$1.txt" "$tmp/$2.txt" && cmp -s "$tmp/$1.tokens" "$tmp/$2.tokens" && return 0
  python3 - "$tmp/$1.txt" "$tmp/$2.txt" "$1" "$2" >&2 <<'EOF'
import sys
a, b = (open(p).read() for p in sys.argv[1:3])
i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
print(f"test_aarch64: {sys.argv[3]} and {sys.argv[4]} first differ at character {i}: "
      f"...{a[max(0, i - 30):i + 30]!r} / ...{b[max(0, i - 30):i + 30]!r}")
EOF
  return 1
}

status=0
if same arm64-scalar x86-scalar; then
  echo "test_aarch64: scalar table: greedy text identical to x86's" >&2
else
  echo "test_aarch64: FAILED: the scalar table's greedy text differs between aarch64 and x86" >&2
  status=1
fi
# Every neon table against x86's avx2 table: the same bits, so the same
# text.
for label in arm64-neon arm64-neondot arm64-neoni8mm; do
  if [ -z "$x86_simd" ]; then
    echo "test_aarch64: this x86 CPU runs no avx2 table: $label's text not compared" >&2
  elif same "$label" "$x86_simd"; then
    echo "test_aarch64: $label: greedy text identical to $x86_simd's" >&2
  else
    echo "test_aarch64: FAILED: $label's greedy text differs from $x86_simd's" >&2
    status=1
  fi
done

echo "=== phases" >&2
printf '  %s\n' "${phases[@]}" >&2
total=$((SECONDS - script_start))
printf '  %-12s %dm%02ds\n' total $((total / 60)) $((total % 60)) >&2
exit $status
