// What the ISA-neutral attention drivers (attention_chunk_driver.h,
// attention_pair_driver.h) and the kernels they drive share: the limits on
// heads per pass and per kernel call, and the prefetch plans a driver hands
// its kernels (SpreadPrefetch for the score loops, NextKeys for the value
// loops). No intrinsics: x86 builds prefetch with `prefetcht0` in asm,
// others with the compiler's generic prefetch, so the header builds with
// any flags (the drivers' plain-flags test included). Internal linkage, as
// the kernel headers: each instruction-set build gets its own copy.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/attention.h"
#include "kernels/line_cursor.h"

namespace omnibus::attention_detail {
namespace {

// Heads [head_begin, head_end), at most kMaxHeadsPerPass of them. Each
// pass over a run (a KV block) serves every head before moving on, so the
// heads that share a KV head (GQA) read its block from L1 rather than from
// memory once each; each head's arithmetic is unchanged by the grouping.
constexpr int kMaxHeadsPerPass = 16;

// Query heads of one KV head per kernel call at most, on any path.
constexpr int kMaxHeadsPerBatch = 4;

// Prefetches spread over a kernel's loop instead of issued in one burst
// before it: at step i, line i of a and of b (while i < lines). With one or
// two per step of the d loop instead of ~200 per KV block up front, a
// decode row at 2,048 positions from DRAM went 309-333 -> 280-311 us (bf16;
// docs/profiling.md); likely the burst queued on the core's few
// outstanding misses. asm, not _mm_prefetch: GCC 12 dropped the builtin's
// calls from the kernels' lambdas (none were in the object code).
struct SpreadPrefetch {
  const char* a = nullptr;  // may be null
  const char* b = nullptr;  // may be null
  int a_lines = 0, b_lines = 0;
  // The next unit's lines, for the AVX-512 16-bit score kernels to step
  // (their GroupPrefetch); null elsewhere.
  LineCursor* ahead = nullptr;
  void at(int i) const {
#if defined(__x86_64__) || defined(__i386__)
    if (i < a_lines) asm volatile("prefetcht0 %0" : : "m"(a[64 * i]));
    if (i < b_lines) asm volatile("prefetcht0 %0" : : "m"(b[64 * i]));
#else
    if (i < a_lines) __builtin_prefetch(a + 64 * i, 0, 3);
    if (i < b_lines) __builtin_prefetch(b + 64 * i, 0, 3);
#endif
  }
};

// Lines of another KV head's K (transposed; codes for q8_0) for the value
// kernels to fetch while they run: for run r, at position j < lines, line
// line0 + j from the run's K (k, or k_q when q8) plus head_bytes. Empty
// runs: none (the kernel then fetches the next run's V rows instead).
struct NextKeys {
  std::span<const KvRun> runs;
  int64_t head_bytes = 0;
  bool q8 = false;
  int64_t line0 = 0, lines = 0;
  // The next unit's lines (LineCursor), for the AVX-512 16-bit value loops
  // to step once a position (kValueStepWeight) instead of the above.
  LineCursor* ahead = nullptr;
  const char* first_line(const KvRun& run) const {
    const char* k = q8 ? reinterpret_cast<const char*>(run.k_q) : reinterpret_cast<const char*>(run.k);
    return k + head_bytes + 64 * line0;
  }
};

}  // namespace
}  // namespace omnibus::attention_detail
