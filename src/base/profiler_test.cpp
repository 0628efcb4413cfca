#include "base/profiler.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace omnibus {
namespace {

// Reads back what write_trace produced, through a temporary file.
std::string trace_text(const Profiler& p) {
  std::FILE* f = std::tmpfile();
  if (f == nullptr) return "";
  p.write_trace(f);
  std::rewind(f);
  std::string text;
  char buf[4096];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, got);
  std::fclose(f);
  return text;
}

TEST(ProfilerTest, DisabledProfilerRecordsNothing) {
  Profiler p;
  EXPECT_FALSE(p.enabled());
  for (int i = 0; i < 7; ++i) ProfileScope scope(&p, ProfileOp::kAttnQkv);
  p.add_time(ProfileOp::kThreadWait, 123, 1);
  p.record(ProfileOp::kRope, 0, 10);
  EXPECT_EQ(p.stats(ProfilePhase::kPrefill, ProfileOp::kAttnQkv).calls, 0);
  EXPECT_EQ(p.stats(ProfilePhase::kPrefill, ProfileOp::kThreadWait).total_ns, 0);
  EXPECT_EQ(p.stats(ProfilePhase::kPrefill, ProfileOp::kRope).calls, 0);
  EXPECT_TRUE(p.events().empty());
  EXPECT_EQ(p.events().capacity(), 0u);  // no allocation until enable()
  // A null profiler is the usual "off" and must be just as quiet.
  { ProfileScope scope(nullptr, ProfileOp::kAttnQkv); }
  EXPECT_EQ(profile_call(nullptr, ProfileOp::kSampling, [] { return 41 + 1; }), 42);
}

TEST(ProfilerTest, EnabledAccumulatesCountsPerPhaseAndOp) {
  Profiler p;
  p.enable(100);
  p.set_phase(ProfilePhase::kPrefill);
  for (int i = 0; i < 3; ++i) ProfileScope scope(&p, ProfileOp::kFfnDown);
  p.set_phase(ProfilePhase::kDecode);
  for (int i = 0; i < 33; ++i) ProfileScope scope(&p, ProfileOp::kFfnDown);
  p.record(ProfileOp::kAttention, 1000, 3500);
  p.record(ProfileOp::kAttention, 4000, 4250);
  EXPECT_EQ(p.stats(ProfilePhase::kPrefill, ProfileOp::kFfnDown).calls, 3);
  EXPECT_EQ(p.stats(ProfilePhase::kDecode, ProfileOp::kFfnDown).calls, 33);
  EXPECT_EQ(p.stats(ProfilePhase::kDecode, ProfileOp::kAttention).calls, 2);
  EXPECT_EQ(p.stats(ProfilePhase::kDecode, ProfileOp::kAttention).total_ns, 2750);
  EXPECT_EQ(p.stats(ProfilePhase::kPrefill, ProfileOp::kAttention).calls, 0);
  EXPECT_EQ(p.events().size(), 38u);
  EXPECT_EQ(p.dropped_events(), 0);
  // enable() again starts from scratch.
  p.enable(100);
  EXPECT_EQ(p.stats(ProfilePhase::kDecode, ProfileOp::kFfnDown).calls, 0);
  EXPECT_TRUE(p.events().empty());
}

TEST(ProfilerTest, FullBufferDropsEventsButKeepsExactSums) {
  Profiler p;
  p.enable(5);
  for (int i = 0; i < 7; ++i) p.record(ProfileOp::kFfnActivation, i * 10, i * 10 + 4);
  EXPECT_EQ(p.events().size(), 5u);
  EXPECT_EQ(p.dropped_events(), 2);
  EXPECT_EQ(p.stats(ProfilePhase::kPrefill, ProfileOp::kFfnActivation).calls, 7);
  EXPECT_EQ(p.stats(ProfilePhase::kPrefill, ProfileOp::kFfnActivation).total_ns, 28);
}

