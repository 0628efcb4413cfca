#include "kv/kv_manager.h"

#include <algorithm>
#include <string>

namespace omnibus {

Result<KvManager> KvManager::create(const KvManagerOptions& options) {
  if (options.num_blocks < 1)
    return Status::invalid_argument("KV cache needs at least one block, got " +
                                    std::to_string(options.num_blocks));
  if (options.block_size < 1)
    return Status::invalid_argument("KV block size must be at least 1 token, got " +
                                    std::to_string(options.block_size));
  if (options.window < 0 || options.window_blocks < 0 || (options.window > 0) != (options.window_blocks > 0))
    return Status::invalid_argument("a KV window group needs a window and window blocks, got " +
                                    std::to_string(options.window) + " positions and " +
                                    std::to_string(options.window_blocks) + " blocks");
  return KvManager(options);
}

KvManager::KvManager(const KvManagerOptions& options)
    : pool_(options.num_blocks),
      window_pool_(options.window_blocks),
      block_size_(options.block_size),
      window_(options.window),
      caching_(options.enable_prefix_caching) {}

Status KvManager::add_sequence(SeqId seq, std::uint64_t cache_salt) {
  Sequence s;
  s.chain_hash = root_block_hash(cache_salt);
  if (!seqs_.emplace(seq, std::move(s)).second)
    return Status::invalid_argument("sequence " + std::to_string(seq) +
                                    " is already in the KV cache");
  return Status::ok();
}

std::int64_t KvManager::match_prefix(SeqId seq, std::span<const std::int32_t> prompt, bool count) {
  auto it = seqs_.find(seq);
  if (!caching_ || it == seqs_.end() || !it->second.blocks.empty() || prompt.empty()) return 0;
  Sequence& s = it->second;
  if (count) prefix_queried_tokens_ += static_cast<std::int64_t>(prompt.size());
  // Leave at least the last prompt token to compute.
  const std::int64_t max_blocks = (static_cast<std::int64_t>(prompt.size()) - 1) / block_size_;
  std::vector<BlockHash> chain;
  BlockHash hash = s.chain_hash;
  for (std::int64_t i = 0; i < max_blocks; ++i) {
    hash = hash_block(hash, prompt.subspan(i * block_size_, block_size_));
    if (!pool_.lookup(hash)) break;
    chain.push_back(hash);
  }
  const std::int64_t n = window_ > 0 ? window_matched_blocks(chain) : static_cast<std::int64_t>(chain.size());
  // No allocation happens from here on, so blocks found above cannot be
  // evicted before we take them.
  for (std::int64_t i = 0; i < n; ++i) {
    const BlockId block = *pool_.lookup(chain[i]);
    pool_.ref(block);
    s.blocks.push_back(block);
    s.chain_hash = chain[i];
  }
  s.num_tokens = n * block_size_;
  if (window_ > 0) {
    // The window blocks the next row reads; none before them.
    s.window_first_live = next_window_start(s) / block_size_;
    s.window_blocks.assign(static_cast<std::size_t>(n), kNoBlock);
    for (std::int64_t i = s.window_first_live; i < n; ++i) {
      const BlockId block = *window_pool_.lookup(chain[i]);
      window_pool_.ref(block);
      s.window_blocks[i] = block;
    }
  }
  if (count) prefix_hit_tokens_ += s.num_tokens;
  return s.num_tokens;
}

std::int64_t KvManager::window_matched_blocks(std::span<const BlockHash> chain) const {
  // missing[i]: chain blocks before i without a cached window block.
  std::vector<std::int64_t> missing(chain.size() + 1, 0);
  for (std::size_t i = 0; i < chain.size(); ++i) missing[i + 1] = missing[i] + (window_pool_.lookup(chain[i]) ? 0 : 1);
  for (auto n = static_cast<std::int64_t>(chain.size()); n > 0; --n) {
    const std::int64_t first = std::max<std::int64_t>(0, n * block_size_ - window_ + 1) / block_size_;
    if (missing[n] == missing[first]) return n;
  }
  return 0;
}

std::int64_t KvManager::next_window_start(const Sequence& s) const {
  return std::max<std::int64_t>(0, s.num_tokens - window_ + 1);
}

std::int64_t KvManager::blocks_for(std::int64_t tokens) const {
  return tokens <= 0 ? 0 : (tokens - 1) / block_size_ + 1;
}

std::int64_t KvManager::blocks_needed(SeqId seq, std::int64_t new_total_tokens) const {
  auto it = seqs_.find(seq);
  const std::int64_t have =
      it == seqs_.end() ? 0 : static_cast<std::int64_t>(it->second.blocks.size());
  return std::max<std::int64_t>(0, blocks_for(new_total_tokens) - have);
}

bool KvManager::ensure_capacity(SeqId seq, std::int64_t new_total_tokens, std::int64_t window_from) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return false;
  Sequence& s = it->second;
  const std::int64_t need = blocks_needed(seq, new_total_tokens);
  // Window blocks: every missing entry from the first one a row of the
  // step may read (or the caller's later start) to the new end.
  std::int64_t window_need = 0, window_first = 0;
  const std::int64_t window_end = window_ > 0 ? blocks_for(new_total_tokens) : 0;
  if (window_ > 0) {
    window_first = std::max(next_window_start(s), window_from) / block_size_;
    for (std::int64_t i = window_first; i < window_end; ++i)
      if (i >= static_cast<std::int64_t>(s.window_blocks.size()) || s.window_blocks[i] == kNoBlock) ++window_need;
  }
  if (need == 0 && window_need == 0) return true;
  if (need > pool_.num_free() || window_need > window_pool_.num_free()) return false;
  std::optional<std::vector<BlockId>> fresh = pool_.allocate(static_cast<std::int32_t>(need));
  std::optional<std::vector<BlockId>> fresh_window = window_pool_.allocate(static_cast<std::int32_t>(window_need));
  if (!fresh || !fresh_window) return false;  // cannot happen: both checked above
  s.blocks.insert(s.blocks.end(), fresh->begin(), fresh->end());
  if (window_end > static_cast<std::int64_t>(s.window_blocks.size()))
    s.window_blocks.resize(static_cast<std::size_t>(window_end), kNoBlock);
  std::size_t taken = 0;
  for (std::int64_t i = window_first; i < window_end; ++i)
    if (s.window_blocks[i] == kNoBlock) s.window_blocks[i] = (*fresh_window)[taken++];
  return true;
}

