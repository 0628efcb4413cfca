// The int8 kernels for weights in the interleaved layout (eight rows side by
// side per block; kernels/weight_interleave.h), included by one source file
// per instruction set: matmul_interleaved_avx2.cpp (-mavx2 -mfma -mf16c),
// matmul_interleaved_avxvnni.cpp (the same plus -mavxvnni) and
// matmul_interleaved_avx512vnni.cpp (AVX-512 BW, VL and VNNI: the 512-bit
// pair tiles, and the 256-bit kernels with EVEX vpdpbusd). The kernels
// here and the helpers of matmul_avx2_common.h have internal linkage, so
// each file keeps its own copy compiled for its own instructions (no copy
// built for AVX-VNNI can be picked by the linker for a CPU without it).
// What else they call with external linkage (load_u32le, std::min,
// std::copy) is plain integer code that no -m flag changes.
//
// Each output gets exactly the arithmetic of the row-layout kernels
// (matmul_q8_kernels.h), so the two layouts give bit-identical results:
//   legacy types, per 32-block b in order: S = exact int32 sum of code *
//   q_x over the block (minus the code bias times sum(q_x) for Q4_0),
//     acc = fma(float(S), d_w[b] * d_x[b], acc);
//     acc_m = fma(m_w[b], d_x[b] * sum(q_x[b]), acc_m)   (Q4_1 only);
//   y = acc (+ acc_m);
//   K-quants, per 256-block: k_tile's steps (q4k_tile, q6k_tile below).
// What the layout changes is the cost: lane r of every vector is weight row
// r, so S arrives one row per lane with no horizontal adds, and for 4-bit
// codes (products <= 2 * 15 * 127 per int16 pair) the eight products of a
// block are summed as int16 before one widening multiply, about half the
// multiply-pipe work of the row layout.
// With VNNI (AVX-VNNI, or AVX-512 VNNI's 256-bit form) a block's exact int32 sums come from
// vpdpbusd, which adds four u8 x s8 products into each int32 lane in one
// instruction, instead of vpmaddubsw into int16, int16 adds and one
// vpmaddwd widening. The sums are exact either way (the int16 steps never
// saturate: the bounds in matmul_interleaved_legacy.h and
// matmul_interleaved_kquants.h), so the builds give bit-identical outputs.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <type_traits>

// The kernels, in layers: legacy types, K-quants, Q3_K and IQ4_XS, the AVX-512 pair tiles.
#include "kernels/matmul_interleaved_pair_tiles.h"

