// A model's weights in device memory, uploaded once when a runner is made:
// every matrix in GGUF's row layout (a matrix the CPU loader interleaved is
// gathered back into rows on the way), the norm and bias vectors as f32. A
// tied output projection shares the embedding's copy. Immutable after
// upload; owned by one runner.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/device_buffer.h"
#include "model/model.h"

namespace omnibus {

struct CudaLayerWeights {
  const float* attn_norm = nullptr;
  cuda::DeviceMatrix wq, wk, wv, wo;
  const float* bq = nullptr;  // null unless the architecture has them, as LayerWeights
  const float* bk = nullptr;
  const float* bv = nullptr;
  const float* ffn_norm = nullptr;
  cuda::DeviceMatrix w_gate, w_up, w_down;
  const float* q_norm = nullptr;
  const float* k_norm = nullptr;
  const float* post_attn_norm = nullptr;
  const float* post_ffn_norm = nullptr;
};

class CudaWeights {
 public:
  // The weight types every matrix of `model` has that the kernels lack, as
  // "blk.0.attn_q: q2_K"-style names; empty when all are supported.
  static std::string unsupported_matrices(const Model& model);
  static Result<std::unique_ptr<CudaWeights>> upload(const Model& model);

  cuda::DeviceMatrix token_embd, output;
  const float* output_norm = nullptr;
  std::vector<CudaLayerWeights> layers;
  uint64_t bytes() const { return bytes_; }

 private:
  CudaWeights() = default;
  Result<cuda::DeviceMatrix> matrix(const WeightMatrix& w, const std::string& name);
  Result<const float*> vector(const float* v, int64_t n, const std::string& name);
  std::vector<cuda::DeviceBuffer> buffers_;
  std::vector<std::pair<const void*, cuda::DeviceMatrix>> uploaded_;  // host data -> copy (tied output)
  uint64_t bytes_ = 0;
};

}  // namespace omnibus