Status KvManager::commit_tokens(SeqId seq, std::span<const std::int32_t> tokens) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end())
    return Status::not_found("sequence " + std::to_string(seq) + " is not in the KV cache");
  Sequence& s = it->second;
  const std::int64_t new_total = s.num_tokens + static_cast<std::int64_t>(tokens.size());
  const std::int64_t capacity = static_cast<std::int64_t>(s.blocks.size()) * block_size_;
  if (new_total > capacity)
    return Status::out_of_range("sequence " + std::to_string(seq) + " commits up to token " +
                                std::to_string(new_total) + " but has room for " +
                                std::to_string(capacity) + "; call ensure_capacity first");
  if (!caching_) {
    s.num_tokens = new_total;
  } else {
    for (std::int32_t token : tokens) {
      s.open_block.push_back(token);
      ++s.num_tokens;
      if (static_cast<std::int32_t>(s.open_block.size()) == block_size_) close_block(s);
    }
  }
  release_behind_window(s);
  return Status::ok();
}

void KvManager::release_behind_window(Sequence& s) {
  if (window_ == 0) return;
  // Blocks whose last position is before the next row's first visible one.
  const std::int64_t behind =
      std::min<std::int64_t>(next_window_start(s) / block_size_, static_cast<std::int64_t>(s.window_blocks.size()));
  for (std::int64_t i = s.window_first_live; i < behind; ++i) {
    if (s.window_blocks[i] == kNoBlock) continue;
    window_pool_.free(std::span(&s.window_blocks[i], 1));
    s.window_blocks[i] = kNoBlock;
  }
  s.window_first_live = std::max(s.window_first_live, behind);
}

// The sequence's last block just filled: name it in the chain and offer it
// to the prefix cache. The chain advances even if the pool keeps another
// copy as the cached one, so later blocks hash the same as in that copy.
void KvManager::close_block(Sequence& s) {
  const std::int64_t index = s.num_tokens / block_size_ - 1;
  s.chain_hash = hash_block(s.chain_hash, s.open_block);
  pool_.cache_full_block(s.blocks[index], s.chain_hash);
  if (index < static_cast<std::int64_t>(s.window_blocks.size()) && s.window_blocks[index] != kNoBlock)
    window_pool_.cache_full_block(s.window_blocks[index], s.chain_hash);
  s.open_block.clear();
}

