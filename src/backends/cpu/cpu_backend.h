// The CPU backend: ForwardPass runners over PagedKvStore caches, with one
// kernel table (kernels/kernel_table.h; the process's by default), all
// computing on the one thread pool the backend owns and lends them
// (docs/design/backend-seam.md).
#pragma once

#include <memory>

#include "backends/cpu/weight_repack.h"  // its step in loading a model, for ModelLoadOptions
#include "base/thread_pool.h"
#include "kernels/kernel_table.h"
#include "model/backend.h"

namespace omnibus {

class CpuBackend final : public Backend {
 public:
  // threads >= 1: the pool's size (the calling thread is one of them).
  // table: the kernels every runner computes with (one this CPU runs).
  explicit CpuBackend(int threads, const KernelTable& table = kernels());
  ~CpuBackend() override;

  std::string describe() const override;
  int threads() const override { return threads_; }
  Result<std::unique_ptr<KvCache>> create_kv_cache(const ModelConfig& config, int num_blocks, int block_size,
                                                   KvCacheType type, int window_blocks) override;
  bool window_kv() const override { return true; }
  Result<std::unique_ptr<ModelRunner>> create_runner(std::shared_ptr<const Model> model, int max_batch,
                                                     int64_t max_positions) override;

 private:
  int threads_;
  const KernelTable& kernels_;
  std::unique_ptr<ThreadPool> pool_;  // lent to every runner; outlives them (Backend's contract)
};

}  // namespace omnibus
