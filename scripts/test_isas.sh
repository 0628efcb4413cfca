#!/usr/bin/env bash
# The x86 kernel tables on CPUs this machine is not: runs the kernel tests
# and the logits fingerprints under qemu-user with older x86 CPU models,
# then says, for every kernel table this build has, how it was tested.
#
# ctest already runs every table this CPU runs (the kernel tests loop over
# them, kernels/kernel_table_test_util.h). Emulation adds two things:
#  * the tables a CPU without AVX-512 runs (avx2, scalar) on a machine with
#    it, so a wider instruction leaking into them (an inline helper
#    compiled once with -mavx512f and shared across files, a flag on the
#    wrong file) is a SIGILL here instead of on a user's CPU;
#  * the avx2 table's bits end to end (integration_test's fingerprints,
#    recorded for avx2 and scalar) on a machine whose own best table is
#    another.
# qemu 7.2's TCG emulates AVX2/FMA/F16C (-cpu Haswell) but no AVX-512 and
# no AVX-VNNI ("TCG doesn't support requested feature"): those tables run
# natively or not at all, and the summary says which.
#
#   scripts/test_isas.sh          # the quick set: every table against the
#                                 # avx2 arithmetic bit for bit (matmul,
#                                 # interleaved matmul, ops, attention), the
#                                 # fingerprints (about 2 minutes on Zen 4,
#                                 # 6 on an Intel Xeon VM, where qemu is
#                                 # slower; sharded over the cores)
#   scripts/test_isas.sh --full   # every kernels_test and integration_test
#                                 # test (about 10 minutes a CPU model)
# Environment: BUILD_DIR (build; needs the CLI, kernels_test and
# integration_test built).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
BIN=$BUILD_DIR/src/cli/omnibus
KERNELS_TEST=$BUILD_DIR/src/kernels/kernels_test
INTEGRATION_TEST=$BUILD_DIR/tests/integration_test
# Nehalem: SSE4.2, no AVX (the scalar table); Haswell: AVX2+FMA+F16C,
# less the system features TCG lacks (each would print a warning). Each
# with the tables it must run: a qemu that cannot emulate them fails the
# script rather than pass having tested less.
CPU_MODELS=(Nehalem Haswell,-pcid,-x2apic,-tsc-deadline,-hle,-invpcid,-rtm)
declare -A EXPECTED=([Nehalem]="scalar" [Haswell]="avx2 scalar")
# AttentionPairTest's two long pair-against-single-row sweeps (six of the
# quick set's thirteen minutes under qemu on an Intel Xeon VM) are left to
# ctest, which runs them on every table this CPU runs; the pair kernels
# still run emulated in AttentionDriverTest.PairRowsAreBitIdenticalToSingleRows.
kernels_filter='*Bits*:*Interleave*:*SimdTables*:Attention*Test.*:-*Bench*:AttentionPairTest.EachRow*:AttentionPairTest.SharedPrefix*'
integration_filter='LogitsFingerprintTest*'
if [ "${1:-}" = "--full" ]; then
  kernels_filter='*'
  integration_filter='*'
elif [ $# -gt 0 ]; then
  echo "usage: scripts/test_isas.sh [--full]" >&2
  exit 2
fi

command -v qemu-x86_64 >/dev/null || {
  echo "test_isas: qemu-x86_64 is missing (Debian's qemu-user; scripts/setup.sh installs it)" >&2
  exit 1
}
for f in "$BIN" "$KERNELS_TEST" "$INTEGRATION_TEST"; do
  [ -x "$f" ] || { echo "test_isas: $f is missing: build first (scripts/test.sh)" >&2; exit 1; }
done

# The tables a CPU runs, as the CLI lists them when refusing an unknown
# one (it checks --kernels before loading anything): "a b c".
tables_run_by() {
  { "$@" "$BIN" run --kernels '?' -p x 2>&1 || true; } | sed -n 's/.*this CPU runs: //p' | tr -d ','
}
compiled=$("$BIN" run --help | sed -n 's/.*This build has: //p' | tr -d ',')
[ -n "$compiled" ] || { echo "test_isas: cannot read the compiled tables from '$BIN run --help'" >&2; exit 1; }

declare -A how
for t in $(tables_run_by); do how[$t]="native (ctest runs it)"; done

SHARDS=$(nproc 2>/dev/null || echo 1)
shard_dir=$(mktemp -d)
trap 'rm -rf "$shard_dir"' EXIT

status=0
for model in "${CPU_MODELS[@]}"; do
  name=${model%%,*}
  emulated=$(tables_run_by qemu-x86_64 -cpu "$model" | xargs)
  echo "=== qemu-x86_64 -cpu $name (tables: $emulated)" >&2
  if [ "$emulated" != "${EXPECTED[$name]}" ]; then
    echo "test_isas: FAILED: qemu's $name runs the tables '$emulated', not '${EXPECTED[$name]}' (qemu-user >= 7.2 emulates AVX2)" >&2
    status=1
    continue
  fi
  start=$SECONDS
  for test in "$KERNELS_TEST" "$INTEGRATION_TEST"; do
    filter=$kernels_filter
    [ "$test" = "$INTEGRATION_TEST" ] && filter=$integration_filter
    # qemu runs one thread: the tests go in one shard a core (gtest's
    # sharding), side by side; their output follows, shard by shard.
    pids=()
    for ((shard = 0; shard < SHARDS; ++shard)); do
      GTEST_TOTAL_SHARDS=$SHARDS GTEST_SHARD_INDEX=$shard \
        qemu-x86_64 -cpu "$model" "$test" "--gtest_filter=$filter" --gtest_brief=1 \
        >"$shard_dir/$shard.log" 2>&1 &
      pids+=($!)
    done
    for ((shard = 0; shard < SHARDS; ++shard)); do
      shard_status=0
      wait "${pids[$shard]}" || shard_status=$?
      cat "$shard_dir/$shard.log" >&2
      if [ "$shard_status" -ne 0 ]; then
        echo "test_isas: FAILED under -cpu $name: $test --gtest_filter=$filter (shard $shard of $SHARDS)" >&2
        status=1
      fi
    done
  done
  echo "=== -cpu $name: $((SECONDS - start)) s" >&2
  for t in $emulated; do
    how[$t]="${how[$t]:+${how[$t]}; }emulated (qemu -cpu $name)"
  done
done

echo "=== kernel tables of this build" >&2
for t in $compiled; do
  printf '  %-12s %s\n' "$t" "${how[$t]:-not run: neither this CPU nor the TCG of qemu has its instructions}" >&2
done
exit $status
