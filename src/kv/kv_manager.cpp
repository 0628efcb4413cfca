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
  return KvManager(options);
}

KvManager::KvManager(const KvManagerOptions& options)
    : pool_(options.num_blocks),
      block_size_(options.block_size),
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
  BlockHash hash = s.chain_hash;
  for (std::int64_t i = 0; i < max_blocks; ++i) {
    hash = hash_block(hash, prompt.subspan(i * block_size_, block_size_));
    const std::optional<BlockId> block = pool_.lookup(hash);
    if (!block) break;
    // No allocation happens inside this loop, so blocks found earlier
    // cannot be evicted before we take them.
    pool_.ref(*block);
    s.blocks.push_back(*block);
    s.chain_hash = hash;
  }
  s.num_tokens = static_cast<std::int64_t>(s.blocks.size()) * block_size_;
  if (count) prefix_hit_tokens_ += s.num_tokens;
  return s.num_tokens;
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

bool KvManager::ensure_capacity(SeqId seq, std::int64_t new_total_tokens) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return false;
  const std::int64_t need = blocks_needed(seq, new_total_tokens);
  if (need == 0) return true;
  if (need > pool_.num_free()) return false;
  std::optional<std::vector<BlockId>> fresh = pool_.allocate(static_cast<std::int32_t>(need));
  if (!fresh) return false;
  std::vector<BlockId>& table = it->second.blocks;
  table.insert(table.end(), fresh->begin(), fresh->end());
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
    return Status::ok();
  }
  for (std::int32_t token : tokens) {
    s.open_block.push_back(token);
    ++s.num_tokens;
    if (static_cast<std::int32_t>(s.open_block.size()) == block_size_) close_block(s);
  }
  return Status::ok();
}

// The sequence's last block just filled: name it in the chain and offer it
// to the prefix cache. The chain advances even if the pool keeps another
// copy as the cached one, so later blocks hash the same as in that copy.
void KvManager::close_block(Sequence& s) {
  const std::int64_t index = s.num_tokens / block_size_ - 1;
  s.chain_hash = hash_block(s.chain_hash, s.open_block);
  pool_.cache_full_block(s.blocks[index], s.chain_hash);
  s.open_block.clear();
}

void KvManager::free_sequence(SeqId seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  std::vector<BlockId>& table = it->second.blocks;
  std::reverse(table.begin(), table.end());
  pool_.free(table);
  seqs_.erase(it);
}

std::span<const BlockId> KvManager::block_table(SeqId seq) const {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return {};
  return it->second.blocks;
}

std::int64_t KvManager::num_tokens(SeqId seq) const {
  auto it = seqs_.find(seq);
  return it == seqs_.end() ? 0 : it->second.num_tokens;
}

bool KvManager::can_ever_fit(std::int64_t tokens) const {
  return blocks_for(tokens) <= pool_.num_total();
}

KvStats KvManager::stats() const {
  KvStats st;
  st.blocks_total = pool_.num_total();
  st.blocks_used = pool_.num_used();
  st.blocks_free = pool_.num_free();
  st.blocks_cached = pool_.num_cached();
  st.prefix_queried_tokens = prefix_queried_tokens_;
  st.prefix_hit_tokens = prefix_hit_tokens_;
  return st;
}

Status KvManager::check_invariants() const {
  OMNIBUS_RETURN_IF_ERROR(pool_.check_invariants());
  std::vector<std::int32_t> refs(pool_.num_total(), 0);
  for (const auto& [id, s] : seqs_) {
    const std::string name = "sequence " + std::to_string(id);
    for (BlockId b : s.blocks) {
      if (!pool_.is_valid(b))
        return Status::internal(name + " holds bad block " + std::to_string(b));
      ++refs[b];
    }
    if (s.num_tokens > static_cast<std::int64_t>(s.blocks.size()) * block_size_)
      return Status::internal(name + " has more tokens than room");
    if (caching_ && static_cast<std::int64_t>(s.open_block.size()) != s.num_tokens % block_size_)
      return Status::internal(name + " open block size disagrees with its token count");
  }
  for (BlockId b = 0; b < pool_.num_total(); ++b) {
    if (refs[b] != pool_.ref_count(b))
      return Status::internal("block " + std::to_string(b) + " has ref count " +
                              std::to_string(pool_.ref_count(b)) + " but " +
                              std::to_string(refs[b]) + " table entries");
  }
  return Status::ok();
}

}  // namespace omnibus
