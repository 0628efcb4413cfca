// Static and dynamic batching against continuous, on a fake clock.
#include <gtest/gtest.h>

#include "sched/scheduler.h"
#include "sched/scheduler_test_util.h"

namespace omnibus {
namespace {

using sched_test::chunk_of;
using sched_test::FakeModel;
using sched_test::make_kv;
using sched_test::make_seq;
using sched_test::prompt_tokens;

SchedulerConfig policy_config(BatchingPolicy policy, std::int32_t n, double wait_ms = 50) {
  SchedulerConfig c;
  c.max_batched_tokens = 256;
  c.max_seqs = 16;
  c.policy = policy;
  c.batch_size = n;
  c.batch_wait_ms = wait_ms;
  return c;
}

void add(Scheduler& s, FakeModel& m, SeqId id, std::int64_t max_tokens, double arrival = 0) {
  const auto prompt = prompt_tokens(3 + static_cast<int>(id) % 5, static_cast<int>(id));
  m.expect_prompt(id, prompt);
  ASSERT_TRUE(s.add(make_seq(id, prompt, max_tokens, arrival)).is_ok());
}

std::set<SeqId> scheduled(const StepPlan& p) {
  std::set<SeqId> ids;
  for (const ScheduledChunk& c : p.chunks) ids.insert(c.seq);
  return ids;
}

TEST(BatchingPolicyTest, StaticWaitsForNAndRunsTheBatchToCompletion) {
  KvManager kv = make_kv(64, 4);
  Scheduler s(policy_config(BatchingPolicy::kStatic, 3), kv);
  FakeModel m;
  add(s, m, 1, 2);
  add(s, m, 2, 4);
  for (double t : {0.0, 1.0, 100.0}) EXPECT_TRUE(s.schedule(t).empty());  // no timer
  add(s, m, 3, 3);
  StepPlan p = s.schedule(100);
  EXPECT_EQ(scheduled(p), (std::set<SeqId>{1, 2, 3}));
  m.run(s, p);
  add(s, m, 4, 1);
  add(s, m, 5, 1);
  add(s, m, 6, 1);  // a full batch waits, but the running one is not done
  for (int step = 0; step < 3; ++step) {  // seq 2 needs 3 more decodes
    p = s.schedule(100);
    ASSERT_FALSE(p.empty());
    for (SeqId late : {4, 5, 6}) EXPECT_EQ(chunk_of(p, late), nullptr) << "step " << step;
    m.run(s, p);
  }
  EXPECT_EQ(s.num_running(), 0);
  p = s.schedule(100);
  EXPECT_EQ(scheduled(p), (std::set<SeqId>{4, 5, 6}));
  m.run(s, p);  // max_tokens 1: all done
  add(s, m, 7, 1);
  EXPECT_TRUE(s.schedule(200).empty());
  s.flush();  // drain: a batch of one
  p = s.schedule(200);
  EXPECT_EQ(scheduled(p), (std::set<SeqId>{7}));
}

TEST(BatchingPolicyTest, DynamicStartsOnCountOrTimeout) {
  KvManager kv = make_kv(64, 4);
  Scheduler s(policy_config(BatchingPolicy::kDynamic, 3, 50), kv);
  FakeModel m;
  add(s, m, 1, 3, /*arrival=*/1.000);
  EXPECT_TRUE(s.schedule(1.000).empty());
  EXPECT_TRUE(s.schedule(1.049).empty());
  StepPlan p = s.schedule(1.051);  // waited 51 ms >= 50
  EXPECT_EQ(scheduled(p), (std::set<SeqId>{1}));
  m.run(s, p);
  add(s, m, 2, 1, 1.052);
  // Seq 1 runs two more steps; seq 2 waits although its timer expires.
  for (double t : {1.060, 1.200}) {
    p = s.schedule(t);
    EXPECT_EQ(scheduled(p), (std::set<SeqId>{1}));
    m.run(s, p);
  }
  add(s, m, 3, 1, 1.201);
  add(s, m, 4, 1, 1.202);
  add(s, m, 5, 1, 1.203);
  p = s.schedule(1.203);  // 4 waiting >= N: the first 3 start at once
  EXPECT_EQ(scheduled(p), (std::set<SeqId>{2, 3, 4}));
  m.run(s, p);
  EXPECT_TRUE(s.schedule(1.204).empty());  // seq 5 arrived 1 ms ago
  p = s.schedule(1.254);
  EXPECT_EQ(scheduled(p), (std::set<SeqId>{5}));
}

TEST(BatchingPolicyTest, ContinuousAdmitsWhileOthersRun) {
  KvManager kv = make_kv(64, 4);
  Scheduler s(policy_config(BatchingPolicy::kContinuous, 3), kv);
  FakeModel m;
  add(s, m, 1, 5);
  m.run(s, s.schedule(0));  // no waiting for N
  add(s, m, 2, 5);
  const StepPlan p = s.schedule(0);
  EXPECT_EQ(scheduled(p), (std::set<SeqId>{1, 2}));
}

TEST(BatchingPolicyTest, StaticBatchMembersComeBackAfterPreemption) {
  KvManager kv = make_kv(6, 4, /*caching=*/false);
  Scheduler s(policy_config(BatchingPolicy::kStatic, 3), kv);
  FakeModel m;
  for (SeqId id = 1; id <= 3; ++id) add(s, m, id, 10);
  add(s, m, 4, 2);  // next batch
  std::set<SeqId> seen_before_4;
  int steps = 0;
  while (s.find(1) || s.find(2) || s.find(3)) {
    const StepPlan p = s.schedule(0);
    EXPECT_EQ(chunk_of(p, 4), nullptr);
    for (SeqId id : scheduled(p)) seen_before_4.insert(id);
    m.run(s, p);
    ASSERT_LT(++steps, 500);
  }
  EXPECT_GT(s.stats().preemptions, 0);
  EXPECT_EQ(seen_before_4, (std::set<SeqId>{1, 2, 3}));
  for (SeqId id = 1; id <= 3; ++id) EXPECT_EQ(m.known(id).size(), 3 + id % 5 + 10u);
}

}  // namespace
}  // namespace omnibus
