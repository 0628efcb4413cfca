// The CUDA backend: CudaModelRunner runners over CudaKvCache caches on one
// GPU (docs/design/cuda-backend.md). The only header of this folder the CLI
// includes; it names no CUDA type, so code that includes it builds with the
// host compiler alone. Built only with -DOMNIBUS_CUDA=ON.
#pragma once

#include <memory>
#include <string>

#include "model/backend.h"

namespace omnibus {

class CudaBackend final : public Backend {
 public:
  // The backend on GPU `device`; an error saying why when there is no
  // usable CUDA device ("no CUDA device: ...").
  static Result<std::unique_ptr<CudaBackend>> create(int device = 0);
  // Whether a CUDA device is present, and if not why not (tests skip on it).
  static Status device_available();

  std::string describe() const override { return description_; }
  // The host threads runners use: one (the calling thread drives the GPU).
  int threads() const override { return 1; }
  Result<std::unique_ptr<KvCache>> create_kv_cache(const ModelConfig& config, int num_blocks, int block_size,
                                                   KvCacheType type, int window_blocks) override;
  // Not yet: its attention reads every layer through one block table.
  bool window_kv() const override { return false; }
  Result<std::unique_ptr<ModelRunner>> create_runner(std::shared_ptr<const Model> model, int max_batch,
                                                     int64_t max_positions) override;

 private:
  CudaBackend(int device, std::string description) : device_(device), description_(std::move(description)) {}
  Status use_device() const;
  int device_;
  std::string description_;
};

}  // namespace omnibus
