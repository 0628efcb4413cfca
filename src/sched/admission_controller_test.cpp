#include "sched/admission_controller.h"

#include <gtest/gtest.h>

namespace omnibus {
namespace {

TEST(AdmissionControllerTest, StartsAtMaxSeqsAndDropsBelowTheRunningCountWhenSlow) {
  AdmissionController c(0.100, 64);
  EXPECT_EQ(c.limit(), 64);
  EXPECT_EQ(c.on_step(0.150, 20, 0), 19);  // too slow with 20 running
  EXPECT_EQ(c.on_step(0.120, 19, 0), 18);
  EXPECT_EQ(c.on_step(0.095, 18, 0), 18);  // within target, not far under: hold
}

TEST(AdmissionControllerTest, GrowsOnlyWhenWellUnderTargetWithEverySeatTaken) {
  AdmissionController c(0.100, 8);
  c.on_step(0.5, 4, 0);
  ASSERT_EQ(c.limit(), 3);
  EXPECT_EQ(c.on_step(0.010, 2, 0), 3);  // a free seat: no reason to grow
  EXPECT_EQ(c.on_step(0.010, 3, 0), 4);
  for (int i = 0; i < 20; ++i) c.on_step(0.010, c.limit(), 0);
  EXPECT_EQ(c.limit(), 8);  // never past max_seqs
}

TEST(AdmissionControllerTest, NeverBelowOneAndIgnoresPrefillShare) {
  AdmissionController c(0.050, 4);
  for (int i = 0; i < 10; ++i) c.on_step(1.0, 1, 0);
  EXPECT_EQ(c.limit(), 1);
  AdmissionController d(0.050, 4);
  // 2 s for 1 decode row beside 999 prompt rows: the decode share is 2 ms.
  EXPECT_EQ(d.on_step(2.0, 1, 999), 4);
  EXPECT_EQ(d.on_step(1.0, 0, 500), 4);  // no decode rows: nothing learned
}

}  // namespace
}  // namespace omnibus
