#include "kernels/weight_interleave.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "kernels/kernel_table.h"
#include "kernels/matmul_internal.h"
#include "tensor/dtype.h"
#include "tensor/quant_blocks.h"

namespace omnibus {
namespace {

// Bytes of d (and m; Q4_K, Q5_K: dmin) at the start of each block of the
// type; MXFP4's d is its one exponent byte.
size_t scale_bytes(DType t) {
  if (t == DType::kMXFP4) return 1;
  return t == DType::kQ4_1 || t == DType::kQ4_K || t == DType::kQ5_K ? 4 : 2;
}
// Bytes between them and the codes, moved in 4-byte words: Q5_0's fifth
// bits (qh), Q4_K's twelve bytes of packed sub-block scales and mins (Q5_K:
// and its 32 bytes of fifth bits after them).
size_t high_bytes(DType t) {
  switch (t) {
    case DType::kQ5_0: return 4;
    case DType::kQ4_K: return 12;
    case DType::kQ5_K: return 12 + 32;
    default: return 0;
  }
}

size_t block_bytes(DType t) { return static_cast<size_t>(dtype_info(t)->block_bytes); }
int64_t block_elements(DType t) { return dtype_info(t)->block_size; }

// Q5_0's 32 fifth bits of a row's block, regrouped so that the kernel can
// put them in place with one shift and one mask per code vector (header):
// GGUF bit e (element e) goes to byte k, bit j for e = 4j + k, and to byte
// k, bit 4 + j for e = 16 + 4j + k.
// Where element e's fifth bit sits in the regrouped word.
int fifth_bit_position(int e) {
  const int i = e % 16, k = i % 4, j = i / 4;
  return 8 * k + j + (e >= 16 ? 4 : 0);
}

uint32_t regroup_fifth_bits(uint32_t qh) {
  uint32_t out = 0;
  for (int e = 0; e < 32; ++e) out |= ((qh >> e) & 1u) << fifth_bit_position(e);
  return out;
}

uint32_t ungroup_fifth_bits(uint32_t regrouped) {
  uint32_t qh = 0;
  for (int e = 0; e < 32; ++e) qh |= ((regrouped >> fifth_bit_position(e)) & 1u) << e;
  return qh;
}

// Calls piece(row_offset, group_offset, bytes, fifth_bits) for each piece of
// row r's block of type t: where it sits in the GGUF block, and where in the
// interleaved block of its group of eight (header's layout); fifth_bits
// marks Q5_0's qh, which moves regrouped (regroup_fifth_bits), not as is.
// interleave8 and gather_row_blocks copy along these pieces in opposite
// directions.
template <class Piece>
void for_each_piece(DType t, int64_t r, Piece&& piece) {
  const size_t r4 = static_cast<size_t>(4 * r);
  if (t == DType::kQ6_K) {
    // GGUF's order is ql, qh, scales, d; the group's is d[8], scale words
    // [4][8], ql [32][32], qh [16][32] (q6k_tile reads these offsets).
    constexpr size_t kScales = 2 * kInterleaveRows, kQl = kScales + 16 * kInterleaveRows,
                     kQh = kQl + 128 * kInterleaveRows;
    piece(offsetof(BlockQ6_K, d), static_cast<size_t>(2 * r), size_t{2}, false);
    for (size_t w = 0; w < 4; ++w) piece(offsetof(BlockQ6_K, scales) + 4 * w, kScales + 32 * w + r4, size_t{4}, false);
    for (size_t j = 0; j < 32; ++j) piece(offsetof(BlockQ6_K, ql) + 4 * j, kQl + 32 * j + r4, size_t{4}, false);
    for (size_t j = 0; j < 16; ++j) piece(offsetof(BlockQ6_K, qh) + 4 * j, kQh + 32 * j + r4, size_t{4}, false);
    return;
  }
  if (t == DType::kQ3_K) {
    // GGUF's order is hmask, qs, scales, d; the group's is d[8], scale
    // words [3][8], hmask [8][32], qs [16][32] (q3k_tile reads these offsets).
    constexpr size_t kScales = 2 * kInterleaveRows, kHmask = kScales + 12 * kInterleaveRows,
                     kQs = kHmask + 32 * kInterleaveRows;
    piece(offsetof(BlockQ3_K, d), static_cast<size_t>(2 * r), size_t{2}, false);
    for (size_t w = 0; w < 3; ++w) piece(offsetof(BlockQ3_K, scales) + 4 * w, kScales + 32 * w + r4, size_t{4}, false);
    for (size_t j = 0; j < 8; ++j) piece(offsetof(BlockQ3_K, hmask) + 4 * j, kHmask + 32 * j + r4, size_t{4}, false);
    for (size_t j = 0; j < 16; ++j) piece(offsetof(BlockQ3_K, qs) + 4 * j, kQs + 32 * j + r4, size_t{4}, false);
    return;
  }
  if (t == DType::kQ2_K) {
    // scales, qs, d, dmin in GGUF; d[8], dmin[8], scale words [4][8], qs
    // [16][32] in the group (q2k_tile).
    constexpr size_t kScales = 4 * kInterleaveRows, kQs = kScales + 16 * kInterleaveRows;
    piece(offsetof(BlockQ2_K, d), static_cast<size_t>(2 * r), size_t{2}, false);
    piece(offsetof(BlockQ2_K, dmin), static_cast<size_t>(2 * kInterleaveRows + 2 * r), size_t{2}, false);
    for (size_t w = 0; w < 4; ++w) piece(offsetof(BlockQ2_K, scales) + 4 * w, kScales + 32 * w + r4, size_t{4}, false);
    for (size_t j = 0; j < 16; ++j) piece(offsetof(BlockQ2_K, qs) + 4 * j, kQs + 32 * j + r4, size_t{4}, false);
    return;
  }
  if (t == DType::kIQ4_XS) {
    // d[8], scales_h[8], scales_l words [8], qs [32][32] (iq4xs_tile).
    constexpr size_t kScalesH = 2 * kInterleaveRows, kScalesL = kScalesH + 2 * kInterleaveRows,
                     kQs = kScalesL + 4 * kInterleaveRows;
    piece(offsetof(BlockIQ4_XS, d), static_cast<size_t>(2 * r), size_t{2}, false);
    piece(offsetof(BlockIQ4_XS, scales_h), kScalesH + static_cast<size_t>(2 * r), size_t{2}, false);
    piece(offsetof(BlockIQ4_XS, scales_l), kScalesL + r4, size_t{4}, false);
    for (size_t j = 0; j < 32; ++j) piece(offsetof(BlockIQ4_XS, qs) + 4 * j, kQs + 32 * j + r4, size_t{4}, false);
    return;
  }
  const size_t sb = scale_bytes(t), hb = high_bytes(t), code_bytes = block_bytes(t) - sb - hb;
  const size_t d_bytes = std::min<size_t>(sb, 2);
  piece(size_t{0}, d_bytes * static_cast<size_t>(r), d_bytes, false);                                 // d (e)
  if (sb == 4) piece(size_t{2}, static_cast<size_t>(2 * kInterleaveRows + 2 * r), size_t{2}, false);  // m
  const bool fifth_bits = t == DType::kQ5_0;
  for (size_t w = 0; w < hb / 4; ++w)  // Q5_0's qh (regrouped); Q4_K's and Q5_K's scale words, Q5_K's qh
    piece(sb + 4 * w, kInterleaveRows * sb + 32 * w + static_cast<size_t>(4 * r), size_t{4}, fifth_bits);
  for (size_t j = 0; j < code_bytes / 4; ++j)
    piece(sb + hb + 4 * j, kInterleaveRows * (sb + hb) + 32 * j + static_cast<size_t>(4 * r), size_t{4}, false);
}

uint32_t read_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);  // little-endian host (x86)
  return v;
}

