#include "base/status.h"

#include <gtest/gtest.h>

namespace omnibus {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return Status::invalid_argument("not positive: " + std::to_string(v));
  return v;
}

Result<int> doubled(int v) {
  OMNIBUS_ASSIGN_OR_RETURN(int x, parse_positive(v));
  return x * 2;
}

TEST(StatusTest, OkAndError) {
  EXPECT_TRUE(Status::ok().is_ok());
  Status s = Status::corrupt("bad magic");
  EXPECT_FALSE(s.is_ok());
  EXPECT_EQ(s.to_string(), "corrupt: bad magic");
  EXPECT_EQ(s.with_context("file.gguf").message(), "file.gguf: bad magic");
}

TEST(StatusTest, AssignOrReturnPropagates) {
  EXPECT_EQ(doubled(4).value(), 8);
  auto r = doubled(-1);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "not positive: -1");
}

}  // namespace
}  // namespace omnibus
