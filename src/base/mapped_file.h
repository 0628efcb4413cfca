// A file memory-mapped read-only. The bytes are never copied: views into
// them stay valid as long as the MappedFile lives. Not thread-safe to move,
// safe to read from many threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "base/status.h"

namespace omnibus {

class MappedFile {
 public:
  static Result<std::unique_ptr<MappedFile>> open(const std::string& path);
  // Wraps bytes already in memory (tests, fuzzing). The span must outlive this.
  static std::unique_ptr<MappedFile> from_memory(std::span<const uint8_t> bytes);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Lets the kernel drop this process's resident pages that lie wholly
  // inside `range` (part of bytes()): a copy was made and the original will
  // rarely be read again. Contents are unchanged; a later read faults the
  // page back in from the file. No-op for from_memory() bytes.
  void release_pages(std::span<const uint8_t> range) const;

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool owns_mapping_ = false;
  std::string path_;
};

}  // namespace omnibus
