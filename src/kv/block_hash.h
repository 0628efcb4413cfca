// The prefix cache's hash chain. A full KV block is named by a hash of its
// own tokens and of its parent block's hash, so block i's hash depends on
// every token before it: two sequences share block i only if they agree on
// all tokens up to the end of that block. The chain starts at a root hash
// made from a salt (model id, LoRA adapter, cache namespace), so caches of
// different models or adapters never match each other.
//
// 64-bit XXH3: a collision would silently reuse the wrong K/V, but at 2^-64
// per pair it is far below the rate of hardware faults for any pool we size.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>

namespace omnibus {

using BlockHash = std::uint64_t;

// The parent of a sequence's first block. Different salts give unrelated
// chains; salt 0 is the default namespace.
BlockHash root_block_hash(std::uint64_t salt = 0);

// Hash of one full block of `tokens`, chained to `parent`.
BlockHash hash_block(BlockHash parent, std::span<const std::int32_t> tokens);

}  // namespace omnibus
