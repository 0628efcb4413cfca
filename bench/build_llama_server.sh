#!/usr/bin/env bash
# Builds llama.cpp's own HTTP server (llama-server) from the llama.cpp copy
# vendored in the llama-cpp-python sdist, so bench/bench_serving.py has a peer
# to compare omnibus serve against. Everything happens under BUILD_DIR, never
# inside the repository.
#
# usage: bench/build_llama_server.sh [BUILD_DIR]      (default /tmp/llama-server-build)
#   env: LLAMA_CPP_PYTHON_VERSION (default 0.3.36), JOBS (default 2),
#        TARGETS (default llama-server; e.g. "llama-server llama-bench llama-quantize")
# result: BUILD_DIR/llama_cpp_python-VERSION/vendor/llama.cpp/build/bin/<each target>
set -euo pipefail

build_dir="${1:-/tmp/llama-server-build}"
version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
jobs="${JOBS:-2}"
read -r -a targets <<<"${TARGETS:-llama-server}"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$build_dir"
build_dir="$(cd "$build_dir" && pwd)"
case "$build_dir/" in
  "$repo_root"/*) echo "refusing to build inside the repository ($repo_root)" >&2; exit 1 ;;
esac

sdist="$build_dir/llama_cpp_python-$version.tar.gz"
if [[ ! -f "$sdist" ]]; then
  pip download --no-binary :all: --no-deps "llama-cpp-python==$version" -d "$build_dir"
fi

src="$build_dir/llama_cpp_python-$version"
if [[ ! -d "$src/vendor/llama.cpp" ]]; then
  tar -xzf "$sdist" -C "$build_dir"
fi

llama="$src/vendor/llama.cpp"
# LLAMA_CURL=OFF: no libcurl needed, models are local files. GGML_NATIVE=ON is
# what a user building llama.cpp on this machine gets. The web UI is left out
# (no npm build, no download of prebuilt assets): the benchmark needs only the API.
cmake -S "$llama" -B "$llama/build" -DCMAKE_BUILD_TYPE=Release \
  -DLLAMA_CURL=OFF -DGGML_NATIVE=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
  -DBUILD_SHARED_LIBS=OFF
cmake --build "$llama/build" --target "${targets[@]}" -j "$jobs"

for target in "${targets[@]}"; do
  echo "built: $llama/build/bin/$target"
done
"$llama/build/bin/${targets[0]}" --version || true
