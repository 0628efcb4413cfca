// A backend: what the CLI builds once and the engine asks for KV caches
// and model runners. The engine and the CLI's commands see only this,
// ModelRunner and KvCache; each backend (today the CPU's, cpu_backend.h)
// makes runners that take only its own caches. A backend must outlive
// everything it created.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "model/model_runner.h"

namespace omnibus {

class Backend {
 public:
  virtual ~Backend() = default;

  // What runs, for logs: "cpu (avx2 kernels, 2 threads)".
  virtual std::string describe() const = 0;
  // Threads the runners it makes compute with.
  virtual int threads() const = 0;

  // A cache of num_blocks blocks of block_size positions for `config`;
  // with window_blocks > 0 (only where window_kv() says so), the
  // sliding-window layers' K/V in a group of that many blocks of their own
  // (KvCache::window_blocks()).
  virtual Result<std::unique_ptr<KvCache>> create_kv_cache(const ModelConfig& config, int num_blocks, int block_size,
                                                           KvCacheType type, int window_blocks) = 0;
  // Whether its runners read window layers through a window group, so a
  // window model's cache can hold only what the windows still see.
  virtual bool window_kv() const = 0;
  // A runner of up to max_batch rows a step, positions below max_positions.
  virtual Result<std::unique_ptr<ModelRunner>> create_runner(std::shared_ptr<const Model> model, int max_batch,
                                                             int64_t max_positions) = 0;

 protected:
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;
};

}  // namespace omnibus
