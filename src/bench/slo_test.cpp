#include "bench/slo.h"

#include <gtest/gtest.h>

namespace omnibus::bench {
namespace {

RequestRecord finished(double ttft, double e2e, int64_t tokens) {
  RequestRecord r;
  r.ok = true;
  r.sent_s = 1;
  r.first_token_s = 1 + ttft;
  r.done_s = 1 + e2e;
  r.output_tokens = tokens;
  r.chunk_s = {r.first_token_s, r.done_s};
  return r;
}

TEST(Slo, ParsesUnitsAndNames) {
  Result<Slo> slo = parse_slo("ttft=500ms, tpot=0.05s,itl=250us,e2e=3");
  ASSERT_TRUE(slo.is_ok()) << slo.status().to_string();
  EXPECT_DOUBLE_EQ(*slo->ttft_s, 0.5);
  EXPECT_DOUBLE_EQ(*slo->tpot_s, 0.05);
  EXPECT_DOUBLE_EQ(*slo->itl_s, 250e-6);
  EXPECT_DOUBLE_EQ(*slo->e2e_s, 0.003);
  EXPECT_EQ(slo->describe(), "ttft<=500ms tpot<=50ms itl<=0.25ms e2e<=3ms");
  EXPECT_TRUE(parse_slo("")->empty());
  EXPECT_EQ(parse_slo("")->describe(), "none");
}

TEST(Slo, BadTextNamesTheProblem) {
  for (const char* bad : {"ttft", "ttft=", "ttft=-5ms", "ttft=abc", "latency=5ms", "ttft=1s,ttft=2s", "ttft=1h"}) {
    Result<Slo> slo = parse_slo(bad);
    ASSERT_FALSE(slo.is_ok()) << bad;
    EXPECT_FALSE(slo.status().message().empty());
  }
  EXPECT_NE(parse_slo("latency=5ms").status().message().find("know: ttft, tpot, itl, e2e"), std::string::npos);
}

TEST(Slo, MetByChecksEveryObjective) {
  Slo slo = *parse_slo("ttft=100ms,tpot=10ms");
  // TTFT 50 ms, then 9 more tokens over 81 ms: TPOT 9 ms.
  EXPECT_TRUE(slo.met_by(finished(0.05, 0.131, 10)));
  EXPECT_FALSE(slo.met_by(finished(0.15, 0.231, 10)));  // TTFT too slow
  EXPECT_FALSE(slo.met_by(finished(0.05, 0.2, 10)));    // TPOT 16.7 ms
  RequestRecord failed = finished(0.01, 0.02, 3);
  failed.ok = false;
  EXPECT_FALSE(slo.met_by(failed));
  EXPECT_TRUE(Slo{}.met_by(finished(5, 10, 2)));
  Slo itl = *parse_slo("itl=50ms");
  EXPECT_FALSE(itl.met_by(finished(0.01, 0.2, 2)));  // one gap of 190 ms
}

}  // namespace
}  // namespace omnibus::bench
