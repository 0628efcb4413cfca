#include "bench/machine_limits.h"

#include <gtest/gtest.h>

namespace omnibus::bench {
namespace {

// Operations (a multiply-add counts 2) one round of each int8 loop does:
// scalar 8 lanes; avx2 8 chains of 32 products; avx-vnni 10 of 32;
// avx512-vnni 10 of 64.
double ops_per_iteration(const std::string& path) {
  if (path == "scalar") return 16;
  if (path == "avx2") return 512;
  if (path == "avx-vnni") return 640;
  if (path == "avx512-vnni") return 1280;
  ADD_FAILURE() << "unknown int8 path " << path;
  return 0;
}

TEST(MachineLimits, EveryRunnableInt8LoopCountsItsOperations) {
  const std::vector<std::string> paths = runnable_int8_paths();
  ASSERT_FALSE(paths.empty());
  EXPECT_EQ(paths.back(), "scalar");
  for (const std::string& path : paths) {
    SCOPED_TRACE(path);
    EXPECT_DOUBLE_EQ(int8_dot_loop(path, 1000), 1000 * ops_per_iteration(path));
  }
}

TEST(MachineLimits, ProbesReportPositiveRatesAndTheFastestPath) {
  std::string flops_path, int8_path;
  EXPECT_GT(measure_peak_flops(1, 0.02, &flops_path), 0);
  EXPECT_GT(measure_peak_int8_ops(1, 0.02, &int8_path), 0);
  EXPECT_TRUE(flops_path == "avx2+fma" || flops_path == "scalar") << flops_path;
  EXPECT_EQ(int8_path, runnable_int8_paths().front());
  const MachineLimits without = measure_machine_limits(1, 0.02);
  EXPECT_EQ(without.peak_int8_ops, 0) << "the int8 probe runs only when asked for";
  const MachineLimits with = measure_machine_limits(1, 0.02, /*with_int8=*/true);
  EXPECT_GT(with.peak_int8_ops, 0);
  EXPECT_EQ(with.int8_path, int8_path);
}

}  // namespace
}  // namespace omnibus::bench
