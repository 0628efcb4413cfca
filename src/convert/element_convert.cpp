#include "convert/element_convert.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "tensor/quant.h"

namespace omnibus {

DType float_dtype(SafetensorsDType t) {
  switch (t) {
    case SafetensorsDType::kF16: return DType::kF16;
    case SafetensorsDType::kBF16: return DType::kBF16;
    default: return DType::kF32;
  }
}

void convert_elements(std::span<const uint8_t> src, SafetensorsDType from, std::span<uint8_t> dst, DType to,
                      float shift) {
  const DType source_type = float_dtype(from);
  if (source_type == to && shift == 0.0f) {
    std::memcpy(dst.data(), src.data(), src.size());
    return;
  }
  constexpr int64_t kChunk = 1 << 16;
  const size_t in_bytes = safetensors_dtype_bytes(from), out_bytes = float_dtype_bytes(to);
  const int64_t n = static_cast<int64_t>(src.size() / in_bytes);
  std::vector<float> floats(std::min(kChunk, n));  // called a row at a time for expert stacks
  for (int64_t at = 0; at < n; at += kChunk) {
    const int64_t count = std::min(kChunk, n - at);
    dequantize_row_ref(source_type, src.data() + at * in_bytes, floats.data(), count);
    if (shift != 0.0f) {
      for (int64_t i = 0; i < count; ++i) floats[i] += shift;
      if (source_type == DType::kF16) {
        std::vector<uint8_t> rounded(count * in_bytes);
        quantize_row_ref(source_type, floats.data(), rounded.data(), count);
        dequantize_row_ref(source_type, rounded.data(), floats.data(), count);
      }
    }
    quantize_row_ref(to, floats.data(), dst.data() + at * out_bytes, count);
  }
}

}  // namespace omnibus
