#include "backends/cpu/cpu_backend.h"

#include <algorithm>

#include "backends/cpu/forward.h"
#include "backends/cpu/paged_kv_store.h"
#include "kernels/kernel_table.h"

namespace omnibus {

CpuBackend::CpuBackend(int threads, const KernelTable& table)
    : threads_(std::max(1, threads)), kernels_(table), pool_(std::make_unique<ThreadPool>(threads_)) {}

CpuBackend::~CpuBackend() = default;

std::string CpuBackend::describe() const {
  return std::string("cpu (") + kernels_.name + " kernels, " + std::to_string(threads_) +
         (threads_ == 1 ? " thread)" : " threads)");
}

Result<std::unique_ptr<KvCache>> CpuBackend::create_kv_cache(const ModelConfig& config, int num_blocks, int block_size,
                                                             KvCacheType type, int window_blocks) {
  OMNIBUS_ASSIGN_OR_RETURN(PagedKvStore store,
                           PagedKvStore::create(config, num_blocks, block_size, type, window_blocks));
  return std::unique_ptr<KvCache>(std::make_unique<PagedKvStore>(std::move(store)));
}

Result<std::unique_ptr<ModelRunner>> CpuBackend::create_runner(std::shared_ptr<const Model> model, int max_batch,
                                                               int64_t max_positions) {
  if (model == nullptr) return Status::invalid_argument("no model");
  if (max_batch < 1) return Status::invalid_argument("max batch must be >= 1");
  if (max_positions < 1) return Status::invalid_argument("max positions must be >= 1");
  return std::unique_ptr<ModelRunner>(
      std::make_unique<ForwardPass>(std::move(model), *pool_, max_batch, max_positions, kernels_));
}

}  // namespace omnibus
