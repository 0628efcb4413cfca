#include "kernels/weight_interleave.h"

#include <algorithm>
#include <cstring>

#include "base/cpu_features.h"
#include "kernels/matmul_internal.h"
#include "tensor/quant_blocks.h"

namespace omnibus {
namespace {

constexpr int kGroupRows = 8;

// Bytes of d (and m) at the start of each block of the type.
size_t scale_bytes(DType t) { return t == DType::kQ4_1 ? 4 : 2; }

size_t block_bytes(DType t) {
  switch (t) {
    case DType::kQ4_0: return sizeof(BlockQ4_0);
    case DType::kQ4_1: return sizeof(BlockQ4_1);
    case DType::kQ8_0: return sizeof(BlockQ8_0);
    default: return 0;
  }
}

// A row's blocks without any padding between rows.
size_t packed_row_bytes(const WeightMatrix& w) { return static_cast<size_t>(w.cols / kQK) * block_bytes(w.dtype); }

}  // namespace

bool can_interleave8(DType t) {
  if (block_bytes(t) == 0 || !cpu_features().has_avx2_fma()) return false;
  return matmul_detail::act_format(t) == matmul_detail::ActFormat::kQ8x32;
}

size_t interleaved8_bytes(const WeightMatrix& w) {
  const int64_t groups = (w.rows + kGroupRows - 1) / kGroupRows;
  return static_cast<size_t>(groups) * kGroupRows * packed_row_bytes(w);
}

WeightMatrix interleave8(const WeightMatrix& w, uint8_t* out) {
  const size_t bb = block_bytes(w.dtype), sb = scale_bytes(w.dtype), code_bytes = bb - sb;
  const int64_t blocks = w.cols / kQK;
  const int64_t groups = (w.rows + kGroupRows - 1) / kGroupRows;
  std::memset(out, 0, interleaved8_bytes(w));  // padding rows: zero scales and codes
  const auto* src = static_cast<const uint8_t*>(w.data);
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t rows_here = std::min<int64_t>(kGroupRows, w.rows - g * kGroupRows);
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t* dst = out + (g * blocks + b) * kGroupRows * bb;
      uint8_t* dst_codes = dst + kGroupRows * sb;
      for (int64_t r = 0; r < rows_here; ++r) {
        const uint8_t* block = src + (g * kGroupRows + r) * w.row_bytes + b * bb;
        std::memcpy(dst + 2 * r, block, 2);                                      // d
        if (sb == 4) std::memcpy(dst + 2 * kGroupRows + 2 * r, block + 2, 2);  // m
        for (size_t j = 0; j < code_bytes / 4; ++j)
          std::memcpy(dst_codes + 32 * j + 4 * r, block + sb + 4 * j, 4);
      }
    }
  }
  WeightMatrix view = w;
  view.data = out;
  view.row_bytes = packed_row_bytes(w);  // groups are 8 * row_bytes apart
  view.layout = WeightLayout::kInterleaved8;
  return view;
}

void gather_row_blocks(const WeightMatrix& w, int64_t o, uint8_t* out) {
  const auto* src = static_cast<const uint8_t*>(w.data);
  if (w.layout == WeightLayout::kRows) {
    std::memcpy(out, src + static_cast<size_t>(o) * w.row_bytes, w.row_bytes);
    return;
  }
  const size_t bb = block_bytes(w.dtype), sb = scale_bytes(w.dtype), code_bytes = bb - sb;
  const int64_t blocks = w.cols / kQK, g = o / kGroupRows, r = o % kGroupRows;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* group_block = src + (g * blocks + b) * kGroupRows * bb;
    uint8_t* block = out + b * bb;
    std::memcpy(block, group_block + 2 * r, 2);
    if (sb == 4) std::memcpy(block + 2, group_block + 2 * kGroupRows + 2 * r, 2);
    for (size_t j = 0; j < code_bytes / 4; ++j)
      std::memcpy(block + sb + 4 * j, group_block + kGroupRows * sb + 32 * j + 4 * r, 4);
  }
}

}  // namespace omnibus
