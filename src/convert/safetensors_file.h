// One .safetensors file, memory-mapped: an 8-byte little-endian header
// length, a JSON header {name: {"dtype", "shape", "data_offsets": [begin,
// end]}, "__metadata__": {...}}, then the tensors' bytes (offsets relative
// to the end of the header). Every entry is checked before it is handed
// out: a known dtype, a shape whose element count times the element size is
// its byte range, ranges inside the file that do not overlap. Hostile files
// get an error, never a crash (fuzzed: tests/fuzz/safetensors_fuzz.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"

namespace omnibus {

// The element types Hugging Face checkpoints of the architectures we
// convert hold: floats, and bytes (gpt-oss's MXFP4 blocks and scales); the
// other integer and the fp8 ones are refused by name.
enum class SafetensorsDType { kF32, kF16, kBF16, kU8 };

const char* safetensors_dtype_name(SafetensorsDType t);
// "[2, 64, 1, 16]": a shape (or ggml dims) for messages.
std::string shape_text(const std::vector<int64_t>& shape);
int safetensors_dtype_bytes(SafetensorsDType t);

struct SafetensorsTensor {
  std::string name;
  SafetensorsDType dtype;
  std::vector<int64_t> shape;  // outermost first, as PyTorch's
  std::span<const uint8_t> bytes;

  int64_t elements() const;
};

class SafetensorsFile {
 public:
  static Result<std::unique_ptr<SafetensorsFile>> open(const std::string& path);
  // Parses bytes already in memory (tests, fuzzing); they must outlive the result.
  static Result<std::unique_ptr<SafetensorsFile>> parse(std::span<const uint8_t> bytes);

  // In the order of their data offsets.
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const std::string& path() const { return file_->path(); }

 private:
  static Result<std::unique_ptr<SafetensorsFile>> from_mapping(std::unique_ptr<MappedFile> file);
  std::unique_ptr<MappedFile> file_;
  std::vector<SafetensorsTensor> tensors_;
};

}  // namespace omnibus
