// Reading GGUF files (versions 2 and 3). The file is memory-mapped read-only
// and never copied: tensor data are spans into the mapping, valid as long as
// the GgufFile lives. Every count, length, offset, dimension and type id is
// checked (overflow-safe) before use; a bad file gives a Status that names the
// problem. Thread-safety: immutable after parse, safe to read from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"
#include "tensor/dtype.h"

namespace omnibus {

enum class GgufType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};
const char* gguf_type_name(GgufType t);
// True when `id` names one of the value types above.
bool gguf_type_known(uint32_t id);

// One metadata value. Integers keep their declared type in `type` but are
// stored widened; arrays hold their elements (which may be arrays).
struct GgufValue {
  GgufType type = GgufType::kUint8;
  GgufType element_type = GgufType::kUint8;  // arrays only
  std::variant<uint64_t, int64_t, double, bool, std::string, std::vector<GgufValue>> value;

  bool is_integer() const;
  bool is_float() const;
  // Converting getters; an error names the actual type (and range issues).
  Result<int64_t> to_int() const;
  Result<uint64_t> to_uint() const;
  Result<double> to_double() const;
  Result<bool> to_bool() const;
  Result<std::string> to_string_value() const;
  const std::vector<GgufValue>* array() const;  // nullptr when not an array
  std::string describe() const;  // short human form for `inspect` ("[string x 49152]")

  // Builders (writers, tests). An integer that does not fit `t` is caught by
  // GgufWriter when it writes the value.
  static GgufValue of_uint(GgufType t, uint64_t v);  // kUint8/16/32/64
  static GgufValue of_int(GgufType t, int64_t v);    // kInt8/16/32/64
  static GgufValue of_float32(float v);
  static GgufValue of_float64(double v);
  static GgufValue of_bool(bool v);
  static GgufValue of_string(std::string v);
  static GgufValue of_array(GgufType element_type, std::vector<GgufValue> elements);

  bool operator==(const GgufValue& other) const;
};

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> dims;  // ggml order: dims[0] is the innermost (row length)
  DType dtype = DType::kF32;
  uint64_t offset = 0;        // from the start of the data section
  uint64_t nbytes = 0;
  std::span<const uint8_t> data;  // into the mapping
  int64_t element_count() const;
};

class GgufFile {
 public:
  static Result<std::unique_ptr<GgufFile>> open(const std::string& path);
  // Parses bytes already mapped (tests, fuzzing).
  static Result<std::unique_ptr<GgufFile>> parse(std::unique_ptr<MappedFile> file);

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  const std::string& path() const { return file_->path(); }
  size_t file_size() const { return file_->size(); }
  // See MappedFile::release_pages.
  void release_pages(std::span<const uint8_t> range) const { file_->release_pages(range); }

  // Metadata in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  const GgufValue* find(std::string_view key) const;

  // Typed lookups; not-found or wrong-type errors name the key.
  Result<std::string> get_string(std::string_view key) const;
  Result<int64_t> get_int(std::string_view key) const;
  Result<double> get_float(std::string_view key) const;
  Result<bool> get_bool(std::string_view key) const;
  Result<std::vector<std::string>> get_string_array(std::string_view key) const;
  Result<std::vector<double>> get_float_array(std::string_view key) const;
  Result<std::vector<int64_t>> get_int_array(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;

 private:
  GgufFile() = default;
  friend class GgufParser;
  std::unique_ptr<MappedFile> file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::unordered_map<std::string, size_t> metadata_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace omnibus
