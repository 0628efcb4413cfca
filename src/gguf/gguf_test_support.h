// Test helpers for gguf/ (used only by *_test.cpp): a builder for raw GGUF
// bytes, so tests can write files GgufWriter would refuse to produce, and a
// parse-from-memory shortcut.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/mapped_file.h"
#include "gguf/gguf_file.h"

namespace omnibus::gguf_test {

// Appends little-endian fields, one call per GGUF field.
class RawGguf {
 public:
  template <class T>
  RawGguf& put(T v) {
    const size_t at = bytes.size();
    bytes.resize(at + sizeof(T));
    std::memcpy(bytes.data() + at, &v, sizeof(T));
    return *this;
  }
  RawGguf& u8(uint8_t v) { return put(v); }
  RawGguf& u32(uint32_t v) { return put(v); }
  RawGguf& u64(uint64_t v) { return put(v); }
  RawGguf& str(std::string_view s) {
    u64(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
    return *this;
  }
  RawGguf& header(uint32_t version, uint64_t tensors, uint64_t kvs) {
    bytes.insert(bytes.end(), {'G', 'G', 'U', 'F'});
    return u32(version).u64(tensors).u64(kvs);
  }
  // A key with a scalar uint32 value.
  RawGguf& kv_u32(std::string_view key, uint32_t v) {
    return str(key).u32(static_cast<uint32_t>(GgufType::kUint32)).u32(v);
  }
  RawGguf& kv_string(std::string_view key, std::string_view v) {
    return str(key).u32(static_cast<uint32_t>(GgufType::kString)).str(v);
  }
  // A tensor info: name, dims, ggml type id, offset.
  RawGguf& tensor(std::string_view name, const std::vector<uint64_t>& dims, uint32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) u64(d);
    return u32(type).u64(offset);
  }
  RawGguf& pad_to(size_t alignment) {
    while (bytes.size() % alignment != 0) bytes.push_back(0);
    return *this;
  }
  // `n` bytes of a non-zero pattern starting at `seed`.
  RawGguf& data(size_t n, uint8_t seed = 1) {
    for (size_t i = 0; i < n; ++i) bytes.push_back(static_cast<uint8_t>(seed + 7 * i));
    return *this;
  }

  std::vector<uint8_t> bytes;
};

// Parses `bytes` in place; they must outlive the result.
inline Result<std::unique_ptr<GgufFile>> parse_bytes(const std::vector<uint8_t>& bytes) {
  return GgufFile::parse(MappedFile::from_memory(bytes));
}

}  // namespace omnibus::gguf_test
