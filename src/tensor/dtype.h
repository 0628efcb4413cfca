// Element types of tensors, with ggml's numeric ids (they are what GGUF files
// store). Quantized types pack `block_size` elements into `block_bytes`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace omnibus {

enum class DType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ4_NL = 20,
  kIQ4_XS = 23,
  kBF16 = 30,
  kMXFP4 = 39,
};

struct DTypeInfo {
  uint32_t id;
  const char* name;     // ggml's name: "f32", "q4_K", ...
  int64_t block_size;   // elements per block (1 for plain floats)
  int64_t block_bytes;  // bytes per block
  bool computable;      // we have dequantize and dot kernels for it
};

// Info for a ggml type id, or nullptr when the id is unknown. Knows the sizes
// of every ggml type (so files holding types we cannot compute still parse);
// `computable` says whether the kernels support it.
const DTypeInfo* dtype_info(uint32_t id);
inline const DTypeInfo* dtype_info(DType t) { return dtype_info(static_cast<uint32_t>(t)); }
std::string dtype_name(DType t);

// Bytes taken by `elements` values of type t, overflow-checked; an error when
// `elements` is not a multiple of the block size or the type is unknown.
Result<uint64_t> dtype_bytes(DType t, int64_t elements);

}  // namespace omnibus
