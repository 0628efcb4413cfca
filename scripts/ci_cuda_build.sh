#!/usr/bin/env bash
# CI stage cuda-build: the CUDA backend compiles and links, and its test
# binary runs (every GPU test skips, saying "no CUDA device: ...", on a
# machine without one; the host checks of the block decoders run). CI has
# nvcc but no GPU, so this is a build check only; scripts/test_cuda.sh is
# the run on a GPU.
#
# Its own build folder (CUDA_BUILD_DIR, default build-ci-cuda), configured
# with -DOMNIBUS_CUDA=ON and built without optimisation
# (CMAKE_BUILD_TYPE=None: no -O flags; nvcc still optimises device code):
# the stage checks that the code compiles, warning-free under -Werror, not
# how fast it runs, and unoptimised the layers it needs (kernels/ above all,
# whose per-ISA files take minutes at -O3) build in a fraction of the time.
# Targets: the backend and its test binary (which link everything CUDA
# needs, the static runtime included) and, of the CLI, only the one file
# that differs in a CUDA build (cli/common.cpp, which makes the backend):
# the rest of the CLI and the layers only it uses (server, bench, engine)
# were over half of the stage's compile time and are the same code the
# build stage compiles. Skipped, saying so, where nvcc is absent.
set -euo pipefail
cd "$(dirname "$0")/.."

nvcc_bin="$(command -v nvcc || true)"
if [ -z "$nvcc_bin" ] && [ -x /usr/local/cuda/bin/nvcc ]; then nvcc_bin=/usr/local/cuda/bin/nvcc; fi
if [ -z "$nvcc_bin" ]; then
  echo "cuda-build: skipped: nvcc not found (no CUDA toolkit on PATH or in /usr/local/cuda)" >&2
  exit 0
fi
echo "cuda-build: $("$nvcc_bin" --version | grep -o 'release [0-9.]*')" >&2

dir="${CUDA_BUILD_DIR:-build-ci-cuda}"
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=None -DOMNIBUS_WERROR=ON -DOMNIBUS_CUDA=ON \
  -DCMAKE_CUDA_COMPILER="$nvcc_bin" >/dev/null
cmake --build "$dir" -j "$(nproc)" --target omnibus_cuda_backend cuda_backend_test \
  src/cli/CMakeFiles/omnibus.dir/common.cpp.o
"$dir/src/backends/cuda/cuda_backend_test"
echo "cuda-build: ok (a build check: GPU tests run only where a GPU is, scripts/test_cuda.sh)" >&2
