// The CUDA backend's ModelRunner: the transformer layers on the GPU over a
// CudaKvCache, each layer's stages taken from its BlockSpec (model/
// block_spec.h), as the CPU's schedules take them. The weights are uploaded
// once at creation (CudaWeights, then a device synchronisation, so no
// step can race the uploads) and the layers' activation buffers are sized
// then for max_batch rows; the logits (wanted rows only), block tables and
// RoPE tables start small and grow when a step needs more. A step moves
// only its token ids, positions and block tables to the device and the
// logits rows back (docs/design/cuda-backend.md). Each run() ends
// synchronised: its logits are in host memory and the cache is settled
// when it returns.
//
// Not bit-identical to the CPU backend (float sums in other orders; the
// device's expf), but the same math: quantized weights multiply int8
// activations of the same bytes as the CPU's. Batch invariance holds: a
// row's result does not depend on the rest of the batch (each output is
// one warp's fixed-order sum). Not thread-safe; one runner per engine
// thread.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kv_cache.h"
#include "backends/cuda/cuda_weights.h"
#include "model/block_spec.h"
#include "model/model.h"
#include "model/model_runner.h"

namespace omnibus {

class CudaModelRunner final : public ModelRunner {
 public:
  // Uploads the weights to the current device. Errors name what this
  // backend does not implement for the model (CudaModelRunner::unsupported).
  static Result<std::unique_ptr<CudaModelRunner>> create(std::shared_ptr<const Model> model, int max_batch,
                                                         int64_t max_positions);
  ~CudaModelRunner() override;

  // What keeps this backend from running `model` (weight types, head size,
  // block stages), in words; empty when it can.
  static std::string unsupported(const Model& model);

  // ModelRunner::run; `kv` must be a CudaKvCache made for this model.
  Status run(std::span<const BatchRow> rows, KvCache& kv, float* logits) override;
  int max_batch() const override { return max_batch_; }
  RunnerStats stats() const override { return {}; }
  // Only the whole forward call is timed (kForward); per-op device times
  // would need events around each kernel.
  void set_profiler(Profiler* profiler) override { profiler_ = profiler; }
  Profiler* profiler() const override { return profiler_; }

  uint64_t weight_bytes() const { return weights_->bytes(); }

 private:
  CudaModelRunner() = default;
  static Result<std::unique_ptr<CudaModelRunner>> create_on_device(std::shared_ptr<const Model> model, int max_batch,
                                                                   int64_t max_positions);
  Status allocate_buffers();
  // RoPE tables covering positions [0, positions) at least (grown
  // geometrically up to max_positions; never shrunk).
  Status ensure_rope_positions(int64_t positions);
  // A logits buffer of `rows` rows at least.
  Status ensure_logits_rows(int rows);
  Status check(std::span<const BatchRow> rows, const CudaKvCache& kv) const;
  // The rows' ids, positions and block tables into meta_ (one copy).
  Status upload_rows(std::span<const BatchRow> rows, int* logits_rows);
  Status forward(std::span<const BatchRow> rows, CudaKvCache& kv, float* logits);
  // Launches one layer's stages; an error names the stage whose launch
  // failed (cudaPeekAtLastError after each).
  Status run_block(int layer, const BlockSpec& block, int n, CudaKvCache& kv);
  // input (n rows of each matrix's cols) times each matrix into its output;
  // the int8 form of input made once per activation block size.
  struct Target {
    const cuda::DeviceMatrix* w;
    float* y;
  };
  void project(std::span<const Target> targets, const float* input, int n);

  std::shared_ptr<const Model> model_;
  std::unique_ptr<CudaWeights> weights_;
  std::vector<BlockSpec> blocks_;
  int device_ = 0;  // the GPU it was made on; run() selects it for its thread
  int max_batch_ = 0;
  int64_t max_positions_ = 0;
  cudaStream_t stream_ = nullptr;
  Profiler* profiler_ = nullptr;

  // Activations, max_batch rows each (floats unless said).
  cuda::DeviceBuffer x_, xn_, q_, k_, v_, attn_, proj_, gate_, up_;
  cuda::DeviceBuffer xq_, xs_;  // the int8 form of a matmul input and its scales
  // The output projection of the rows that want logits, packed: room for
  // logits_rows_ rows of vocab floats (grows on demand, up to max_batch).
  cuda::DeviceBuffer logits_;
  int logits_rows_ = 0;
  // cos and sin of the RoPE angles of positions [0, rope_positions_):
  // [0] the model's, [1] the window layers' (models with sliding windows).
  cuda::DeviceBuffer rope_cos_[2], rope_sin_[2];
  int64_t rope_positions_ = 0;
  // Per step, int32: tokens, positions, table starts, the rows wanting
  // logits (max_batch each), then the block tables; starts with room for
  // short tables and grows when a step's tables do not fit.
  cuda::DeviceBuffer meta_;
  std::vector<int32_t> meta_host_;
};

}  // namespace omnibus
