# Sourced by scripts/fuzz_*.sh: builds one libFuzzer target in build-fuzz/
# (clang, ASan/UBSan via -DOMNIBUS_FUZZ=ON) and sets $root and $build.
#   fuzz_build TARGET
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${OMNIBUS_FUZZ_BUILD_DIR:-$root/build-fuzz}"

fuzz_build() {
  CC=clang CXX=clang++ cmake -G Ninja -S "$root" -B "$build" \
    -DOMNIBUS_FUZZ=ON -DOMNIBUS_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  ninja -C "$build" -j "${OMNIBUS_JOBS:-2}" "$1"
}
