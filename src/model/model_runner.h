// What runs a model for the engine: a batch of token rows, each naming its
// sequence's KV blocks, into logits. The engine (engine/) and the CLI see
// only this and KvCache; a backend (today the CPU's ForwardPass) implements
// it over its own cache type.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/profiler.h"
#include "base/status.h"
#include "model/kv_cache.h"

namespace omnibus {

struct BatchRow {
  int32_t token = 0;
  // The sequence's KV blocks in position order; position p is in block
  // block_table[p / block_size] at offset p % block_size. Must stay valid for
  // the run() call.
  std::span<const int32_t> block_table;
  int32_t pos = 0;  // position in the sequence
  bool want_logits = false;
  // With a window group in the cache (KvCache::window_blocks() > 0): the
  // sliding-window layers' blocks, indexed as block_table, of which only
  // those the row's window sees must name a block (kNoKvBlock elsewhere).
  // Ignored, and may be empty, otherwise.
  std::span<const int32_t> window_block_table = {};
};

// Counters a runner keeps across runs, for tests and stats.
struct RunnerStats {
  // Attention units that computed two rows of different sequences over a
  // shared cached prefix together, one per pair and layer.
  uint64_t shared_prefix_units = 0;
  // Mixture of experts: the tokens each expert took, summed over the layers
  // (empty for a dense model); every (token, layer, chosen expert) once.
  std::vector<uint64_t> expert_tokens;
  // Expert runs: one per (step, layer, expert that at least one row
  // chose), each reading the expert's weights once however many rows
  // chose it. expert_runs / sum(expert_tokens) falls as batches grow.
  uint64_t expert_runs = 0;
};

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;

  // Runs the rows; writes one vocab-sized logits row per row with
  // want_logits, in batch order, to `logits` (host memory). Rows of one
  // sequence come in position order and share one block table. Errors
  // (nothing run) on bad token ids, positions past the runner's context or
  // past a row's block table, block ids outside `kv`, a batch larger than
  // max_batch(), or a cache of another backend or model.
  virtual Status run(std::span<const BatchRow> rows, KvCache& kv, float* logits) = 0;
  virtual int max_batch() const = 0;
  virtual RunnerStats stats() const = 0;
  // Times each op of run() into `profiler` (null: off, the default). The
  // profiler must outlive the runner or be detached with nullptr first.
  virtual void set_profiler(Profiler* profiler) = 0;
  virtual Profiler* profiler() const = 0;

 protected:
  ModelRunner() = default;
  ModelRunner(const ModelRunner&) = delete;
  ModelRunner& operator=(const ModelRunner&) = delete;
};

}  // namespace omnibus
