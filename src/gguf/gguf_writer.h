// Writing GGUF files (version 3 by default). Tests use it to make tiny
// models; tools use it to convert. Metadata is written in insertion order
// (setting a key again replaces its value in place), then general.alignment
// when it is not the default 32, then the tensor infos, then each tensor's
// data padded to the alignment (a file without tensors is not padded). Not
// thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"

namespace omnibus {

class GgufWriter {
 public:
  explicit GgufWriter(uint32_t version = 3, uint64_t alignment = 32);

  void set(const std::string& key, GgufValue value);
  void set_string(const std::string& key, const std::string& v);
  void set_uint32(const std::string& key, uint32_t v);
  void set_int32(const std::string& key, int32_t v);
  void set_uint64(const std::string& key, uint64_t v);
  void set_float32(const std::string& key, float v);
  void set_bool(const std::string& key, bool v);
  void set_string_array(const std::string& key, const std::vector<std::string>& v);
  void set_float32_array(const std::string& key, const std::vector<float>& v);
  void set_int32_array(const std::string& key, const std::vector<int32_t>& v);

  // dims in ggml order (dims[0] innermost). `data` must hold exactly the
  // bytes the dtype and dims call for.
  Status add_tensor(const std::string& name, const std::vector<int64_t>& dims, DType dtype,
                    std::span<const uint8_t> data);
  // A tensor whose bytes are made when the file is written: `fill` gets a
  // buffer of exactly the bytes the dtype and dims call for. write() holds
  // one such tensor in memory at a time, so a converter can stream a model
  // larger than the memory it has. An error from `fill` fails the write.
  using TensorFill = std::function<Status(std::span<uint8_t> out)>;
  Status add_tensor_filled(const std::string& name, const std::vector<int64_t>& dims, DType dtype, TensorFill fill);

  // The whole file. Invalid input (a bad version or alignment, a value whose
  // payload does not match its type, general.alignment set to something else
  // than the writer's alignment) is reported here and by write(); to_bytes()
  // returns an empty vector in that case.
  Result<std::vector<uint8_t>> build() const;
  std::vector<uint8_t> to_bytes() const;
  Status write(const std::string& path) const;

 private:
  struct PendingTensor {
    std::string name;
    std::vector<int64_t> dims;
    DType dtype;
    uint64_t nbytes;
    std::vector<uint8_t> data;  // empty when `fill` makes the bytes
    TensorFill fill;
  };
  // The checked size of a new tensor.
  Result<uint64_t> check_tensor(const std::string& name, const std::vector<int64_t>& dims, DType dtype) const;
  // Everything before the first tensor's bytes, padded to the alignment.
  Result<std::vector<uint8_t>> header() const;
  // Each tensor's bytes and padding, in order, to `out`.
  Status for_each_tensor_bytes(const std::function<Status(std::span<const uint8_t>)>& out) const;
  uint32_t version_;
  uint64_t alignment_;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace omnibus
