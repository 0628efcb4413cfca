#include "sched/scheduler.h"

#include <gtest/gtest.h>

#include "sched/scheduler_test_util.h"

namespace omnibus {
namespace {

using sched_test::chunk_of;
using sched_test::FakeModel;
using sched_test::make_kv;
using sched_test::make_seq;
using sched_test::prompt_tokens;

SchedulerConfig continuous(std::int64_t budget, std::int32_t max_seqs) {
  SchedulerConfig c;
  c.max_batched_tokens = budget;
  c.max_seqs = max_seqs;
  return c;
}

// Adds a sequence to both the scheduler and the fake model.
void add(Scheduler& s, FakeModel& m, SeqId id, int prompt_len, std::int64_t max_tokens,
         int seed = -1, double arrival = 0) {
  const auto prompt = prompt_tokens(prompt_len, seed < 0 ? static_cast<int>(id) : seed);
  m.expect_prompt(id, prompt);
  const Status st = s.add(make_seq(id, prompt, max_tokens, arrival));
  ASSERT_TRUE(st.is_ok()) << st.to_string();
}

TEST(SchedulerConfigTest, ValidatesLimitsAndParsesPolicy) {
  EXPECT_TRUE(validate_scheduler_config({}).is_ok());
  EXPECT_FALSE(validate_scheduler_config({.max_batched_tokens = 0}).is_ok());
  EXPECT_FALSE(validate_scheduler_config({.max_seqs = 0}).is_ok());
  EXPECT_FALSE(validate_scheduler_config({.batch_size = 0}).is_ok());
  EXPECT_FALSE(validate_scheduler_config({.batch_wait_ms = -1}).is_ok());
  EXPECT_EQ(*parse_batching_policy("dynamic"), BatchingPolicy::kDynamic);
  EXPECT_EQ(*parse_batching_policy("static"), BatchingPolicy::kStatic);
  EXPECT_EQ(*parse_batching_policy("continuous"), BatchingPolicy::kContinuous);
  EXPECT_FALSE(parse_batching_policy("greedy").is_ok());
}

TEST(SchedulerTest, AddRejectsWhatCanNeverRun) {
  KvManager kv = make_kv(4, 4);  // 16 tokens in all
  Scheduler s(continuous(64, 4), kv);
  const Status too_big = s.add(make_seq(1, prompt_tokens(10, 1), 7));  // 17 > 16
  EXPECT_EQ(too_big.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_big.message().find("17"), std::string::npos) << too_big.message();
  EXPECT_TRUE(s.add(make_seq(2, prompt_tokens(10, 2), 6)).is_ok());  // exactly 16
  EXPECT_EQ(s.add(make_seq(2, prompt_tokens(3, 2), 1)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.add(make_seq(3, {}, 1)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.add(make_seq(4, prompt_tokens(3, 4), 0)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.num_waiting(), 1);
  EXPECT_EQ(s.abort(99).code(), StatusCode::kNotFound);
}

TEST(SchedulerTest, OneSequenceFromPrefillToLength) {
  KvManager kv = make_kv(8, 4);
  Scheduler s(continuous(100, 4), kv);
  FakeModel m;
  add(s, m, 5, 7, 3);
  StepPlan p = s.schedule(0);
  ASSERT_EQ(p.chunks.size(), 1u);
  EXPECT_EQ(p.chunks[0].start_pos, 0);
  EXPECT_EQ(p.chunks[0].tokens.size(), 7u);
  EXPECT_TRUE(p.chunks[0].needs_logits);
  EXPECT_EQ(p.chunks[0].block_table.size(), 2u);  // 7 tokens in blocks of 4
  m.run(s, p);
  for (std::int64_t pos : {7, 8}) {
    p = s.schedule(0);
    ASSERT_EQ(p.chunks.size(), 1u);
    EXPECT_EQ(p.chunks[0].start_pos, pos);
    ASSERT_EQ(p.chunks[0].tokens.size(), 1u);
    EXPECT_EQ(p.chunks[0].tokens[0], sched_test::fake_token(5, pos));
    EXPECT_TRUE(p.chunks[0].needs_logits);
    m.run(s, p);
  }
  EXPECT_EQ(s.find(5), nullptr);
  EXPECT_EQ(kv.stats().blocks_used, 0);
  p = s.schedule(0);
  EXPECT_TRUE(p.empty());
  ASSERT_EQ(p.finished.size(), 1u);
  EXPECT_EQ(p.finished[0].seq, 5);
  EXPECT_EQ(p.finished[0].reason, FinishReason::kLength);
  EXPECT_EQ(p.finished[0].num_generated, 3);
  EXPECT_TRUE(s.schedule(0).finished.empty());  // reported once
}

TEST(SchedulerTest, StopFlagFinishesEarly) {
  KvManager kv = make_kv(8, 4);
  Scheduler s(continuous(100, 4), kv);
  FakeModel m;
  add(s, m, 1, 3, 10);
  m.run(s, s.schedule(0));
  m.run(s, s.schedule(0), {1});
  const StepPlan p = s.schedule(0);
  ASSERT_EQ(p.finished.size(), 1u);
  EXPECT_EQ(p.finished[0].reason, FinishReason::kStop);
  EXPECT_EQ(p.finished[0].num_generated, 2);
  EXPECT_EQ(kv.stats().blocks_used, 0);
}

// A long prompt is split over steps while the sequences already decoding
// get their token every step, first in the plan.
TEST(SchedulerTest, ChunkedPrefillInterleavesWithDecodes) {
  KvManager kv = make_kv(64, 4);
  Scheduler s(continuous(8, 8), kv);
  FakeModel m;
  add(s, m, 1, 3, 20);
  add(s, m, 2, 2, 20);
  m.run(s, s.schedule(0));  // both prefill whole: 5 tokens
  add(s, m, 3, 33, 5);
  std::int64_t next_start = 0;
  for (int step = 0; step < 6; ++step) {
    const StepPlan p = s.schedule(0);
    ASSERT_EQ(p.chunks.size(), 3u) << "step " << step;
    EXPECT_EQ(p.chunks[0].seq, 1);
    EXPECT_EQ(p.chunks[1].seq, 2);
    EXPECT_EQ(p.chunks[0].tokens.size(), 1u);
    EXPECT_EQ(p.chunks[1].tokens.size(), 1u);
    const ScheduledChunk& c = p.chunks[2];
    EXPECT_EQ(c.seq, 3);
    EXPECT_EQ(c.start_pos, next_start);
    EXPECT_EQ(c.tokens.size(), step < 5 ? 6u : 3u);  // 33 = 5*6 + 3
    EXPECT_EQ(c.needs_logits, step == 5);
    EXPECT_LE(p.num_tokens(), 8);
    next_start += static_cast<std::int64_t>(c.tokens.size());
    m.run(s, p);
  }
  const StepPlan p = s.schedule(0);  // now all three decode
  ASSERT_EQ(p.chunks.size(), 3u);
  for (const ScheduledChunk& c : p.chunks) EXPECT_EQ(c.tokens.size(), 1u);
  EXPECT_EQ(p.chunks[2].start_pos, 33);  // the token sampled after the prompt
}

// The admission limit caps new admissions only (clamped to [1, max_seqs]);
// lowering it below the running count stops no one already running.
TEST(SchedulerTest, AdmissionLimitCapsAdmissionsNotRunningSequences) {
  KvManager kv = make_kv(200, 4);
  Scheduler s(continuous(64, 4), kv);
  FakeModel m;
  EXPECT_EQ(s.admission_limit(), 4);
  s.set_admission_limit(99);
  EXPECT_EQ(s.admission_limit(), 4);
  s.set_admission_limit(2);
  for (int id = 0; id < 6; ++id) add(s, m, id, 3, 20);
  StepPlan p = s.schedule(0);
  EXPECT_EQ(s.num_running(), 2);
  m.run(s, p);
  s.set_admission_limit(4);
  p = s.schedule(0);
  EXPECT_EQ(s.num_running(), 4);
  m.run(s, p);
  s.set_admission_limit(0);  // clamps to 1: the 4 running keep running
  EXPECT_EQ(s.admission_limit(), 1);
  p = s.schedule(0);
  EXPECT_EQ(s.num_running(), 4);
  EXPECT_EQ(p.chunks.size(), 4u);
  m.run(s, p);
  int steps = 0;
  while (s.has_unfinished()) {
    p = s.schedule(0);
    EXPECT_LE(s.num_running(), 4);
    m.run(s, p);
    ASSERT_LT(++steps, 1000);
  }
}

TEST(SchedulerTest, RespectsBudgetAndMaxSeqs) {
  KvManager kv = make_kv(200, 4);
  Scheduler s(continuous(7, 3), kv);
  FakeModel m;
  for (int id = 0; id < 10; ++id) add(s, m, id, 1 + (id * 5) % 11, 1 + id % 4);
  int finished = 0, steps = 0;
  bool saw_full = false;
  while (s.has_unfinished()) {
    const StepPlan p = s.schedule(0);
    finished += static_cast<int>(p.finished.size());
    ASSERT_FALSE(p.empty());
    EXPECT_LE(p.num_tokens(), 7);
    EXPECT_LE(s.num_running(), 3);
    EXPECT_LE(p.chunks.size(), 3u);
    saw_full = saw_full || s.num_running() == 3;
    m.run(s, p);
    ASSERT_LT(++steps, 1000);
  }
  finished += static_cast<int>(s.schedule(0).finished.size());
  EXPECT_EQ(finished, 10);
  EXPECT_TRUE(saw_full);
  EXPECT_EQ(kv.stats().blocks_used, 0);
}

TEST(SchedulerTest, PrefixCacheSkipsCachedTokensAtAdmission) {
  for (bool caching : {true, false}) {
    KvManager kv = make_kv(32, 4, caching);
    Scheduler s(continuous(64, 4), kv);
    FakeModel m;
    add(s, m, 1, 13, 2, /*seed=*/9);
    m.run(s, s.schedule(0));
    // Same 13-token prompt: blocks 0..2 (12 tokens) are cached; the 13th
    // token must still run to get logits.
    add(s, m, 2, 13, 2, /*seed=*/9);
    const StepPlan p = s.schedule(0);
    const ScheduledChunk* c = chunk_of(p, 2);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->start_pos, caching ? 12 : 0);
    EXPECT_EQ(c->tokens.size(), caching ? 1u : 13u);
    EXPECT_EQ(s.stats().prefix_hit_tokens, caching ? 12 : 0);
    if (caching) {  // the shared blocks are the same ids as sequence 1's
      const ScheduledChunk* c1 = chunk_of(p, 1);
      ASSERT_NE(c1, nullptr);
      for (int b = 0; b < 3; ++b) EXPECT_EQ(c->block_table[b], c1->block_table[b]);
    }
    m.run(s, p);
    EXPECT_TRUE(kv.check_invariants().is_ok());
  }
}

// 3 sequences of up to 5+10 tokens (4 blocks each) in a 6-block pool:
// they cannot all hold their K/V, so the newest are preempted, recompute
// (from position 0 without prefix caching; from a block boundary with it,
// as their full blocks may still be cached) and still produce exactly what
// they would have.
void run_preemption_case(bool caching) {
  KvManager kv = make_kv(6, 4, caching);
  Scheduler s(continuous(64, 8), kv);
  FakeModel m;
  for (SeqId id = 1; id <= 3; ++id) add(s, m, id, 5, 10);
  std::set<SeqId> just_preempted;
  int recomputes = 0, steps = 0;
  while (s.has_unfinished()) {
    const StepPlan p = s.schedule(0);
    ASSERT_TRUE(kv.check_invariants().is_ok());
    for (const ScheduledChunk& c : p.chunks) {
      if (just_preempted.erase(c.seq)) {
        if (caching)
          EXPECT_EQ(c.start_pos % 4, 0) << "seq " << c.seq;
        else
          EXPECT_EQ(c.start_pos, 0) << "seq " << c.seq;
        ++recomputes;
      }
    }
    for (SeqId v : p.preempted) {
      EXPECT_EQ(chunk_of(p, v), nullptr);
      EXPECT_EQ(s.find(v)->status, SeqStatus::kPreempted);
      EXPECT_EQ(s.find(v)->num_computed_tokens, 0);
      for (const ScheduledChunk& c : p.chunks)  // victims are the newest admitted
        EXPECT_LT(s.find(c.seq)->admit_order, s.find(v)->admit_order);
      just_preempted.insert(v);
    }
    m.run(s, p);
    ASSERT_LT(++steps, 1000);
  }
  EXPECT_GT(s.stats().preemptions, 0);
  EXPECT_GT(recomputes, 0);
  for (SeqId id = 1; id <= 3; ++id) {
    const std::vector<std::int32_t>& k = m.known(id);
    ASSERT_EQ(k.size(), 15u) << "seq " << id;  // 5 prompt + 10 generated
    for (std::int64_t pos = 5; pos < 15; ++pos) EXPECT_EQ(k[pos], sched_test::fake_token(id, pos));
  }
  EXPECT_EQ(kv.stats().blocks_used, 0);
  EXPECT_EQ(kv.stats().blocks_free, 6);
}

TEST(SchedulerTest, PreemptsNewestAndRecomputesFromScratch) { run_preemption_case(false); }
TEST(SchedulerTest, PreemptsNewestAndRecomputesWithPrefixCache) { run_preemption_case(true); }

TEST(SchedulerTest, AbortFreesBlocksAtNextSchedule) {
  KvManager kv = make_kv(16, 4);
  Scheduler s(continuous(64, 1), kv);  // one runs, one waits
  FakeModel m;
  add(s, m, 1, 9, 50);
  add(s, m, 2, 4, 50);
  m.run(s, s.schedule(0));
  EXPECT_EQ(kv.stats().blocks_used, 3);
  ASSERT_TRUE(s.abort(1).is_ok());
  ASSERT_TRUE(s.abort(2).is_ok());
  EXPECT_EQ(kv.stats().blocks_used, 3);  // deferred to the next step
  const StepPlan p = s.schedule(0);
  EXPECT_TRUE(p.empty());
  ASSERT_EQ(p.finished.size(), 2u);
  EXPECT_EQ(p.finished[0].seq, 1);
  EXPECT_EQ(p.finished[0].reason, FinishReason::kAborted);
  EXPECT_EQ(p.finished[0].num_generated, 1);
  EXPECT_EQ(p.finished[1].seq, 2);
  EXPECT_EQ(kv.stats().blocks_used, 0);
  EXPECT_FALSE(s.has_unfinished());
  EXPECT_TRUE(kv.check_invariants().is_ok());
}

}  // namespace
}  // namespace omnibus
