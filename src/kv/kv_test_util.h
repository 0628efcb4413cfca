// What the KvManager tests share: distinct token runs and the invariant
// check as a gtest expectation.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kv/kv_manager.h"

namespace omnibus::kv_testing {

// Tokens 1000+seed*100+i: distinct per seed, never zero.
inline std::vector<std::int32_t> tokens(int n, int seed) {
  std::vector<std::int32_t> t(n);
  for (int i = 0; i < n; ++i) t[i] = 1000 + seed * 100 + i;
  return t;
}

inline void expect_ok(const KvManager& kv) {
  const Status st = kv.check_invariants();
  EXPECT_TRUE(st.is_ok()) << st.to_string();
}

}  // namespace omnibus::kv_testing
