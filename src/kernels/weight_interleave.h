// Repacking weight matrices into the interleaved layout of the int8 decode
// and prefill kernels (WeightLayout::kInterleaved8 in kernels/matmul.h).
//
// Why: in GGUF's row layout, an int8 kernel must reduce each 32-element
// block of each row to one number with horizontal adds, and convert the
// rows' f16 scales one gather at a time. With eight rows interleaved, lane r
// of every vector belongs to row r: the block sums come out one row per
// 32-bit lane with no horizontal step, the eight rows' scales load as one
// vector, and 4-bit products can be summed as int16 before a single widening
// multiply per block. The arithmetic per output is unchanged (exact integer
// block sums, then the same float steps in the same order), so results are
// bit-identical to the row layout's.
//
// Group layout, per 32-element block b (all eight rows' block b together):
//   Q4_0: d[8] (f16), codes[128]            = 8 x 18 bytes
//   Q4_1: d[8] (f16), m[8] (f16), codes[128] = 8 x 20 bytes
//   Q5_0: d[8] (f16), high[8] (u32), codes[128] = 8 x 22 bytes
//   Q8_0: d[8] (f16), codes[256]            = 8 x 34 bytes
//   IQ4_NL: as Q4_0 (its codes index the code book) = 8 x 18 bytes
//   MXFP4: e[8] (E8M0 exponent bytes), codes[128]  = 8 x 17 bytes
//   Q4_K (per 256-element block): d[8] (f16), dmin[8] (f16), scale words
//     [3][8] (u32: word w of row r's twelve packed 6-bit scale and min
//     bytes at 32w + 4r), codes[1024]       = 8 x 144 bytes
//   Q5_K: as Q4_K with qh [8][32] (4-byte chunks of the fifth bits) between
//     the scale words and the codes           = 8 x 176 bytes
//   Q6_K (per 256-element block): d[8] (f16), scale words [4][8] (row r's
//     sixteen int8 scales), ql [32][32], qh [16][32] (4-byte chunks as
//     for the codes below)                   = 8 x 210 bytes
//   Q2_K: d[8], dmin[8] (f16), scale words [4][8] (row r's sixteen
//     scale | min << 4 bytes), qs [16][32]    = 8 x 84 bytes
//   Q3_K: d[8] (f16), scale words [3][8] (row r's twelve packed 6-bit
//     scale bytes), hmask [8][32], qs [16][32] = 8 x 110 bytes
//   IQ4_XS: d[8] (f16), scales_h[8] (u16), scales_l words [8], qs [32][32]
//                                            = 8 x 136 bytes
// codes: 32-byte chunks j = 0, 1, ...; chunk j holds bytes 4j..4j+3 of each
// row's quants (qs), row 0 first. For the 4-bit types a byte keeps GGUF's
// pairing (low nibble: element i, high nibble: element i + 16), so chunk j
// gives elements 4j..4j+3 from its low nibbles and 16+4j.. from its high.
// Q5_0's fifth bits (GGUF's qh, bit e for element e) are regrouped per row
// so that byte k of the word holds, in bit j, element 4j+k's and, in bit
// 4+j, element 16+4j+k's: for code chunk j the kernel gets both halves'
// fifth bits into bit 4 of each byte with one shift and one mask each
// ((high << (4 - j)) & 0x10 and (high >> j) & 0x10).
// Q4_K's codes follow the same rule over its 128 code bytes (chunk j =
// 8p + l: bytes 32p + 4l.. of each row, low nibbles elements 64p + 4l..
// of sub-block 2p, high nibbles those of sub-block 2p + 1), and its scale
// words are unpacked for all eight rows at once with vector shifts and
// masks, as the row kernels unpack one row's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "kernels/matmul.h"

namespace omnibus {

struct KernelTable;  // kernels/kernel_table.h

// Rows side by side in the interleaved layout.
inline constexpr int kInterleaveRows = 8;

// True when `table` has an interleaved kernel for t (and the build
// multiplies int8 activations); without a table, the process's (kernels()).
bool can_interleave8(const KernelTable& table, DType t);
bool can_interleave8(DType t);

// Bytes of the interleaved copy of w (whole groups of eight rows).
size_t interleaved8_bytes(const WeightMatrix& w);

// Writes w (row layout, a type can_interleave8 accepts) interleaved into
// out (interleaved8_bytes(w) bytes) and returns the view of it. Rows are
// copied in order; `copied(row_begin, row_end)`, when given, is called after
// each run of them (a few MB), so the caller can drop the source pages while
// a large matrix is still being copied.
WeightMatrix interleave8(const WeightMatrix& w, uint8_t* out,
                         const std::function<void(int64_t row_begin, int64_t row_end)>& copied = {});

// Row o of w in GGUF's row format (its blocks in order, w.row_bytes bytes
// for an interleaved w), whatever w's layout: for the reference paths.
void gather_row_blocks(const WeightMatrix& w, int64_t o, uint8_t* out);

}  // namespace omnibus