TEST(ProfilerTest, TraceIsValidJsonWithTheRecordedEvents) {
  Profiler p;
  p.enable(16);
  p.set_phase(ProfilePhase::kDecode);
  p.record(ProfileOp::kAttnQkv, 2000, 2500);
  p.record(ProfileOp::kForward, 1000, 9001);
  p.record(ProfileOp::kSampling, 9500, 9750);
  const nlohmann::json j = nlohmann::json::parse(trace_text(p));
  ASSERT_TRUE(j.contains("traceEvents"));
  std::vector<nlohmann::json> x;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X") x.push_back(e);
  ASSERT_EQ(x.size(), 3u);
  EXPECT_EQ(x[0]["name"], "attn_qkv");
  EXPECT_EQ(x[0]["cat"], "decode");
  EXPECT_DOUBLE_EQ(x[0]["ts"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(x[0]["dur"].get<double>(), 0.5);
  EXPECT_EQ(x[0]["pid"], 1);
  EXPECT_EQ(x[0]["tid"], 0);
  EXPECT_EQ(x[1]["name"], "forward");
  EXPECT_DOUBLE_EQ(x[1]["dur"].get<double>(), 8.001);
  EXPECT_EQ(x[2]["name"], "sampling");
  EXPECT_EQ(j["otherData"]["dropped_events"], 0);
}

TEST(ProfilerTest, EmptyTraceIsValidJson) {
  Profiler p;
  const nlohmann::json j = nlohmann::json::parse(trace_text(p));
  EXPECT_TRUE(j["traceEvents"].is_array());
}

TEST(ProfilerTest, TableSortsByTimeAndNamesTheRemainderOther) {
  Profiler p;
  p.enable(64);
  p.set_phase(ProfilePhase::kDecode);
  p.record(ProfileOp::kForward, 0, 10'000'000);     // 10 ms forward
  p.record(ProfileOp::kFfnGateUp, 0, 6'000'000);        // 6 ms
  p.record(ProfileOp::kRmsNorm, 0, 1'000'000);      // 1 ms, so other = 3 ms
  p.record(ProfileOp::kSampling, 0, 0);
  p.add_time(ProfileOp::kThreadWait, 500'000, 9);
  p.add_time(ProfileOp::kWorkerIdle, 700'000, 1);
  const std::string t = p.format_table();
  const size_t up = t.find("ffn_gate_up"), other = t.find("other"), norm = t.find("rms_norm");
  ASSERT_NE(up, std::string::npos);
  ASSERT_NE(other, std::string::npos);
  ASSERT_NE(norm, std::string::npos);
  EXPECT_LT(up, other);
  EXPECT_LT(other, norm);
  EXPECT_NE(t.find("decode"), std::string::npos);
  EXPECT_EQ(t.find("prefill"), std::string::npos);  // no prefill calls, no section
  EXPECT_NE(t.find("3.000"), std::string::npos) << t;  // other: 3 ms
  EXPECT_NE(t.find("60.0"), std::string::npos) << t;   // ffn_up: 60 %
  EXPECT_NE(t.find("thread_wait"), std::string::npos) << t;
  // The workers' idle time gets its own row after the table, not in "other".
  EXPECT_GT(t.find("worker_idle"), t.find("thread_wait")) << t;
  EXPECT_NE(t.find("0.700"), std::string::npos) << t;
}

// Each scope takes the growth of the wait counter during its own lifetime:
// nested scopes both see an inner wait, siblings split it, and the table
// gets a wait column only when some op waited.
TEST(ProfilerTest, ScopesTakeTheirShareOfTheWaitCounter) {
  Profiler p;
  p.enable(64);
  p.set_phase(ProfilePhase::kDecode);
  uint64_t waited = 1000;  // a running total, as ThreadPool keeps it
  p.set_wait_counter(&waited);
  {
    ProfileScope forward(&p, ProfileOp::kForward);
    {
      ProfileScope qkv(&p, ProfileOp::kAttnQkv);
      waited += 250'000;
    }
    { ProfileScope norm(&p, ProfileOp::kRmsNorm); }
    {
      ProfileScope down(&p, ProfileOp::kFfnDown);
      waited += 50'000;
    }
  }
  EXPECT_EQ(p.stats(ProfilePhase::kDecode, ProfileOp::kAttnQkv).wait_ns, 250'000);
  EXPECT_EQ(p.stats(ProfilePhase::kDecode, ProfileOp::kRmsNorm).wait_ns, 0);
  EXPECT_EQ(p.stats(ProfilePhase::kDecode, ProfileOp::kFfnDown).wait_ns, 50'000);
  EXPECT_EQ(p.stats(ProfilePhase::kDecode, ProfileOp::kForward).wait_ns, 300'000);
  const std::string t = p.format_table();
  EXPECT_NE(t.find("wait ms"), std::string::npos) << t;
  EXPECT_NE(t.find("0.250"), std::string::npos) << t;  // attn_qkv's wait in ms

  // Without a counter nothing is attributed and the column stays away.
  p.set_wait_counter(nullptr);
  p.enable(64);
  p.set_phase(ProfilePhase::kDecode);
  {
    ProfileScope forward(&p, ProfileOp::kForward);
    ProfileScope qkv(&p, ProfileOp::kAttnQkv);
    waited += 1'000'000;
  }
  EXPECT_EQ(p.stats(ProfilePhase::kDecode, ProfileOp::kAttnQkv).wait_ns, 0);
  EXPECT_EQ(p.format_table().find("wait ms"), std::string::npos);
}

}  // namespace
}  // namespace omnibus
