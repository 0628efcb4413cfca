// Randomized simulation: 1,000 requests of random lengths, shared prefixes,
// random stops and aborts, in a pool small enough to force preemption. Every
// step checks the scheduler's and the KV manager's invariants; at the end
// every request has ended exactly once and every block is free.
#include <gtest/gtest.h>

#include <random>

#include "sched/scheduler.h"
#include "sched/scheduler_test_util.h"

namespace omnibus {
namespace {

using sched_test::FakeModel;
using sched_test::make_kv;
using sched_test::make_seq;

constexpr int kRequests = 1000;
constexpr std::int32_t kBlockSize = 4;
constexpr std::int32_t kBlocks = 24;  // 96 tokens
constexpr std::int64_t kBudget = 19;
constexpr std::int32_t kMaxSeqs = 7;

struct SimCase {
  BatchingPolicy policy;
  bool caching;
  unsigned seed;
};

class SchedulerSim {
 public:
  explicit SchedulerSim(const SimCase& c)
      : case_(c),
        kv_(make_kv(kBlocks, kBlockSize, c.caching)),
        sched_({kBudget, kMaxSeqs, c.policy, /*batch_size=*/5, /*batch_wait_ms=*/3}, kv_),
        rng_(c.seed) {}

  void run() {
    double now = 0;
    int steps = 0;
    while (added_ < kRequests || sched_.has_unfinished()) {
      arrive(now);
      if (added_ == kRequests) sched_.flush();  // static: the last batch may be short
      maybe_abort();
      const StepPlan plan = sched_.schedule(now);
      check_plan(plan);
      if (::testing::Test::HasFatalFailure()) return;
      model_.run(sched_, plan, stops_for(plan));
      if (::testing::Test::HasFatalFailure()) return;
      now += 0.001;
      ASSERT_LT(++steps, 200000) << "no progress";
    }
    record_finished(sched_.schedule(now));
    check_end();
  }

 private:
  void arrive(double now) {
    std::uniform_int_distribution<int> count(0, 2);
    for (int n = count(rng_); n > 0 && added_ < kRequests; --n) add_one(now);
  }

  // Prompts start with one of 4 shared prefixes, so the prefix cache hits.
  void add_one(double now) {
    const SeqId id = added_++;
    std::uniform_int_distribution<int> which(0, 3), shared(0, 24), tail(1, 56), gen(1, 40);
    std::vector<std::int32_t> prompt;
    const int w = which(rng_);
    for (int i = shared(rng_); i > 0; --i) prompt.push_back(10 + w * 100 + i);
    for (int i = tail(rng_); i > 0; --i) prompt.push_back(5000 + static_cast<int>(id) * 64 + i);
    const std::int64_t max_tokens = gen(rng_);
    const Status st = sched_.add(make_seq(id, prompt, max_tokens, now));
    const bool fits = static_cast<std::int64_t>(prompt.size()) + max_tokens <= kBlocks * kBlockSize;
    ASSERT_EQ(st.is_ok(), fits) << st.to_string();
    if (!fits) {
      ++rejected_;
      return;
    }
    model_.expect_prompt(id, prompt);
    prompt_len_[id] = static_cast<std::int64_t>(prompt.size());
    max_tokens_[id] = max_tokens;
    live_.push_back(id);
  }

  void maybe_abort() {
    if (live_.empty() || std::uniform_int_distribution<int>(0, 99)(rng_) >= 3) return;
    const SeqId id = live_[std::uniform_int_distribution<std::size_t>(0, live_.size() - 1)(rng_)];
    if (sched_.find(id) != nullptr) {
      ASSERT_TRUE(sched_.abort(id).is_ok());
      aborted_.insert(id);
    }
  }

  std::set<SeqId> stops_for(const StepPlan& plan) {
    std::set<SeqId> stops;
    for (const ScheduledChunk& c : plan.chunks)
      if (c.needs_logits && std::uniform_int_distribution<int>(0, 99)(rng_) < 2) {
        stops.insert(c.seq);
        stopped_.insert(c.seq);
      }
    return stops;
  }

