// Software prefetch of the next weight tile, for the decode kernels.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace omnibus::matmul_detail {

// Decode (one x row) reads every weight once, straight from DRAM, and the
// hardware prefetcher alone leaves the core waiting: software prefetch of a
// weight tile a little ahead (tiles are contiguous), spread over this tile's
// block steps, took decode on the dev box from 75 to 104 tokens/s (2
// threads, row layout, one 4-row tile ahead; two was 3% slower). For the
// interleaved kernels one 8-row group ahead measured no worse than two or
// three (the machine's noise hid any difference under ~5%).
class NextTilePrefetch {
 public:
  NextTilePrefetch(const uint8_t* tile, size_t tile_bytes, int64_t blocks, int tiles_ahead)
      : next_(tile + tile_bytes * tiles_ahead),
        step_((static_cast<int64_t>(tile_bytes) + blocks * kLine - 1) / (blocks * kLine) * kLine) {}
  // Block step b of `blocks` fetches its share of the next tile's lines.
  void part(int64_t b) const {
    for (int64_t off = b * step_; off < (b + 1) * step_; off += kLine)
      _mm_prefetch(reinterpret_cast<const char*>(next_ + off), _MM_HINT_T0);
  }

 private:
  static constexpr int64_t kLine = 64;
  const uint8_t* next_;  // may point past the matrix: prefetches never fault
  int64_t step_;         // bytes per block step, a whole number of lines
};

}  // namespace omnibus::matmul_detail
