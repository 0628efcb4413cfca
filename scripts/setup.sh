#!/usr/bin/env bash
# Installs everything omnibus needs to build and test (Debian packages and a
# few Python packages), then fetches the default model. Idempotent: a second
# run installs nothing and fetches nothing. `scripts/setup.sh --bench` also
# installs llama-cpp-python (built from source: slow the first time), which
# the golden-data tools and the side-by-side benchmark use, and aiperf with
# transformers, which bench/compare_with_aiperf.py uses; tests use neither.
set -euo pipefail
cd "$(dirname "$0")/.."

# clang builds the sanitizer and fuzz stages (its runtimes: libclang-rt-dev);
# clang-format checks changed lines (scripts/ci_lint.sh).
DEBIAN_PACKAGES=(cmake ninja-build g++ clang libclang-rt-dev clang-format pkg-config
  libcpp-httplib-dev nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev
  libxxhash-dev libpcre2-dev libgtest-dev libbenchmark-dev unzip qemu-user)
PYTHON_PACKAGES=(numpy gguf pytest openai)
if [ "${1:-}" = "--bench" ]; then PYTHON_PACKAGES+=(llama_cpp:llama-cpp-python aiperf:aiperf transformers:transformers); fi

missing=()
for p in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >&2
fi

py_missing=()
for entry in "${PYTHON_PACKAGES[@]}"; do
  module=${entry%%:*}; package=${entry#*:}  # "module:package" when the names differ
  python3 -c "import $module" 2>/dev/null || py_missing+=("$package")
done
if ((${#py_missing[@]})); then
  echo "setup: installing Python packages: ${py_missing[*]}" >&2
  # llama.cpp built for a CPU with AMX (-march=native) multiplies batches
  # with AMX tiles, and on VMs whose kernel does not grant the tile state
  # (seen on an Intel Xeon VM here) that crashes with SIGSEGV in
  # ggml_backend_amx_mul_mat on the first prompt of two or more tokens. On
  # such CPUs build it for the same instruction sets without AMX (the
  # machine's AVX-512, VNNI and BF16 kernels and the repacked layouts stay).
  if [[ " ${py_missing[*]} " == *" llama-cpp-python "* ]] && grep -qw amx_tile /proc/cpuinfo 2>/dev/null \
      && [ -z "${CMAKE_ARGS:-}" ]; then
    echo "setup: AMX CPU: building llama-cpp-python without AMX" >&2
    export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
-DGGML_AVX_VNNI=ON -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON \
-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
    pip_extra=(--no-cache-dir)  # a cached wheel may be the AMX build
  fi
  python3 -m pip install -q ${pip_extra[@]+"${pip_extra[@]}"} "${py_missing[@]}" >&2
fi

scripts/fetch_model.sh
