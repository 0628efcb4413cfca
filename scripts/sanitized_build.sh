# Sourced by scripts/ci_sanitizers.sh and scripts/fuzz_*.sh: the one clang
# build both use, so CI compiles the code once for the two stages.
#   ASan (leaks included) and UBSan with -fno-sanitize-recover (the first
#   report ends the process), libFuzzer's coverage (-fsanitize=fuzzer-no-link;
#   the fuzz targets link libFuzzer itself), -O1 -fno-omit-frame-pointer,
#   asserts on (an input that reaches one is a finding), -Werror and
#   -Wthread-safety (base/thread_annotations.h). The per-ISA kernel files stay
#   uninstrumented unless OMNIBUS_SANITIZE_KERNELS=ON (docs/CONTRIBUTING.md).
# Sets $root and $build ($OMNIBUS_ASAN_BUILD_DIR, default build-asan/).
#   sanitized_build [TARGET...]    (no target: everything)
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${OMNIBUS_ASAN_BUILD_DIR:-$root/build-asan}"

sanitized_build() {
  CC=clang CXX=clang++ cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Debug \
    "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -gline-tables-only" -DCMAKE_CXX_FLAGS=-Werror=thread-safety \
    -DOMNIBUS_SANITIZE=ON -DOMNIBUS_FUZZ=ON -DOMNIBUS_WERROR=ON \
    -DOMNIBUS_SANITIZE_KERNELS="${OMNIBUS_SANITIZE_KERNELS:-OFF}" >/dev/null
  ninja -C "$build" -j "${OMNIBUS_JOBS:-$(nproc)}" "$@"
}
