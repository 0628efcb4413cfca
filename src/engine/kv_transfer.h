// The blob a prompt's K/V travels in from one instance to another
// (disaggregated prefill and decode; docs/plan-disaggregation.md).
//
// Layout, little-endian:
//   "OMKV"  u32 version  u64 model fingerprint  char[8] cache type name
//   u32 block size  u32 layers  u32 KV heads  u32 head size
//   u32 window tail  u64 bytes per block  u64 token count (whole blocks)
//   i32 tokens[token count]
//   the blocks' bytes, in token order (KvCache::copy_block_out)
//   u64 FNV-1a of everything before it
// Window tail: 0, or (a sender whose sliding-window layers keep only their
// window, KvCache::window_blocks() > 0) the window: those layers' bytes
// are real only for blocks the last token's window reaches, zeros before.
// A receiver that keeps every layer whole refuses such a blob (it would
// cache the zeros as K/V of earlier prefixes); one with a window group
// takes either kind, keeping only the last window.
// The decoder trusts nothing: every field is checked against what the
// receiving instance expects, sizes before they are used, and a mismatch
// or a damaged blob is an error that names the field.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "kernels/kv_quant.h"

namespace omnibus {

class KvCache;
class Model;
struct ModelConfig;

// What both sides must agree on for the bytes to mean the same K/V.
struct KvTransferShape {
  uint64_t model_fingerprint = 0;
  KvCacheType kv_type = KvCacheType::kF16;
  int32_t block_size = 0;
  int32_t n_layer = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim = 0;
  int64_t block_bytes = 0;
  // This side's window group: the sliding window when window layers keep
  // only it, else 0 (see the layout above).
  int32_t window_tail = 0;
};

// A 64-bit fingerprint of the model's weights: the architecture, every
// tensor's name, type and shape, and the first and last 4 KiB of its data.
// Two files of the same architecture with different weights (a fine-tune,
// another quantization) differ; it is not a cryptographic hash.
uint64_t model_fingerprint(const Model& model);

// This instance's shape for `cache`, holding the K/V of the model of
// `config` (whose fingerprint is `fingerprint`).
KvTransferShape kv_transfer_shape(uint64_t fingerprint, const ModelConfig& config, const KvCache& cache);

// `tokens` (whole blocks of the store's block size) and their blocks' bytes
// (tokens.size() / block_size blocks of shape.block_bytes each).
std::string encode_kv_transfer(const KvTransferShape& shape, std::span<const int32_t> tokens,
                               std::string_view blocks);

struct KvTransferContents {
  std::vector<int32_t> tokens;
  std::string_view blocks;  // into the blob: tokens.size() / block_size blocks
};

// Parses and checks a blob against `expected` (this instance's shape) and
// the vocabulary size. Errors are invalid_argument with a message a client
// can act on.
Result<KvTransferContents> decode_kv_transfer(std::string_view blob, const KvTransferShape& expected,
                                              int32_t vocab_size);

// The token count a blob's header states (0 if it is too short to have
// one); for labelling a blob this instance encoded, not for checking one.
int64_t kv_transfer_token_count(std::string_view blob);

// The trailing checksum of a blob whose other bytes are `body` (the
// fuzzer appends it to random bodies to reach the field checks).
uint64_t kv_transfer_checksum(std::string_view body);

}  // namespace omnibus
