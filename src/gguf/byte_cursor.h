// ByteCursor: bounds-checked little-endian reads from an untrusted byte span
// (internal to gguf/). Every read checks the bytes left first, so no read can
// go past the end whatever lengths the data claims. Errors give the byte
// offset where the read started. Not thread-safe; the span must outlive it.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>

#include "base/status.h"

namespace omnibus {

// GGUF (versions 2 and 3 as we accept them) is little-endian; reading by
// memcpy is only right on a little-endian host.
static_assert(std::endian::native == std::endian::little, "gguf reader assumes a little-endian host");

class ByteCursor {
 public:
  explicit ByteCursor(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  uint64_t pos() const { return pos_; }
  uint64_t size() const { return bytes_.size(); }
  uint64_t remaining() const { return bytes_.size() - pos_; }

  // A corrupt-file Status located at `at`: "at byte 24: <message>".
  static Status corrupt_at(uint64_t at, const std::string& message) {
    return Status::corrupt("at byte " + std::to_string(at) + ": " + message);
  }

  template <class T>
  Status read(T* out, const char* what) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (remaining() < sizeof(T)) return past_end(what, sizeof(T));
    std::memcpy(out, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::ok();
  }

  // A GGUF string: uint64 length, then that many bytes (no terminator).
  Status read_string(std::string* out, const char* what) {
    const uint64_t start = pos_;
    uint64_t length = 0;
    OMNIBUS_RETURN_IF_ERROR(read(&length, what));
    if (length > remaining()) {
      const uint64_t left = remaining();
      pos_ = start;
      return corrupt_at(start, std::string(what) + " has length " + std::to_string(length) +
                                   ", past the end of the file (" + std::to_string(left) + " bytes left of " +
                                   std::to_string(size()) + ")");
    }
    out->assign(reinterpret_cast<const char*>(bytes_.data() + pos_), static_cast<size_t>(length));
    pos_ += length;
    return Status::ok();
  }

 private:
  Status past_end(const char* what, size_t needed) const {
    return corrupt_at(pos_, std::string(what) + " needs " + std::to_string(needed) + " bytes but only " +
                                std::to_string(remaining()) + " remain (file size " +
                                std::to_string(size()) + ")");
  }

  std::span<const uint8_t> bytes_;
  uint64_t pos_ = 0;
};

}  // namespace omnibus
