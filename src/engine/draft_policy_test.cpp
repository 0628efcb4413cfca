#include "engine/draft_policy.h"

#include <gtest/gtest.h>

namespace omnibus {
namespace {

TEST(DraftPolicy, GuessesOnlyWhenTheOddsCoverTheRowCost) {
  // Cheap rows (memory-bound decode): even middling odds pay.
  EXPECT_EQ(choose_guesses(8, 0.0, 0.1), 0);
  EXPECT_GE(choose_guesses(8, 0.5, 0.1), 1);
  EXPECT_EQ(choose_guesses(8, 0.95, 0.05), 8);
  // Dear rows (compute-bound): only near-certain guesses pay, and few.
  EXPECT_EQ(choose_guesses(8, 0.5, 0.8), 0);
  EXPECT_GE(choose_guesses(8, 0.95, 0.5), 2);
  EXPECT_LE(choose_guesses(8, 0.95, 0.5), 8);
  // Never more than there are.
  EXPECT_EQ(choose_guesses(3, 0.99, 0.01), 3);
  EXPECT_EQ(choose_guesses(0, 0.99, 0.01), 0);
  // More odds never mean fewer guesses.
  int last = 0;
  for (double a = 0; a < 1; a += 0.05) {
    const int k = choose_guesses(16, a, 0.3);
    EXPECT_GE(k, last) << a;
    last = k;
  }
}

TEST(DraftPolicy, AcceptanceFollowsWhatIsObserved) {
  AcceptanceEstimate e(0.5);
  for (int i = 0; i < 20; ++i) e.observe(4, 4);
  EXPECT_GT(e.rate(), 0.95);
  for (int i = 0; i < 20; ++i) e.observe(1, 0);
  EXPECT_LT(e.rate(), 0.1);
  e.observe(3, 1);  // right, then wrong: the third was never tested
  EXPECT_GT(e.rate(), 0.1);
  AcceptanceEstimate untouched(0.4);
  untouched.observe(0, 0);
  EXPECT_DOUBLE_EQ(untouched.rate(), 0.4);
}

TEST(DraftPolicy, StepCostModelFitsFixedPlusPerRow) {
  StepCostModel m(0.5);
  EXPECT_DOUBLE_EQ(m.row_share(), 0.5);  // nothing seen
  for (int i = 0; i < 10; ++i) m.observe(1, 0.004);
  EXPECT_DOUBLE_EQ(m.row_share(), 0.5);  // one row count only: no slope
  // fixed 3 ms + 1 ms per row: a row is 1/4 of a one-row step.
  for (int i = 0; i < 40; ++i) {
    m.observe(1, 0.004);
    m.observe(5, 0.008);
    m.observe(9, 0.012);
  }
  EXPECT_NEAR(m.row_share(), 0.25, 0.01);
  m.observe(0, 1.0);  // ignored
  m.observe(3, -1.0);
  EXPECT_NEAR(m.row_share(), 0.25, 0.01);
  // Forgetting: the machine gets compute-bound (every row a full step).
  for (int i = 0; i < 200; ++i) {
    m.observe(1, 0.004);
    m.observe(3, 0.012);
  }
  EXPECT_NEAR(m.row_share(), 1.0, 0.05);
}

}  // namespace
}  // namespace omnibus