void KvManager::free_sequence(SeqId seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  std::vector<BlockId>& table = it->second.blocks;
  std::reverse(table.begin(), table.end());
  pool_.free(table);
  std::vector<BlockId> window;
  for (auto b = it->second.window_blocks.rbegin(); b != it->second.window_blocks.rend(); ++b)
    if (*b != kNoBlock) window.push_back(*b);
  window_pool_.free(window);
  seqs_.erase(it);
}

std::span<const BlockId> KvManager::block_table(SeqId seq) const {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return {};
  return it->second.blocks;
}

std::span<const BlockId> KvManager::window_block_table(SeqId seq) const {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return {};
  return it->second.window_blocks;
}

std::int64_t KvManager::num_tokens(SeqId seq) const {
  auto it = seqs_.find(seq);
  return it == seqs_.end() ? 0 : it->second.num_tokens;
}

bool KvManager::can_ever_fit(std::int64_t tokens) const {
  // A window layer's rows of one step see at most the window before the
  // step's first row plus the step's own rows; the pool is sized for that
  // (ServingEngine), this only refuses what no pool of the group could hold.
  return blocks_for(tokens) <= pool_.num_total() &&
         (window_ == 0 || std::min(blocks_for(tokens), blocks_for(window_) + 1) <= window_pool_.num_total());
}

KvStats KvManager::stats() const {
  KvStats st;
  st.blocks_total = pool_.num_total();
  st.blocks_used = pool_.num_used();
  st.blocks_free = pool_.num_free();
  st.blocks_cached = pool_.num_cached();
  st.prefix_queried_tokens = prefix_queried_tokens_;
  st.prefix_hit_tokens = prefix_hit_tokens_;
  st.window_blocks_total = window_pool_.num_total();
  st.window_blocks_used = window_pool_.num_used();
  st.window_blocks_cached = window_pool_.num_cached();
  return st;
}

Status KvManager::check_invariants() const {
  OMNIBUS_RETURN_IF_ERROR(pool_.check_invariants());
  OMNIBUS_RETURN_IF_ERROR(window_pool_.check_invariants());
  std::vector<std::int32_t> refs(pool_.num_total(), 0);
  std::vector<std::int32_t> window_refs(window_pool_.num_total(), 0);
  for (const auto& [id, s] : seqs_) {
    const std::string name = "sequence " + std::to_string(id);
    for (BlockId b : s.blocks) {
      if (!pool_.is_valid(b))
        return Status::internal(name + " holds bad block " + std::to_string(b));
      ++refs[b];
    }
    if (s.num_tokens > static_cast<std::int64_t>(s.blocks.size()) * block_size_)
      return Status::internal(name + " has more tokens than room");
    if (window_ == 0 && !s.window_blocks.empty()) return Status::internal(name + " has window blocks but no window");
    for (std::size_t i = 0; i < s.window_blocks.size(); ++i) {
      const BlockId b = s.window_blocks[i];
      if (b == kNoBlock) continue;
      if (!window_pool_.is_valid(b)) return Status::internal(name + " holds bad window block " + std::to_string(b));
      if (static_cast<std::int64_t>(i) < s.window_first_live)
        return Status::internal(name + " holds window block " + std::to_string(i) + " behind its window");
      ++window_refs[b];
    }
    // Every window block the next row reads is held.
    if (window_ > 0)
      for (std::int64_t i = next_window_start(s) / block_size_; i * block_size_ < s.num_tokens; ++i)
        if (i >= static_cast<std::int64_t>(s.window_blocks.size()) || s.window_blocks[i] == kNoBlock)
          return Status::internal(name + " lacks window block " + std::to_string(i) + " its next row reads");
    if (caching_ && static_cast<std::int64_t>(s.open_block.size()) != s.num_tokens % block_size_)
      return Status::internal(name + " open block size disagrees with its token count");
  }
  for (BlockId b = 0; b < pool_.num_total(); ++b) {
    if (refs[b] != pool_.ref_count(b))
      return Status::internal("block " + std::to_string(b) + " has ref count " +
                              std::to_string(pool_.ref_count(b)) + " but " +
                              std::to_string(refs[b]) + " table entries");
  }
  for (BlockId b = 0; b < window_pool_.num_total(); ++b) {
    if (window_refs[b] != window_pool_.ref_count(b))
      return Status::internal("window block " + std::to_string(b) + " has ref count " +
                              std::to_string(window_pool_.ref_count(b)) + " but " + std::to_string(window_refs[b]) +
                              " table entries");
  }
  return Status::ok();
}

}  // namespace omnibus
