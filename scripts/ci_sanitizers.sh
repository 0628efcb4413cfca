#!/usr/bin/env bash
# CI stage: the clang build of scripts/sanitized_build.sh (ASan with leak
# checks, UBSan with -fno-sanitize-recover so the first report ends the
# process, -O1 -fno-omit-frame-pointer, asserts on, -Werror and
# -Werror=thread-safety for the GUARDED_BY annotations of
# base/thread_annotations.h), and in it: every unit and integration test,
# the server end to end (tests/server_e2e, whose servers are this build's
# binary), and of the golden tests the greedy continuations of both real
# models. Left to the build stage, for CI's hour: the golden tests'
# teacher-forced and perplexity sweeps (the same forward passes over more
# text: 9.5 minutes here) and the command-line tests (3.5 minutes; one of
# them runs the binary under qemu, where ASan cannot map its shadow).
#   scripts/ci_sanitizers.sh [ctest args, e.g. -R server_e2e_test]
# (With ctest args, only those tests run, and not the golden subset.)
# Every sanitizer report, from a test or from a server a test started, is
# written to build-asan/sanitizer-reports/; the stage fails if any exists,
# even where the process that wrote it was not checked, and prints them.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/sanitized_build.sh  # sets $build
sanitized_build

reports="$build/sanitizer-reports"
rm -rf "$reports"
mkdir -p "$reports"
# allocator_may_return_null: a request too large to allocate throws
# std::bad_alloc as it does without ASan (the server answers it), rather
# than ending the process.
export ASAN_OPTIONS="detect_leaks=1:check_initialization_order=1:strict_init_order=1:allocator_may_return_null=1:log_path=$reports/report"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$reports/report"
export OMNIBUS_MODEL="$PWD/models/SmolLM2-135M-Instruct.Q4_1.gguf"
export OMNIBUS_GEMMA_MODEL="$PWD/models/gemma-3-270m-q4_k_m.gguf"
export OMNIBUS_REQUIRE_MODEL=1
export OMNIBUS_SANITIZED=1  # tests that cannot run under ASan (qemu) skip

status=0
if (($#)); then
  ctest --test-dir "$build" --output-on-failure -j "$(nproc)" "$@" || status=$?
else
  ctest --test-dir "$build" --output-on-failure -j "$(nproc)" -E '^(golden_test|cli_test)$' || status=$?
  "$build/tests/golden_test" --gtest_filter='*GreedyContinuations*' || status=$?
fi
if compgen -G "$reports/*" >/dev/null; then
  echo "ci_sanitizers: sanitizer reports:" >&2
  for f in "$reports"/*; do echo "== $f" >&2; cat "$f" >&2; done
  status=1
fi
exit "$status"
