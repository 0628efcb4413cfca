#include "kv/block_hash.h"

// Exposes XXH3_state_t so the state can live on the stack (no malloc).
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

namespace omnibus {

namespace {
// Seeds keep root hashes and block hashes in separate domains, so a root
// can never equal the hash of some block (other than by a 2^-64 accident).
constexpr XXH64_hash_t kRootSeed = 0x6f6d6e69627573ULL;   // "omnibus"
constexpr XXH64_hash_t kBlockSeed = 0x6b76626c6f636bULL;  // "kvblock"
}  // namespace

BlockHash root_block_hash(std::uint64_t salt) {
  return XXH3_64bits_withSeed(&salt, sizeof(salt), kRootSeed);
}

BlockHash hash_block(BlockHash parent, std::span<const std::int32_t> tokens) {
  XXH3_state_t state;
  XXH3_64bits_reset_withSeed(&state, kBlockSeed);
  XXH3_64bits_update(&state, &parent, sizeof(parent));
  // Token ids as raw host-order bytes: hashes agree across little-endian
  // hosts, which is all a future prefix-aware router would need.
  XXH3_64bits_update(&state, tokens.data(), tokens.size_bytes());
  return XXH3_64bits_digest(&state);
}

}  // namespace omnibus
