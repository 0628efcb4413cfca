// The CPU backend: ForwardPass runners over PagedKvStore caches, with the
// process's kernel table (kernels/kernel_table.h). It moves to
// src/backends/cpu/ with the runner (docs/design/backend-seam.md, step 9).
#pragma once

#include "model/backend.h"

namespace omnibus {

class CpuBackend final : public Backend {
 public:
  // threads >= 1: each runner computes with a pool of that many.
  explicit CpuBackend(int threads);

  std::string describe() const override;
  int threads() const override { return threads_; }
  Result<std::unique_ptr<KvCache>> create_kv_cache(const ModelConfig& config, int num_blocks, int block_size,
                                                   KvCacheType type) override;
  Result<std::unique_ptr<ModelRunner>> create_runner(std::shared_ptr<const Model> model, int max_batch,
                                                     int64_t max_positions) override;

 private:
  int threads_;
};

}  // namespace omnibus
