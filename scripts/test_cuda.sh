#!/usr/bin/env bash
# The CUDA backend on a machine with an NVIDIA GPU, in one command:
#   1. builds omnibus and cuda_backend_test with -DOMNIBUS_CUDA=ON (Release,
#      -Werror) in BUILD_DIR (default build-cuda);
#   2. runs cuda_backend_test with OMNIBUS_MODEL set and fails if any test
#      failed or skipped (on a GPU nothing may skip);
#   3. runs the default model greedily for 32 tokens with --backend cpu and
#      --backend cuda and prints both texts (and where they part, if they
#      do). The backends are not bit-identical, so differing texts alone do
#      not fail: a near tie can send greedy decoding down another path.
#      The verdict is step 2's CudaRunnerTest.DefaultModelGreedyPromptMatchesTheCpu,
#      which runs the same prompt 32 greedy steps on the CPU and each step
#      on the GPU with the CPU's tokens, and requires the same top token
#      except in a near tie (the CPU's logits of the two within 2 x 1e-2 of
#      its largest |logit|, as the runner tests compare); its summary is
#      printed here.
# Results go to stdout and to $OUT (or ./cuda-results) as tests.log,
# cpu.txt, cuda.txt and the two stats lines; record them in
# docs/design/cuda-backend.md ("Results on a GPU").
#
# The default model (models/SmolLM2-135M-Instruct.Q4_1.gguf, 98 MB) must be
# there already, or its pieces in .device-model/ (joined here; see
# docs/design/cuda-backend.md for getting it onto a device machine that
# cannot reach the network). Without it steps 2's SmolLM2 test and 3 fail.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build-cuda}
results=${OUT:-cuda-results}
mkdir -p "$results"
model=models/SmolLM2-135M-Instruct.Q4_1.gguf

if ! nvidia-smi -L; then
  echo "test_cuda.sh: no NVIDIA GPU visible (nvidia-smi failed); nothing to test here" >&2
  exit 1
fi
if [ ! -f "$model" ] && compgen -G ".device-model/*" >/dev/null; then
  mkdir -p models
  cat .device-model/* >"$model"
fi
if [ ! -f "$model" ]; then
  echo "test_cuda.sh: $model is missing (scripts/fetch_model.sh, or .device-model/ pieces)" >&2
  exit 1
fi

cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DOMNIBUS_WERROR=ON -DOMNIBUS_CUDA=ON >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" --target omnibus cuda_backend_test

prompt="The capital of France is"
export OMNIBUS_MODEL="$PWD/$model" OMNIBUS_REQUIRE_MODEL=1 OMNIBUS_CUDA_PROMPT="$prompt"
status=0
"$BUILD_DIR/src/backends/cuda/cuda_backend_test" 2>&1 | tee "$results/tests.log" || status=1
if grep -q "SKIPPED \]" "$results/tests.log"; then
  echo "test_cuda.sh: tests skipped on a GPU machine (see above)" >&2
  status=1
fi

bin="$BUILD_DIR/src/cli/omnibus"
for backend in cpu cuda; do
  "$bin" run -m "$model" -p "$prompt" -n 32 --temp 0 --backend "$backend" >"$results/$backend.txt" \
    2>"$results/$backend-stats.txt" || { cat "$results/$backend-stats.txt" >&2; status=1; }
  echo "--- $backend: $(tail -1 "$results/$backend-stats.txt")"
  cat "$results/$backend.txt"
  echo
done
if cmp -s "$results/cpu.txt" "$results/cuda.txt"; then
  echo "test_cuda.sh: 32 greedy tokens identical on cpu and cuda"
else
  # The first byte where they part: allowed after a near tie (below).
  at=$(cmp "$results/cpu.txt" "$results/cuda.txt" 2>/dev/null | grep -o 'byte [0-9]*' || echo "the end of the shorter")
  echo "test_cuda.sh: the greedy texts part at $at (not a failure by itself: see the top-1 check below)"
fi
# The top-1 check of the same prompt (step 2 ran it; a failure there has
# already set the status).
grep -E "^(greedy prompt:|cpu greedy:|cuda top-1 on cpu text:)" "$results/tests.log" || {
  echo "test_cuda.sh: DefaultModelGreedyPromptMatchesTheCpu printed no summary (did it run?)" >&2
  status=1
}
if grep -q "FAILED.*DefaultModelGreedyPromptMatchesTheCpu" "$results/tests.log"; then
  echo "test_cuda.sh: the GPU's top token differed from the CPU's outside a near tie (tests.log)" >&2
fi
exit $status
