#include "bench/machine_limits.h"

#include <gtest/gtest.h>

#include "base/cpu_features.h"

namespace omnibus::bench {
namespace {

// The loops count what they do: a multiply-add is 2 operations, so an
// iteration of the scalar int8 loop (8 lanes) is 16, of the AVX2 one (8
// chains of 32 products) 512, of the AVX-512 VNNI one (10 chains of 64) 1280.
TEST(MachineLimits, Int8LoopsCountTheirOperations) {
  EXPECT_DOUBLE_EQ(detail::int8_dot_loop_scalar(1000), 16000.0);
#if !defined(OMNIBUS_NO_AVX2_BUILD)
  if (cpu_features().avx2) {
    EXPECT_DOUBLE_EQ(detail::int8_dot_loop_avx2(1000), 512000.0);
  }
#endif
#if !defined(OMNIBUS_NO_AVX512VNNI_BUILD) && !defined(OMNIBUS_NO_AVX2_BUILD)
  const CpuFeatures& f = cpu_features();
  if (f.avx512f && f.avx512bw && f.avx512_vnni) {
    EXPECT_DOUBLE_EQ(detail::int8_dot_loop_avx512vnni(1000), 1280000.0);
  }
#endif
}

TEST(MachineLimits, ProbesReportPositiveRatesAndTheirPath) {
  std::string flops_path, int8_path;
  EXPECT_GT(measure_peak_flops(1, 0.02, &flops_path), 0);
  EXPECT_GT(measure_peak_int8_ops(1, 0.02, &int8_path), 0);
  EXPECT_TRUE(flops_path == "avx2+fma" || flops_path == "scalar") << flops_path;
  EXPECT_TRUE(int8_path == "avx512-vnni" || int8_path == "avx2" || int8_path == "scalar") << int8_path;
#if defined(OMNIBUS_NO_AVX2_BUILD)
  EXPECT_EQ(int8_path, "scalar");
#else
  const CpuFeatures& f = cpu_features();
  if (f.avx512f && f.avx512bw && f.avx512_vnni) {
    EXPECT_EQ(int8_path, "avx512-vnni");
  }
#endif
}

}  // namespace
}  // namespace omnibus::bench
