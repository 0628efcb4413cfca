// LineCursor: which lines it holds and how a pace spreads them over steps.
#include "kernels/line_cursor.h"

#include <gtest/gtest.h>

#include <vector>

namespace omnibus {
namespace {

TEST(LineCursorTest, CountsTheLinesOfEachRangeAndJoinsAdjacentOnes) {
  alignas(64) static char buffer[64 * 64];
  LineCursor c;
  c.add(buffer, 64 * 4);            // lines 0-3
  c.add(buffer + 64 * 4, 64 * 2);   // 4-5: joins
  c.add(buffer + 64 * 10 + 1, 10);  // part of line 10: one line
  c.add(buffer + 64 * 20 - 1, 2);   // straddles lines 19 and 20
  c.add(nullptr, 64);               // nothing
  c.add(buffer, 0);                 // nothing
  EXPECT_EQ(c.lines(), 6 + 1 + 2);
  c.clear();
  EXPECT_EQ(c.lines(), 0);
}

TEST(LineCursorTest, APaceIssuesEveryLineOverItsSteps) {
  alignas(64) static char buffer[64 * 200];
  LineCursor c;
  c.add(buffer, 64 * 100);
  c.add(buffer + 64 * 150, 64 * 24);  // a second range
  ASSERT_EQ(c.lines(), 124);
  // 124 lines over steps of total weight 1,000: the first at once, about
  // one in eight steps after, the last by the last step.
  c.pace(1000);
  EXPECT_EQ(c.remaining(), 124);
  c.step(1);
  EXPECT_EQ(c.remaining(), 123);
  for (int i = 1; i < 500; ++i) c.step(1);
  EXPECT_NEAR(static_cast<double>(c.remaining()), 62.0, 1.0);
  // A walk copied out (as the value loops do) and handed back.
  LineCursor::Walk w = c.walk();
  for (int i = 0; i < 250; ++i) w.step(2);
  c.save(w);
  EXPECT_EQ(c.remaining(), 0);
  c.step(100);  // past the end: nothing left to issue, no harm
  EXPECT_EQ(c.remaining(), 0);
}

TEST(LineCursorTest, AnEmptyCursorIssuesNothing) {
  LineCursor c;
  c.pace(10);
  c.step(5);
  EXPECT_EQ(c.lines(), 0);
  EXPECT_EQ(c.remaining(), 0);
}

TEST(LineCursorTest, RangesPastTheLimitAreLeftOut) {
  alignas(64) static char buffer[64 * 400];
  LineCursor c;
  // Every other line: no range joins the last.
  for (int i = 0; i < 200; ++i) c.add(buffer + 128 * i, 64);
  EXPECT_GT(c.lines(), 0);
  EXPECT_LT(c.lines(), 200);
  c.pace(c.lines());
  for (int64_t i = 0; i < c.lines(); ++i) c.step(1);
  EXPECT_EQ(c.remaining(), 0);
}

}  // namespace
}  // namespace omnibus