// A row's blocks without any padding between rows.
size_t packed_row_bytes(const WeightMatrix& w) {
  return static_cast<size_t>(w.cols / block_elements(w.dtype)) * block_bytes(w.dtype);
}

}  // namespace

bool can_interleave8(DType t) { return can_interleave8(kernels(), t); }

bool can_interleave8(const KernelTable& table, DType t) {
  if (table.rows_interleaved == nullptr) return false;  // the table reads row layout only
  if (t == DType::kQ4_K || t == DType::kQ5_K || t == DType::kQ6_K || t == DType::kQ2_K || t == DType::kQ3_K ||
      t == DType::kIQ4_XS)
    return matmul_detail::act_format(t) == matmul_detail::ActFormat::kQ8x256;
  if (t != DType::kQ4_0 && t != DType::kQ4_1 && t != DType::kQ5_0 && t != DType::kQ8_0 && t != DType::kIQ4_NL &&
      t != DType::kMXFP4)
    return false;
  return matmul_detail::act_format(t) == matmul_detail::ActFormat::kQ8x32;
}

size_t interleaved8_bytes(const WeightMatrix& w) {
  const int64_t groups = (w.rows + kInterleaveRows - 1) / kInterleaveRows;
  return static_cast<size_t>(groups) * kInterleaveRows * packed_row_bytes(w);
}

