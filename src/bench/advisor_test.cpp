#include "bench/advisor.h"

#include <gtest/gtest.h>

#include <map>

namespace omnibus::bench {
namespace {

// A made-up response surface: goodput peaks at dynamic batching, 16
// sequences, 512 tokens a step, prefix cache on.
RunSummary surface(const ServerSetting& s) {
  RunSummary r;
  r.goodput = 1.0;
  if (s.batching == "dynamic") r.goodput += 0.5;
  if (s.batching == "static") r.goodput -= 0.5;
  if (s.max_seqs == 16) r.goodput += 0.3;
  if (s.max_batched_tokens == 512) r.goodput += 0.2;
  if (!s.prefix_cache) r.goodput -= 0.4;
  r.slo_attainment = r.goodput / 2;
  return r;
}

TEST(Advisor, FindsTheBestAlongEachDimensionAndNeverRepeats) {
  std::map<std::string, int> runs;
  AdvisorSpace space;
  space.batching.push_back("static");
  Advice advice = advise(space, 1e9, [&](const ServerSetting& s) -> Result<RunSummary> {
    ++runs[s.describe()];
    return surface(s);
  });
  ASSERT_GE(advice.best, 0);
  const ServerSetting& best = advice.trials[static_cast<size_t>(advice.best)].setting;
  EXPECT_EQ(best, (ServerSetting{"dynamic", 16, 512, true}));
  for (const auto& [setting, count] : runs) EXPECT_EQ(count, 1) << setting;
  // Default, +2 batching, +2 max-seqs, +2 budgets, +1 prefix cache off.
  EXPECT_EQ(advice.trials.size(), 8u);
  EXPECT_FALSE(advice.budget_cut);
  // The recommended one is the best measured of all trials.
  for (const Trial& t : advice.trials) EXPECT_FALSE(better_result(t.summary, advice.trials[advice.best].summary));
  const std::string table = format_advice(advice, "ttft<=1s");
  EXPECT_NE(table.find("* "), std::string::npos);
  EXPECT_NE(table.find("--batching dynamic --max-seqs 16 --max-batched-tokens 512 --batch-size 16"),
            std::string::npos) << table;
}

TEST(Advisor, FailedTrialsAreReportedAndNeverRecommended) {
  Advice advice = advise(AdvisorSpace{}, 1e9, [](const ServerSetting& s) -> Result<RunSummary> {
    if (s.batching == "dynamic") return Status::io_error("server did not start");
    return surface(s);
  });
  ASSERT_GE(advice.best, 0);
  EXPECT_NE(advice.trials[static_cast<size_t>(advice.best)].setting.batching, "dynamic");
  EXPECT_NE(format_advice(advice, "none").find("failed: server did not start"), std::string::npos);
}

TEST(Advisor, BudgetStopsTheSearch) {
  Advice advice = advise(AdvisorSpace{}, 0.0, [](const ServerSetting& s) -> Result<RunSummary> { return surface(s); });
  EXPECT_EQ(advice.trials.size(), 1u);  // the first always runs
  EXPECT_TRUE(advice.budget_cut);
}

TEST(Advisor, TiesBreakOnLatency) {
  RunSummary a, b;
  a.goodput = b.goodput = 1;
  a.slo_attainment = b.slo_attainment = 1;
  a.ttft.p90 = 0.2;
  b.ttft.p90 = 0.3;
  EXPECT_TRUE(better_result(a, b));
  EXPECT_FALSE(better_result(b, a));
}

TEST(Advisor, WarnsWhenEvenTheBestSettingMissesTheSlo) {
  RunSummary best;
  best.slo_attainment = 0.95;
  EXPECT_EQ(overload_warning(best, 0.9), "");
  best.slo_attainment = 0.04;
  const std::string w = overload_warning(best, 0.9);
  EXPECT_NE(w.find("only 4%"), std::string::npos) << w;
  EXPECT_NE(w.find("Lower --rate"), std::string::npos) << w;
}

}  // namespace
}  // namespace omnibus::bench
