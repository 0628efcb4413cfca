// KvManager: which KV blocks each sequence owns, and the prefix cache over
// them. Pure bookkeeping from token counts and block ids; the K/V tensors
// live elsewhere, in an array indexed by BlockId (see BlockPool).
//
// A sequence's block table maps its token positions to blocks: position p
// lives in block_table[p / block_size] at slot p % block_size. Life of a
// sequence, as the scheduler drives it:
//   add_sequence(id, salt)         once, before anything else
//   match_prefix(id, prompt)       optional, once, before any other tokens:
//                                  takes cached blocks of the prompt's prefix
//   ensure_capacity(id, total)     before each step that writes K/V up to
//                                  `total` tokens; false = no room, nothing
//                                  taken (the scheduler decides whom to preempt)
//   commit_tokens(id, tokens)      after the step: these tokens' K/V are in
//                                  place; full blocks enter the prefix cache
//   free_sequence(id)              finished, cancelled or preempted; its cached
//                                  blocks stay findable until evicted
//
// With prefix caching disabled nothing is hashed, cached or matched.
// Not thread-safe: the engine thread owns it.
//
// Window group (options.window > 0; docs/design/sliding-window-kv.md): a
// model's sliding-window layers keep their K/V in a second pool of blocks,
// and each sequence has a second table over the same positions, its window
// block table. A window layer's row at position p sees p - window + 1 .. p,
// so once the sequence has committed n tokens (its next row is at n or
// later) every window block wholly before n - window + 1 is released: its
// table entry becomes kNoBlock and the block goes back to the window pool
// (keeping its hash, like any freed block). A sequence holds about
// window / block_size + 1 window blocks however long it grows. A cached
// prefix is taken only with the window blocks its next row will read.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "kv/block_hash.h"
#include "kv/block_pool.h"

namespace omnibus {

using SeqId = std::int64_t;

struct KvManagerOptions {
  std::int32_t num_blocks = 0;
  std::int32_t block_size = 16;  // tokens per block
  bool enable_prefix_caching = true;
  // Window group: positions a window layer's row sees (its own included)
  // and the window pool's blocks; both 0 (no group) or both > 0.
  std::int32_t window = 0;
  std::int32_t window_blocks = 0;
};

struct KvStats {
  std::int32_t blocks_total = 0;
  std::int32_t blocks_used = 0;    // referenced by some sequence
  std::int32_t blocks_free = 0;    // allocatable (includes cached free blocks)
  std::int32_t blocks_cached = 0;  // holding a prefix hash, used or free
  std::int64_t prefix_queried_tokens = 0;  // prompt tokens offered to match_prefix
  std::int64_t prefix_hit_tokens = 0;      // of those, served from the cache
  // The window group's pool, as above (0 without one).
  std::int32_t window_blocks_total = 0;
  std::int32_t window_blocks_used = 0;
  std::int32_t window_blocks_cached = 0;
};

class KvManager {
 public:
  // Invalid options (num_blocks or block_size < 1) are an error, since
  // they come from flags.
  static Result<KvManager> create(const KvManagerOptions& options);

  // Registers a sequence. `cache_salt` separates prefix-cache namespaces
  // (model, LoRA adapter, tenant): sequences only share blocks if their
  // salts match. Error if the id is already live.
  Status add_sequence(SeqId seq, std::uint64_t cache_salt = 0);
  bool has_sequence(SeqId seq) const { return seqs_.count(seq) != 0; }

  // Takes the longest chain of cached full blocks that matches the start of
  // `prompt` (adding a reference to each) and records those tokens as
  // computed. Returns the number of cached tokens: a multiple of block_size,
  // always < prompt.size() so the last prompt token is still computed (its
  // logits are needed). Returns 0, doing nothing, if caching is off, the
  // sequence is unknown, or it already has blocks. `count`: add the lookup
  // to the prefix-cache statistics (false for lookups that serve no
  // request: the KV handover's).
  std::int64_t match_prefix(SeqId seq, std::span<const std::int32_t> prompt, bool count = true);

