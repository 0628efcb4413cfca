#!/usr/bin/env bash
# Builds every libFuzzer target (tests/fuzz/*_fuzz.cpp) and runs each for N
# seconds, starting from its committed corpus tests/fuzz/corpus/<target>/.
# A CI stage of scripts/test.sh (60 s each); also the way to fuzz longer.
#   scripts/fuzz_all.sh [seconds, default 60] [target ...]   (default: all)
# Options per target come from tests/fuzz/<target>.options (OSS-Fuzz's
# format: `key = value` lines under [libfuzzer], e.g. max_len, dict), on top
# of the defaults below. The build is scripts/sanitized_build.sh's
# (build-asan/, shared with the sanitizer stage). The committed corpus is
# only read: inputs found during the run go to build-asan/fuzz/corpus/<target>/
# (keep the ones worth keeping with libFuzzer's -merge=1 into
# tests/fuzz/corpus/<target>/, small files only; tests/fuzz/corpus/README.md).
# Targets run side by side, one per core (OMNIBUS_FUZZ_JOBS).
# Exits nonzero if any target finds a crash, a sanitizer report (ASan,
# UBSan, leaks), an assert, a timeout or an out-of-memory; the input is kept
# in build-asan/fuzz/artifacts/<target>/ (reproduce:
# build-asan/tests/fuzz/<target> FILE) and the log's end is printed.
set -euo pipefail

seconds="${1:-60}"
shift || true
source "$(dirname "$0")/sanitized_build.sh"  # sets $root, $build; sanitized_build TARGET...

if (($#)); then
  targets=("$@")
else
  targets=()
  for f in "$root"/tests/fuzz/*_fuzz.cpp; do targets+=("$(basename "$f" .cpp)"); done
fi
sanitized_build "${targets[@]}"

# Reads tests/fuzz/<target>.options into libFuzzer flags (a dict is found
# beside the options file).
target_flags() {
  local file="$root/tests/fuzz/$1.options" section="" key value
  [ -f "$file" ] || return 0
  while IFS= read -r line || [ -n "$line" ]; do
    line="${line%%#*}"
    [[ "$line" =~ ^[[:space:]]*$ ]] && continue
    if [[ "$line" =~ ^\[(.*)\] ]]; then section="${BASH_REMATCH[1]}"; continue; fi
    [ "$section" = libfuzzer ] || continue
    key="$(echo "${line%%=*}" | xargs)"; value="$(echo "${line#*=}" | xargs)"
    [ "$key" = dict ] && value="$root/tests/fuzz/$value"
    echo "-$key=$value"
  done < "$file"
}

run_target() {
  local t="$1" seeds="$root/tests/fuzz/corpus/$1"
  local work="$build/fuzz/corpus/$t" artifacts="$build/fuzz/artifacts/$t" log="$build/fuzz/logs/$t.log"
  mkdir -p "$work" "$artifacts" "$(dirname "$log")"
  [ -d "$seeds" ] || { echo "fuzz_all: $t has no committed corpus ($seeds); starting empty" >&2; seeds=""; }
  # -rss_limit_mb and -malloc_limit_mb catch an input that makes us
  # allocate far more than its size; -timeout catches endless or
  # quadratic work on one input.
  # shellcheck disable=SC2046
  "$build/tests/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 $(target_flags "$t") \
    "$work" ${seeds:+"$seeds"} >"$log" 2>&1
}

jobs="${OMNIBUS_FUZZ_JOBS:-$(nproc)}"
declare -A pid_of
failed=()
for t in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
  echo "fuzz_all: $t for ${seconds}s" >&2
  run_target "$t" &
  pid_of[$t]=$!
done
for t in "${targets[@]}"; do
  if wait "${pid_of[$t]}"; then
    runs="$(grep -o 'stat::number_of_executed_units: [0-9]*' "$build/fuzz/logs/$t.log" | grep -o '[0-9]*$' || true)"
    echo "fuzz_all: $t ok (${runs:-?} runs; $(ls "$build/fuzz/corpus/$t" | wc -l) inputs found so far in $build/fuzz/corpus/$t)" >&2
  else
    failed+=("$t")
    echo "fuzz_all: $t FAILED; the end of $build/fuzz/logs/$t.log:" >&2
    tail -n 60 "$build/fuzz/logs/$t.log" >&2
    # The inputs themselves, so a finding in a CI log can be reproduced
    # (base64 -d > FILE; build-asan/tests/fuzz/<target> FILE).
    for input in "$build/fuzz/artifacts/$t"/*; do
      [ -f "$input" ] || continue
      echo "fuzz_all: $input ($(stat -c %s "$input") bytes), base64 (first 8 KiB):" >&2
      base64 -w 0 "$input" | head -c 8192 >&2
      echo >&2
    done
  fi
done
if ((${#failed[@]})); then
  echo "fuzz_all: findings in: ${failed[*]}" >&2
  exit 1
fi