WeightMatrix interleave8(const WeightMatrix& w, uint8_t* out,
                         const std::function<void(int64_t row_begin, int64_t row_end)>& copied) {
  const size_t bb = block_bytes(w.dtype);
  const int64_t blocks = w.cols / block_elements(w.dtype);
  const int64_t groups = (w.rows + kInterleaveRows - 1) / kInterleaveRows;
  // Padding rows of a partial last group: zero scales and codes. Only that
  // group is cleared; the copy below writes every byte of the others (a
  // memset of the whole copy was a second pass over it at load).
  if (w.rows % kInterleaveRows != 0) {
    const size_t group_bytes = static_cast<size_t>(blocks) * kInterleaveRows * bb;
    std::memset(out + static_cast<size_t>(groups - 1) * group_bytes, 0, group_bytes);
  }
  const auto* src = static_cast<const uint8_t*>(w.data);
  // Groups per `copied` call: about 4 MB of source rows.
  const int64_t groups_per_call =
      std::max<int64_t>(1, (int64_t{4} << 20) / std::max<int64_t>(1, kInterleaveRows * static_cast<int64_t>(w.row_bytes)));
  for (int64_t g = 0; g < groups; ++g) {
    if (copied && g > 0 && g % groups_per_call == 0)
      copied((g - groups_per_call) * kInterleaveRows, g * kInterleaveRows);
    const int64_t rows_here = std::min<int64_t>(kInterleaveRows, w.rows - g * kInterleaveRows);
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t* group_block = out + (g * blocks + b) * kInterleaveRows * bb;
      for (int64_t r = 0; r < rows_here; ++r) {
        const uint8_t* block = src + (g * kInterleaveRows + r) * w.row_bytes + b * bb;
        for_each_piece(w.dtype, r, [&](size_t row_off, size_t group_off, size_t n, bool fifth_bits) {
          if (!fifth_bits) return static_cast<void>(std::memcpy(group_block + group_off, block + row_off, n));
          const uint32_t v = regroup_fifth_bits(read_u32(block + row_off));
          std::memcpy(group_block + group_off, &v, 4);
        });
      }
    }
  }
  if (copied) {
    const int64_t last = (groups - 1) / groups_per_call * groups_per_call;  // the run not yet reported
    copied(last * kInterleaveRows, w.rows);
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
  const size_t bb = block_bytes(w.dtype);
  const int64_t blocks = w.cols / block_elements(w.dtype), g = o / kInterleaveRows, r = o % kInterleaveRows;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* group_block = src + (g * blocks + b) * kInterleaveRows * bb;
    uint8_t* block = out + b * bb;
    for_each_piece(w.dtype, r, [&](size_t row_off, size_t group_off, size_t n, bool fifth_bits) {
      if (!fifth_bits) return static_cast<void>(std::memcpy(block + row_off, group_block + group_off, n));
      const uint32_t v = ungroup_fifth_bits(read_u32(group_block + group_off));
      std::memcpy(block + row_off, &v, 4);
    });
  }
}

}  // namespace omnibus