  // Blocks ensure_capacity would have to allocate for `new_total_tokens`
  // (of the main pool; a sequence's window blocks are bounded by the
  // window, and the window pool is sized for every running sequence's).
  std::int64_t blocks_needed(SeqId seq, std::int64_t new_total_tokens) const;

  // Makes room for the sequence to hold `new_total_tokens` tokens in all.
  // Returns false, allocating nothing, if the pools cannot supply the
  // blocks or the sequence is unknown. Window blocks are taken from
  // position `window_from` on; the default (-1) is the first position the
  // sequence's next row sees. A caller that writes K/V no window row of
  // its own reads (the KV import) passes a later one.
  bool ensure_capacity(SeqId seq, std::int64_t new_total_tokens, std::int64_t window_from = -1);

  // Records that these tokens' K/V were written, at positions num_tokens()
  // onward. Each block this fills is registered in the prefix cache (its
  // window block too, where the sequence holds one), then window blocks
  // the window has left are released. Error (recording nothing) if the
  // sequence is unknown or lacks the capacity.
  Status commit_tokens(SeqId seq, std::span<const std::int32_t> tokens);

  // Releases the sequence's blocks (its last block first, so the tail of a
  // prompt is evicted before its more shareable head) and forgets it.
  // Unknown ids are ignored.
  void free_sequence(SeqId seq);

  // Valid until the next non-const call for this sequence. Empty if unknown.
  std::span<const BlockId> block_table(SeqId seq) const;
  // The window group's table: as long as block_table once capacity is
  // ensured, kNoBlock for blocks behind the window (or not taken).
  // Empty without a window group or if unknown.
  std::span<const BlockId> window_block_table(SeqId seq) const;
  // Tokens whose K/V are in place (matched + committed). 0 if unknown.
  std::int64_t num_tokens(SeqId seq) const;

  // Whether a sequence of `tokens` tokens fits in the whole pool at all; if
  // not, it can never run and should be rejected, not queued.
  bool can_ever_fit(std::int64_t tokens) const;

  std::int32_t block_size() const { return block_size_; }
  std::int32_t window() const { return window_; }
  bool prefix_caching_enabled() const { return caching_; }
  std::int32_t num_free_blocks() const { return pool_.num_free(); }
  KvStats stats() const;
  const BlockPool& pool() const { return pool_; }
  const BlockPool& window_pool() const { return window_pool_; }

  // Pool invariants, plus: each block's ref count equals the number of
  // block-table entries naming it, and every sequence's tokens fit in its
  // table. O(total blocks + table entries); for tests and debugging.
  Status check_invariants() const;

 private:
  struct Sequence {
    std::vector<BlockId> blocks;
    std::vector<BlockId> window_blocks;  // kNoBlock where released or not taken
    std::int64_t window_first_live = 0;  // entries before it are all kNoBlock
    std::int64_t num_tokens = 0;
    BlockHash chain_hash = 0;              // hash of the last full block (or root)
    std::vector<std::int32_t> open_block;  // tokens of the unfilled last block
  };

  KvManager(const KvManagerOptions& options);
  std::int64_t blocks_for(std::int64_t tokens) const;
  void close_block(Sequence& s);
  // First position the sequence's next row sees in a window layer.
  std::int64_t next_window_start(const Sequence& s) const;
  void release_behind_window(Sequence& s);
  // The longest prefix of `chain` (hashes of a prompt's first blocks, all
  // in the main pool) whose window blocks the next row would read are all
  // cached, in blocks.
  std::int64_t window_matched_blocks(std::span<const BlockHash> chain) const;

  BlockPool pool_;
  BlockPool window_pool_;
  std::int32_t block_size_;
  std::int32_t window_;
  bool caching_;
  std::unordered_map<SeqId, Sequence> seqs_;
  std::int64_t prefix_queried_tokens_ = 0;
  std::int64_t prefix_hit_tokens_ = 0;
};

}  // namespace omnibus
