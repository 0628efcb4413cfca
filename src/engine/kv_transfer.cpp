#include "engine/kv_transfer.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "model/kv_cache.h"
#include "model/model.h"

namespace omnibus {
namespace {

constexpr char kMagic[4] = {'O', 'M', 'K', 'V'};
constexpr uint32_t kVersion = 2;  // 2: the window tail
constexpr size_t kTypeNameBytes = 8;
// magic, version, fingerprint, type name, four u32 shapes, block bytes,
// token count.
constexpr size_t kHeaderBytes = 4 + 4 + 8 + kTypeNameBytes + 5 * 4 + 8 + 8;
constexpr size_t kChecksumBytes = 8;

class Fnv1a {
 public:
  void add(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ p[i]) * 0x100000001b3ull;
  }
  template <class T>
  void add_value(T v) {
    add(&v, sizeof v);
  }
  void add_string(std::string_view s) {
    add_value<uint64_t>(s.size());
    add(s.data(), s.size());
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

template <class T>
void put(std::string& out, T v) {
  // The project targets little-endian x86-64; the bytes are the value's.
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// Reads the header's fixed-size fields in order. The caller has checked
// that the blob holds the whole header (kHeaderBytes).
class HeaderReader {
 public:
  explicit HeaderReader(std::string_view data) : data_(data) {}
  template <class T>
  void get(T* v) {
    std::memcpy(v, data_.data() + at_, sizeof(T));
    at_ += sizeof(T);
  }
  size_t at() const { return at_; }

 private:
  std::string_view data_;
  size_t at_ = 0;
};

Status mismatch(const char* field, const std::string& got, const std::string& want) {
  return Status::invalid_argument(fmt::format("the KV blob's {} is {}, this server's is {}", field, got, want));
}

}  // namespace

int64_t kv_transfer_token_count(std::string_view blob) {
  uint64_t n = 0;
  if (blob.size() < kHeaderBytes) return 0;
  std::memcpy(&n, blob.data() + kHeaderBytes - sizeof n, sizeof n);
  return static_cast<int64_t>(n);
}

uint64_t kv_transfer_checksum(std::string_view body) {
  // FNV-1a's step on 8-byte words in four interleaved lanes (four
  // independent multiply chains), then the lanes, the tail bytes and the
  // length through FNV-1a itself: about 8 bytes a cycle where byte-wise
  // FNV-1a does one, which took ~30 ms of a 33 MB import. Each step is a
  // bijection of the lane, so any one changed word changes its lane.
  constexpr uint64_t kPrime = 0x100000001b3ull;
  uint64_t lanes[4] = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull, 0x9ce484222325cbf2ull, 0x2325cbf29ce48422ull};
  const char* p = body.data();
  size_t i = 0;
  for (; i + 32 <= body.size(); i += 32) {
    for (int l = 0; l < 4; ++l) {
      uint64_t word;
      std::memcpy(&word, p + i + 8 * l, sizeof word);
      lanes[l] = (lanes[l] ^ word) * kPrime;
    }
  }
  Fnv1a h;
  for (uint64_t lane : lanes) h.add_value(lane);
  h.add(p + i, body.size() - i);
  h.add_value(static_cast<uint64_t>(body.size()));
  return h.value();
}

uint64_t model_fingerprint(const Model& model) {
  constexpr size_t kSample = 4096;
  Fnv1a h;
  h.add_string(model.config().architecture);
  for (const GgufTensorInfo& t : model.gguf().tensors()) {
    h.add_string(t.name);
    h.add_value(static_cast<int64_t>(t.dtype));
    for (int64_t d : t.dims) h.add_value(d);
    h.add_value(t.nbytes);
    const size_t n = std::min(kSample, t.data.size());
    h.add(t.data.data(), n);
    h.add(t.data.data() + t.data.size() - n, n);
  }
  return h.value();
}

KvTransferShape kv_transfer_shape(uint64_t fingerprint, const ModelConfig& config, const KvCache& cache) {
  KvTransferShape s;
  s.model_fingerprint = fingerprint;
  s.kv_type = cache.type();
  s.block_size = cache.block_size();
  s.n_layer = config.n_layer;
  s.n_head_kv = config.n_head_kv;
  s.head_dim = config.head_dim;
  s.block_bytes = cache.block_transfer_bytes();
  s.window_tail = cache.window_blocks() > 0 ? config.sliding_window : 0;
  return s;
}

std::string encode_kv_transfer(const KvTransferShape& shape, std::span<const int32_t> tokens,
                               std::string_view blocks) {
  std::string out;
  out.reserve(kHeaderBytes + tokens.size() * sizeof(int32_t) + blocks.size() + kChecksumBytes);
  out.append(kMagic, sizeof kMagic);
  put<uint32_t>(out, kVersion);
  put<uint64_t>(out, shape.model_fingerprint);
  char name[kTypeNameBytes] = {};
  std::strncpy(name, kv_cache_type_name(shape.kv_type), kTypeNameBytes - 1);
  out.append(name, kTypeNameBytes);
  put<uint32_t>(out, static_cast<uint32_t>(shape.block_size));
  put<uint32_t>(out, static_cast<uint32_t>(shape.n_layer));
  put<uint32_t>(out, static_cast<uint32_t>(shape.n_head_kv));
  put<uint32_t>(out, static_cast<uint32_t>(shape.head_dim));
  put<uint32_t>(out, static_cast<uint32_t>(shape.window_tail));
  put<uint64_t>(out, static_cast<uint64_t>(shape.block_bytes));
  put<uint64_t>(out, tokens.size());
  out.append(reinterpret_cast<const char*>(tokens.data()), tokens.size() * sizeof(int32_t));
  out.append(blocks);
  put<uint64_t>(out, kv_transfer_checksum(out));
  return out;
}

Result<KvTransferContents> decode_kv_transfer(std::string_view blob, const KvTransferShape& expected,
                                              int32_t vocab_size) {
  if (blob.size() < kHeaderBytes + kChecksumBytes)
    return Status::invalid_argument(
        fmt::format("the KV blob is {} bytes, shorter than its header ({} bytes)", blob.size(), kHeaderBytes));
  if (std::memcmp(blob.data(), kMagic, sizeof kMagic) != 0)
    return Status::invalid_argument("the body is not a KV blob (it does not start with \"OMKV\")");
  // The checksum first: a damaged blob says so instead of failing on
  // whichever field the damage hit.
  const std::string_view body = blob.substr(0, blob.size() - kChecksumBytes);
  uint64_t stored = 0;
  std::memcpy(&stored, blob.data() + body.size(), sizeof stored);
  if (kv_transfer_checksum(body) != stored)
    return Status::invalid_argument("the KV blob's checksum does not match its contents (truncated or damaged)");

  HeaderReader r(body);
  char magic[4];
  uint32_t version = 0, block_size = 0, n_layer = 0, n_head_kv = 0, head_dim = 0, window_tail = 0;
  uint64_t fingerprint = 0, block_bytes = 0, n_tokens = 0;
  char name[kTypeNameBytes];
  r.get(&magic);
  r.get(&version);
  r.get(&fingerprint);
  r.get(&name);
  r.get(&block_size);
  r.get(&n_layer);
  r.get(&n_head_kv);
  r.get(&head_dim);
  r.get(&window_tail);
  r.get(&block_bytes);
  r.get(&n_tokens);
  if (version != kVersion) return mismatch("format version", std::to_string(version), std::to_string(kVersion));
  if (fingerprint != expected.model_fingerprint)
    return Status::invalid_argument(fmt::format(
        "the KV blob comes from another model (fingerprint {:016x}, this server's model is {:016x})", fingerprint,
        expected.model_fingerprint));
  name[kTypeNameBytes - 1] = '\0';
  KvCacheType type;
  if (!parse_kv_cache_type(name, &type))
    return Status::invalid_argument("the KV blob names an unknown cache type");
  if (type != expected.kv_type) return mismatch("cache type (--kv-type)", name, kv_cache_type_name(expected.kv_type));
  if (block_size != static_cast<uint32_t>(expected.block_size))
    return mismatch("block size (--kv-block-size)", std::to_string(block_size), std::to_string(expected.block_size));
  if (n_layer != static_cast<uint32_t>(expected.n_layer) || n_head_kv != static_cast<uint32_t>(expected.n_head_kv) ||
      head_dim != static_cast<uint32_t>(expected.head_dim))
    return mismatch("shape (layers, KV heads, head size)", fmt::format("{}, {}, {}", n_layer, n_head_kv, head_dim),
                    fmt::format("{}, {}, {}", expected.n_layer, expected.n_head_kv, expected.head_dim));
  if (window_tail != 0 && expected.window_tail == 0)
    return Status::invalid_argument(fmt::format(
        "the KV blob holds the sliding-window layers' last {} positions only (its sender keeps only the window); "
        "this server keeps every layer whole (--no-window-kv or a backend without window KV) and cannot take it",
        window_tail));
  if (window_tail != 0 && window_tail != static_cast<uint32_t>(expected.window_tail))
    return mismatch("sliding window", std::to_string(window_tail), std::to_string(expected.window_tail));
  if (block_bytes != static_cast<uint64_t>(expected.block_bytes))
    return mismatch("bytes per block", std::to_string(block_bytes), std::to_string(expected.block_bytes));
  if (n_tokens == 0 || n_tokens % block_size != 0)
    return Status::invalid_argument(
        fmt::format("the KV blob holds {} tokens, not a positive whole number of {}-token blocks", n_tokens, block_size));
  // Sizes in 64 bits with the token count bounded first: no overflow.
  const uint64_t left = body.size() - r.at();
  if (n_tokens > left / sizeof(int32_t))
    return Status::invalid_argument(fmt::format("the KV blob says {} tokens but is too short to hold them", n_tokens));
  const uint64_t n_blocks = n_tokens / block_size;
  const uint64_t payload = left - n_tokens * sizeof(int32_t);
  if (payload / block_bytes != n_blocks || payload % block_bytes != 0)
    return Status::invalid_argument(fmt::format("the KV blob holds {} bytes of blocks; {} blocks of {} bytes expected",
                                                payload, n_blocks, block_bytes));
  KvTransferContents out;
  out.tokens.resize(n_tokens);
  std::memcpy(out.tokens.data(), body.data() + r.at(), n_tokens * sizeof(int32_t));
  for (size_t i = 0; i < out.tokens.size(); ++i)
    if (out.tokens[i] < 0 || out.tokens[i] >= vocab_size)
      return Status::invalid_argument(
          fmt::format("the KV blob's token {} ({}) is outside the vocabulary [0, {})", i, out.tokens[i], vocab_size));
  out.blocks = body.substr(r.at() + n_tokens * sizeof(int32_t));
  return out;
}

}  // namespace omnibus
