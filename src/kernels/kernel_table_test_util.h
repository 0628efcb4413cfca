// The kernel tables a test can run here, for tests that loop over them.
#pragma once

#include <vector>

#include "base/cpu_features.h"
#include "kernels/kernel_table.h"

namespace omnibus::testing_util {

// The compiled kernel tables this CPU can run, best first (scalar last).
inline std::vector<const KernelTable*> runnable_tables() {
  std::vector<const KernelTable*> out;
  for (const KernelTable* t : compiled_kernel_tables()) {
    if (t->runs_on(cpu_features())) out.push_back(t);
  }
  return out;
}

// The runnable tables other than the scalar reference.
inline std::vector<const KernelTable*> runnable_simd_tables() {
  std::vector<const KernelTable*> out;
  for (const KernelTable* t : runnable_tables()) {
    if (t->isa != Isa::kScalar) out.push_back(t);
  }
  return out;
}

}  // namespace omnibus::testing_util
