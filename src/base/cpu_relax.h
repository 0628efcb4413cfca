// A spin-wait hint for the CPU: tells it this thread is busy-waiting, so a
// sibling hyperthread gets the core's resources and the loop burns less
// power. A hint only: a CPU without one just goes on spinning.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace omnibus {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace omnibus