  void check_plan(const StepPlan& plan) {
    const Status st = kv_.check_invariants();
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_LE(plan.num_tokens(), kBudget);
    ASSERT_LE(sched_.num_running(), kMaxSeqs);
    std::set<SeqId> seen;
    bool prefill_seen = false;
    for (const ScheduledChunk& c : plan.chunks) {
      ASSERT_TRUE(seen.insert(c.seq).second) << "seq " << c.seq << " scheduled twice";
      ASSERT_EQ(aborted_.count(c.seq), 0u) << "aborted seq " << c.seq << " scheduled";
      ASSERT_FALSE(c.tokens.empty());
      const std::int64_t end = c.start_pos + static_cast<std::int64_t>(c.tokens.size());
      ASSERT_GE(static_cast<std::int64_t>(c.block_table.size()) * kBlockSize, end);
      const bool decode = c.tokens.size() == 1 && c.needs_logits &&
                          static_cast<std::int64_t>(model_.known(c.seq).size()) > prompt_len_[c.seq];
      if (!decode) prefill_seen = true;
      ASSERT_TRUE(!decode || !prefill_seen) << "decode of seq " << c.seq << " after a prefill";
    }
    for (SeqId v : plan.preempted) ASSERT_EQ(seen.count(v), 0u);
    preemptions_ += static_cast<std::int64_t>(plan.preempted.size());
    record_finished(plan);
  }

  void record_finished(const StepPlan& plan) {
    for (const FinishedSeq& f : plan.finished) {
      ASSERT_TRUE(ended_.insert(f.seq).second) << "seq " << f.seq << " finished twice";
      const std::int64_t generated =
          static_cast<std::int64_t>(model_.known(f.seq).size()) - prompt_len_[f.seq];
      ASSERT_EQ(f.num_generated, generated) << "seq " << f.seq;
      switch (f.reason) {
        case FinishReason::kLength: ASSERT_EQ(generated, max_tokens_[f.seq]); break;
        case FinishReason::kStop: ASSERT_EQ(stopped_.count(f.seq), 1u); break;
        case FinishReason::kAborted: ASSERT_EQ(aborted_.count(f.seq), 1u); break;
        default: FAIL() << "seq " << f.seq << " ended " << finish_reason_name(f.reason);
      }
      ++by_reason_[f.reason];
    }
  }

  void check_end() {
    EXPECT_EQ(static_cast<int>(ended_.size()) + rejected_, kRequests);
    EXPECT_EQ(kv_.stats().blocks_used, 0);
    EXPECT_EQ(kv_.stats().blocks_free, kBlocks);
    EXPECT_TRUE(kv_.check_invariants().is_ok());
    // The workload is meant to exercise every path; if not, the test is weak.
    EXPECT_GT(rejected_, 0);
    EXPECT_GT(by_reason_[FinishReason::kLength], 0);
    EXPECT_GT(by_reason_[FinishReason::kStop], 0);
    EXPECT_GT(by_reason_[FinishReason::kAborted], 0);
    EXPECT_GT(preemptions_, 0);
    EXPECT_EQ(preemptions_, sched_.stats().preemptions);
    if (case_.caching) {
      EXPECT_GT(sched_.stats().prefix_hit_tokens, 0);
    }
  }

  SimCase case_;
  KvManager kv_;
  Scheduler sched_;
  FakeModel model_;
  std::mt19937 rng_;
  int added_ = 0;
  int rejected_ = 0;
  std::int64_t preemptions_ = 0;
  std::vector<SeqId> live_;
  std::map<SeqId, std::int64_t> prompt_len_, max_tokens_;
  std::set<SeqId> aborted_, stopped_, ended_;
  std::map<FinishReason, int> by_reason_;
};

std::string sim_case_name(const ::testing::TestParamInfo<SimCase>& info) {
  const char* policy = info.param.policy == BatchingPolicy::kStatic    ? "static"
                       : info.param.policy == BatchingPolicy::kDynamic ? "dynamic"
                                                                       : "continuous";
  return std::string(policy) + (info.param.caching ? "_cached" : "_uncached");
}

class SchedulerSimTest : public ::testing::TestWithParam<SimCase> {};

TEST_P(SchedulerSimTest, RandomWorkloadRunsToCompletion) {
  SchedulerSim sim(GetParam());
  sim.run();
}

INSTANTIATE_TEST_SUITE_P(
    Policies, SchedulerSimTest,
    ::testing::Values(SimCase{BatchingPolicy::kContinuous, true, 1},
                      SimCase{BatchingPolicy::kContinuous, false, 2},
                      SimCase{BatchingPolicy::kDynamic, true, 3},
                      SimCase{BatchingPolicy::kStatic, true, 4}),
    sim_case_name);

}  // namespace
}  // namespace omnibus
