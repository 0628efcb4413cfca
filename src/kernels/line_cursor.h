// LineCursor: a list of cache lines fetched into L2 at a pace set by the
// loops that step it (the attention kernels' fetch of the next unit's K and
// V, attention_chunk_driver.h). No intrinsics: `prefetcht1` in asm (the
// compiler's generic prefetch on other CPUs), so the header builds anywhere
// (tests included). Internal linkage, as the kernel headers: each
// instruction-set build gets its own copy (a shared inline copy compiled
// with AVX-512 could be the one the linker keeps).
#pragma once

#include <algorithm>
#include <cstdint>

namespace omnibus {
namespace {

// A value loop's position weighs this many score steps (one run's step of
// the d loop) in a LineCursor's pace: 8-32 measured alike.
inline constexpr int64_t kValueStepWeight = 16;

// The lines the next unit of a chunk's work will read (the K and V of its
// next KV head, or of the first KV head of the caller's next chunk,
// ChunkAhead), fetched into L2 (`prefetcht1`) while this unit computes,
// paced over its score and value loops so that no stretch of them issues
// more than its share. A 16-bit cache's attention at long context is bound
// by its K/V stream (1.5 MB a layer at 2,048 positions for SmolLM2); the
// driver's own prefetches fetch each run's lines one step ahead, and a
// burst of prefetches issues no faster than one core streams from DRAM
// (~4 ns a line here, any hint), stalling the loop that issues it. With
// this pacing decode after 1,926 tokens went +7% (f16 cache) and +3%
// (bf16) on AVX-512 (+26% for f16 on a Zen 4 VM;
// docs/findings/prefetch-must-be-paced.md). Not used for the quantized
// caches (q8_0 +1-2%, q4_0 -2 to -4%; q4_0 -5% on Zen 4 once its value
// loop ran at its FMA floor), nor in the AVX2
// kernels (-2%: their value loop spills already).
class LineCursor {
  struct Range {
    uintptr_t begin, end;
  };

 public:
  // The lines covering [p, p + bytes); a range that starts where the last
  // one ended joins it (a KV head's blocks of a sequence are usually
  // consecutive). Past kMaxRanges ranges the rest is left to the kernels'
  // own prefetches.
  void add(const void* p, int64_t bytes) {
    if (p == nullptr || bytes <= 0 || n_ == kMaxRanges) return;
    const uintptr_t begin = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{63};
    const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + static_cast<uintptr_t>(bytes) + 63) & ~uintptr_t{63};
    lines_ += static_cast<int64_t>((end - begin) / 64);
    if (n_ > 0 && ranges_[n_ - 1].end == begin) {
      ranges_[n_ - 1].end = end;
      return;
    }
    ranges_[n_++] = {begin, end};
  }
  int64_t lines() const { return lines_; }
  // Empty again (the ranges' storage is left as it is: only [0, n_) is read).
  void clear() { n_ = 0, lines_ = 0, walk_ = Walk{}; }

  // The walk through the lines: step(w) advances by weight w of the pace's
  // total, issuing the lines that share takes. A value loop copies it into
  // a local (its fields then stay in registers) and hands it back with
  // save().
  class Walk {
   public:
    void step(int64_t weight) {
      for (credit_ += lines_ * weight; credit_ >= total_weight_; credit_ -= total_weight_) {
        if (next_ == end_) return;  // all issued
#if defined(__x86_64__) || defined(__i386__)
        asm volatile("prefetcht1 %0" : : "m"(*reinterpret_cast<const char*>(next_)));
#else
        __builtin_prefetch(reinterpret_cast<const void*>(next_), 0, 2);  // into L2 too (aarch64: PLDL2KEEP)
#endif
        next_ += 64;
        if (next_ == end_ && range_ + 1 < ranges_end_) {
          ++range_;
          next_ = range_->begin;
          end_ = range_->end;
        }
      }
    }

   private:
    friend class LineCursor;
    const Range* range_ = nullptr;
    const Range* ranges_end_ = nullptr;
    uintptr_t next_ = 0, end_ = 0;
    int64_t lines_ = 0, total_weight_ = 1, credit_ = 0;
  };
  // The lines spread over steps of `total_weight` in all, the first at once.
  void pace(int64_t total_weight) {
    walk_ = Walk{};
    walk_.total_weight_ = std::max<int64_t>(total_weight, 1);
    walk_.credit_ = walk_.total_weight_ - 1;
    walk_.lines_ = lines_;
    if (n_ > 0) {
      walk_.range_ = ranges_;
      walk_.ranges_end_ = ranges_ + n_;
      walk_.next_ = ranges_[0].begin;
      walk_.end_ = ranges_[0].end;
    }
  }
  Walk walk() const { return walk_; }
  void save(const Walk& w) { walk_ = w; }
  void step(int64_t weight) { walk_.step(weight); }
  // Lines the walk has still to issue (tests; not for the loops).
  int64_t remaining() const {
    if (walk_.range_ == nullptr) return 0;
    int64_t left = static_cast<int64_t>((walk_.end_ - walk_.next_) / 64);
    for (const Range* r = walk_.range_ + 1; r < walk_.ranges_end_; ++r) left += static_cast<int64_t>((r->end - r->begin) / 64);
    return left;
  }

 private:
  static constexpr int kMaxRanges = 64;
  Range ranges_[kMaxRanges];  // not initialised: a call's cursor is reset per unit (clear)
  int n_ = 0;
  int64_t lines_ = 0;
  Walk walk_;
};

}  // namespace
}  // namespace omnibus