namespace omnibus::matmul_detail {
namespace {

// Outputs of NG groups of eight weight rows for x rows r0..r0+MR, whatever
// the type.
template <class K, int NG, int MR>
void tile(const MatmulArgs& a, const uint8_t* const* groups, int64_t r0, float* const* out) {
  if constexpr (std::is_same_v<K, IlQ6_K>) {
    q6k_tile<NG, MR>(a, groups, r0, out);
  } else if constexpr (std::is_same_v<K, IlQ2_K>) {
    q2k_tile<NG, MR>(a, groups, r0, out);
  } else if constexpr (std::is_same_v<K, IlQ3_K>) {
    q3k_tile<NG, MR>(a, groups, r0, out);
  } else if constexpr (std::is_same_v<K, IlIQ4_XS>) {
    iq4xs_tile<NG, MR>(a, groups, r0, out);
  } else if constexpr (K::kSuper) {
    q4k_tile<K, NG, MR>(a, groups, r0, out);
  } else {
    legacy_group_tile<K, NG, MR>(a, groups, r0, out);
  }
}

// Batches: MR x rows share each unpacked block. Three for unsigned codes,
// four for signed ones (Q8_0, the IQ4 code books: one int32 sum a row, no
// int16 pair sums): with four x rows the Q4 tile's sixteen accumulators no
// longer fit the registers and its loop spilled (`*MatmulBench*`, 512 rows,
// one thread, in turns: Q4_1 19.5-20.1 -> 18.3-18.9 ms, Q4_0 18.7-18.9 ->
// 18.0-18.2 with three; Q8_0 28.9-29.2 -> 29.4-29.7, so it keeps four).
// Each output's arithmetic is the same whatever the tile's row count.
template <class K>
constexpr int kBatchRows = K::kSigned ? 4 : 3;
constexpr int kMaxBatchRows = 4;

// Decode walks this many far-apart groups of a thread's rows together.
//
// Why: with one x row a group's block is used once, so decode streams the
// weights from DRAM, and one sequential stream per core left the memory
// system underused on this machine (Zen 1 VM, 2 cores); software prefetch
// one to eight groups ahead, into L1 or L2, measured no better than none.
// Four streams, a quarter of the thread's rows apart, keep more lines in
// flight, and the four groups share each broadcast of x. Measured against
// the one-stream kernel (`--gtest_filter=*MatmulBench*`, the two builds in
// turns, four rounds, a busy VM;
// docs/findings/weight-streams-want-more-streams-not-prefetch.md): 49152 x 576 from DRAM on two
// threads, medians Q4_1 1170 -> 871 us, Q8_0 2243 -> 1530 us; on one
// thread 4-7% faster from DRAM and 11% in L2 (the shared broadcasts). Six
// streams measured the same as four end to end, eight slower (the
// accumulators no longer fit in registers).
//
// Q6_K walks one: its kernel prefetches each block 8 ahead into the L2 and
// 2 ahead into the L1 (prefetch_block_ahead), and with the lines already
// on their way, the other streams only add miss traffic to a kernel that
// computes slower per byte than any other. 1B-shape Q6_K, two threads,
// decode tok/s, four alternating runs each: 1 stream 31.5-37.8 (median
// 32.8), 2 streams 29.6-31.2, 3 27.4-30.8, 4 26.6-28.0, 6 and 8 lower
// still. The Q4_K_M, Q5_K_M and IQ4_XS files (Q6_K output heads), three
// alternations, medians: 47.7 -> 49.1, 39.9 -> 42.1, 40.8 -> 43.0 tok/s;
// their Q4_K, Q5_K, Q3_K and IQ4_XS matrices on one stream too (with or
// without the L1 prefetch) measured no clear change, so they keep four.
// Measured on the Zen 4 VM only.
template <class K>
constexpr int kDecodeStreams = std::is_same_v<K, IlQ6_K> ? 1 : 4;

// Groups [0, n) of a thread's share (group i at `first + i * group_bytes`)
// for the single x row: kDecodeStreams sections walked side by side, then
// the remainder together.
template <class K>
void decode_rows(const MatmulArgs& a, const uint8_t* first, size_t group_bytes, int64_t n, int64_t row0,
                 int64_t row_end) {
  alignas(32) float out[kDecodeStreams<K> * kInterleaveRows];
  auto emit = [&](int64_t gi, const float* o8) {
    const int64_t o = row0 + gi * kInterleaveRows;
    // One store for a whole group (a std::copy of eight floats was a
    // memmove call per group: ~0.6% of decode samples in perf; end to end
    // within noise).
    if (row_end - o >= kInterleaveRows) return _mm256_storeu_ps(a.y + o, _mm256_load_ps(o8));
    std::copy(o8, o8 + (row_end - o), a.y + o);
  };
  // NG groups, group g being index idx(g), in one pass.
  auto run = [&]<int NG>(auto idx) {
    const uint8_t* groups[NG];
    float* outs[NG];
    for (int g = 0; g < NG; ++g) groups[g] = first + idx(g) * group_bytes, outs[g] = out + g * kInterleaveRows;
    tile<K, NG, 1>(a, groups, 0, outs);
    for (int g = 0; g < NG; ++g) emit(idx(g), outs[g]);
  };
  constexpr int kStreams = kDecodeStreams<K>;
  const int64_t len = n / kStreams;
  for (int64_t i = 0; i < len; ++i) run.template operator()<kStreams>([&](int g) { return g * len + i; });
  if constexpr (kStreams == 4) {
    const int64_t done = kStreams * len;
    auto rest = [&](int g) { return done + g; };
    switch (n - done) {  // the last 1..3 groups together
      case 1: return run.template operator()<1>(rest);
      case 2: return run.template operator()<2>(rest);
      case 3: return run.template operator()<3>(rest);
      default: return;
    }
  } else {
    static_assert(kStreams == 1, "one stream covers every group; four leave up to three to the switch above");
  }
}

template <class K>
void interleaved_rows(const MatmulArgs& a, int64_t begin, int64_t end) {
  const WeightMatrix& w = *a.w;
  const auto* base = static_cast<const uint8_t*>(w.data);
  const size_t group_bytes = static_cast<size_t>(kInterleaveRows) * w.row_bytes;
  // begin is a multiple of 8 (matmul() splits rows in units of 16); end may
  // cut the last, padded group.
  const uint8_t* first = base + (begin / kInterleaveRows) * group_bytes;
  if (a.n_x == 1)
    return decode_rows<K>(a, first, group_bytes, (end - begin + kInterleaveRows - 1) / kInterleaveRows, begin, end);
  static_assert(kBatchRows<K> <= kMaxBatchRows, "out holds kMaxBatchRows x rows");
  alignas(32) float out[kMaxBatchRows * kInterleaveRows];
  // Tile buffer `from` (8 floats per x row) to outputs o.. (count of them)
  // of x rows r0 .. r0 + mr.
  auto emit = [&](const float* from, int64_t o, int64_t count, int64_t r0, int mr) {
    for (int i = 0; i < mr; ++i) {
      float* dst = a.y + (r0 + i) * w.rows + o;
      if (count == kInterleaveRows) {
        _mm256_storeu_ps(dst, _mm256_load_ps(from + i * kInterleaveRows));
      } else {
        std::copy(from + i * kInterleaveRows, from + i * kInterleaveRows + count, dst);
      }
    }
  };
  // One group's outputs o.. (count) for x rows r .. n_x: kBatchRows at a
  // time, the rows left over in one tile (a pass per row would unpack the
  // block once per row).
  auto group_rows = [&](const uint8_t* group, int64_t o, int64_t count, int64_t r) {
    float* const outs[1] = {out};
    for (; r + kBatchRows<K> <= a.n_x; r += kBatchRows<K>) {
      tile<K, 1, kBatchRows<K>>(a, &group, r, outs);
      emit(out, o, count, r, kBatchRows<K>);
    }
    static_assert(kMaxBatchRows == 4, "the switch below covers 1..3 rows");
    switch (a.n_x - r) {
      case 3:
        tile<K, 1, 3>(a, &group, r, outs);
        break;
      case 2:
        tile<K, 1, 2>(a, &group, r, outs);
        break;
      case 1:
        tile<K, 1, 1>(a, &group, r, outs);
        break;
      default:
        break;
    }
    emit(out, o, count, r, static_cast<int>(a.n_x - r));
  };
  for (int64_t o = begin; o < end; o += kInterleaveRows) {
    const uint8_t* group = first + ((o - begin) / kInterleaveRows) * group_bytes;
    if constexpr (kPairTile<K>) {
      // Two whole groups (o and o + 8): x rows kPairRows at a time, both
      // groups in each zmm register; the rows left over per group.
      if (o + 2 * kInterleaveRows <= end) {
        constexpr int kRows = kPairRows<K>;
        alignas(64) float out0[kRows * kInterleaveRows], out1[kRows * kInterleaveRows];
        const uint8_t* g0 = group;
        const uint8_t* g1 = group + group_bytes;
        if constexpr (kUnpacksPair<K>) {
          if (a.n_x >= kRows) g0 = unpack_pair<K>(g0, g1, a.qx->blocks);
        }
        int64_t r = 0;
        for (; r + kRows <= a.n_x; r += kRows) {
          pair_tile<K, kRows>(a, g0, g1, r, out0, out1);
          emit(out0, o, kInterleaveRows, r, kRows);
          emit(out1, o + kInterleaveRows, kInterleaveRows, r, kRows);
        }
        group_rows(group, o, kInterleaveRows, r);  // no-ops when no row is left
        group_rows(group + group_bytes, o + kInterleaveRows, kInterleaveRows, r);
        o += kInterleaveRows;  // the second group is done too
        continue;
      }
    }
    group_rows(group, o, std::min<int64_t>(kInterleaveRows, end - o), 0);
  }
}

// Every interleaved type.
inline void interleaved_rows_any(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  switch (a.w->dtype) {
    case DType::kQ4_0:
      return interleaved_rows<IlQ4_0>(a, row_begin, row_end);
    case DType::kQ4_1:
      return interleaved_rows<IlQ4_1>(a, row_begin, row_end);
    case DType::kQ5_0:
      return interleaved_rows<IlQ5_0>(a, row_begin, row_end);
    case DType::kQ8_0:
      return interleaved_rows<IlQ8_0>(a, row_begin, row_end);
    case DType::kIQ4_NL: return interleaved_rows<IlIQ4_NL>(a, row_begin, row_end);
    case DType::kMXFP4: return interleaved_rows<IlMXFP4>(a, row_begin, row_end);
    case DType::kQ4_K:
      return interleaved_rows<IlQ4_K>(a, row_begin, row_end);
    case DType::kQ5_K:
      return interleaved_rows<IlQ5_K>(a, row_begin, row_end);
    case DType::kQ6_K:
      return interleaved_rows<IlQ6_K>(a, row_begin, row_end);
    case DType::kQ2_K: return interleaved_rows<IlQ2_K>(a, row_begin, row_end);
    case DType::kQ3_K: return interleaved_rows<IlQ3_K>(a, row_begin, row_end);
    case DType::kIQ4_XS: return interleaved_rows<IlIQ4_XS>(a, row_begin, row_end);
    default:
      break;  // interleave8() makes no other type
  }
}

}  // namespace
}  // namespace omnibus::matmul_detail
