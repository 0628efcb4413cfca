#!/usr/bin/env bash
# CI stage: clang-format (the checked-in .clang-format) on the C++ lines
# this change touches. Lines, not whole files: most files predate the check
# and a whole-file rule would make every small fix reformat its file.
#   scripts/ci_lint.sh [BASE]      exits 1 and prints the wanted diff
#   scripts/ci_lint.sh --fix [BASE]   formats those lines in place instead
# The change is the working tree (commits and uncommitted edits to tracked
# files) against BASE, chosen in this order so it works in a fresh clone
# where only HEAD may exist:
#   1. the BASE argument, or $OMNIBUS_LINT_BASE;
#   2. the merge base with origin's default branch (origin/HEAD, else
#      origin/main), when the clone has one and HEAD is not on it;
#   3. HEAD~1: the last commit, what CI's clone of a pushed commit checks;
#   4. HEAD, when there is no parent (a one-commit shallow clone): only
#      uncommitted edits, with a note saying so.
set -euo pipefail
cd "$(dirname "$0")/.."

fix=0
if [ "${1:-}" = "--fix" ]; then fix=1; shift; fi
base="${1:-${OMNIBUS_LINT_BASE:-}}"
if [ -z "$base" ]; then
  for upstream in origin/HEAD origin/main; do
    if git rev-parse -q --verify "$upstream^{commit}" >/dev/null; then
      mb="$(git merge-base HEAD "$upstream" 2>/dev/null || true)"
      if [ -n "$mb" ] && [ "$mb" != "$(git rev-parse HEAD)" ]; then base="$mb"; fi
      break
    fi
  done
fi
if [ -z "$base" ]; then
  if git rev-parse -q --verify 'HEAD~1^{commit}' >/dev/null; then
    base=HEAD~1
  else
    echo "ci_lint: HEAD has no parent here (shallow clone?); checking uncommitted edits only" >&2
    base=HEAD
  fi
fi

# The backend seam (docs/design/backend-seam.md): the layers above model/
# see a backend only through model/backend.h, model_runner.h and
# kv_cache.h; the CLI alone names one (backends/cpu/cpu_backend.h), and
# nothing includes a backend's other headers.
leaks="$(grep -rlE '#include "backends/' src/base src/tensor src/gguf src/kernels src/tokenizer src/model src/kv \
  src/sched src/sampling src/engine src/server src/bench || true)"
leaks+="$(grep -rhE '#include "backends/' src/cli | grep -vE '"backends/[a-z]+/[a-z]+_backend\.h"' || true)"
if [ -n "$leaks" ]; then
  echo "$leaks" | sed 's/^/  /' >&2
  echo "ci_lint: the above reach behind the backend seam; use the interfaces in model/" >&2
  exit 1
fi

command -v clang-format >/dev/null || { echo "ci_lint: clang-format is not installed (scripts/setup.sh)" >&2; exit 1; }
mapfile -t files < <(git diff --name-only --diff-filter=ACMR "$base" -- \
  '*.cpp' '*.cc' '*.h' '*.hpp' '*.cu' '*.cuh' ':(exclude)src/third_party/*')
echo "ci_lint: clang-format $(clang-format --version | grep -o '[0-9][0-9.]*' | head -1) on lines changed since" \
  "$(git rev-parse --short "$base") in ${#files[@]} file(s)" >&2
((${#files[@]})) || exit 0

if ((fix)); then
  git clang-format --force --extensions cpp,cc,h,hpp,cu,cuh "$base" -- "${files[@]}"
  exit 0
fi
out="$(git clang-format --diff --extensions cpp,cc,h,hpp,cu,cuh "$base" -- "${files[@]}" || true)"
if grep -q '^diff --git' <<<"$out"; then
  echo "$out"
  echo "ci_lint: the lines above are not clang-formatted; fix with: scripts/ci_lint.sh --fix $base" >&2
  exit 1
fi
echo "ci_lint: ok" >&2
