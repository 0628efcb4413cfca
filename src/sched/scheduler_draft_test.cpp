// Speculative decoding in the scheduler: a decoding sequence's guesses ride
// along in its chunk when the budget, the pool and max_tokens allow; after
// the step only the guesses the samples confirmed are committed.
#include <gtest/gtest.h>

#include "sched/scheduler.h"
#include "sched/scheduler_test_util.h"

namespace omnibus {
namespace {

using sched_test::make_kv;
using sched_test::make_seq;
using sched_test::prompt_tokens;

SchedulerConfig budget_of(std::int64_t budget) {
  SchedulerConfig c;
  c.max_batched_tokens = budget;
  c.max_seqs = 4;
  return c;
}

// Runs the prompt (5 tokens) and samples `first`: the sequence is decoding.
void start_decoding(Scheduler& s, SeqId id, std::int32_t first = 50) {
  StepPlan p = s.schedule(0);
  ASSERT_EQ(p.chunks.size(), 1u);
  const SampledToken t{id, first, false};
  ASSERT_TRUE(s.on_step_done(p, std::span(&t, 1)).is_ok());
  ASSERT_TRUE(s.find(id)->is_decoding());
}

TEST(SchedulerDraftTest, GuessesRideAlongAndOnlyConfirmedOnesAreCommitted) {
  KvManager kv = make_kv(16, 4);
  Scheduler s(budget_of(64), kv);
  ASSERT_TRUE(s.add(make_seq(1, prompt_tokens(5, 1), 20)).is_ok());
  start_decoding(s, 1);
  const std::vector<std::int32_t> guesses = {60, 61, 62, 63};
  s.set_draft(1, guesses);
  StepPlan p = s.schedule(0);
  ASSERT_EQ(p.chunks.size(), 1u);
  const ScheduledChunk& c = p.chunks[0];
  EXPECT_EQ(c.start_pos, 5);
  EXPECT_EQ(c.tokens, (std::vector<std::int32_t>{50, 60, 61, 62, 63}));
  EXPECT_EQ(c.num_draft, 4);
  EXPECT_EQ(c.logits_rows(), 5);
  EXPECT_EQ(c.block_table.size(), 3u);  // positions up to 9 in blocks of 4
  // 60 and 61 confirmed, then 70 differed from 62.
  const std::vector<SampledToken> samples = {{1, 60, false}, {1, 61, false}, {1, 70, false}};
  ASSERT_TRUE(s.on_step_done(p, samples).is_ok());
  const SequenceState* seq = s.find(1);
  EXPECT_EQ(seq->generated, (std::vector<std::int32_t>{50, 60, 61, 70}));
  EXPECT_EQ(seq->num_computed_tokens, 8);  // prompt 5 + 50, 60, 61
  EXPECT_EQ(kv.num_tokens(1), 8);
  EXPECT_TRUE(seq->is_decoding());
  // The guess is used once: the next step without a new one is plain.
  p = s.schedule(0);
  ASSERT_EQ(p.chunks.size(), 1u);
  EXPECT_EQ(p.chunks[0].tokens, (std::vector<std::int32_t>{70}));
  EXPECT_EQ(p.chunks[0].num_draft, 0);
  ASSERT_TRUE(kv.check_invariants().is_ok());
}

TEST(SchedulerDraftTest, GuessesFitTheBudgetThePoolAndMaxTokens) {
  {  // budget: 3 tokens a step leave room for 2 guesses
    KvManager kv = make_kv(16, 4);
    Scheduler s(budget_of(3), kv);
    ASSERT_TRUE(s.add(make_seq(1, prompt_tokens(3, 1), 20)).is_ok());
    start_decoding(s, 1);
    s.set_draft(1, std::vector<std::int32_t>{1, 2, 3, 4, 5});
    EXPECT_EQ(s.schedule(0).chunks[0].num_draft, 2);
  }
  {  // max_tokens 3 with one generated: one more token and one guess at most
    KvManager kv = make_kv(16, 4);
    Scheduler s(budget_of(64), kv);
    ASSERT_TRUE(s.add(make_seq(1, prompt_tokens(5, 1), 3)).is_ok());
    start_decoding(s, 1);
    s.set_draft(1, std::vector<std::int32_t>{1, 2, 3, 4, 5});
    EXPECT_EQ(s.schedule(0).chunks[0].num_draft, 1);
  }
  {  // a sequence that is still prefilling ignores guesses
    KvManager kv = make_kv(16, 4);
    Scheduler s(budget_of(64), kv);
    ASSERT_TRUE(s.add(make_seq(1, prompt_tokens(5, 1), 3)).is_ok());
    s.set_draft(1, std::vector<std::int32_t>{1, 2});
    EXPECT_EQ(s.schedule(0).chunks[0].num_draft, 0);
  }
}

TEST(SchedulerDraftTest, GuessesTakeOnlyFreeBlocksAndPreemptNoOne) {
  // Two decoding sequences holding the pool's two blocks of 4 between them:
  // each has room in its block for one guess; the rest would need blocks
  // that only a preemption could free, so they are dropped.
  KvManager kv = make_kv(2, 4);
  Scheduler s(budget_of(64), kv);
  ASSERT_TRUE(s.add(make_seq(1, prompt_tokens(2, 1), 6)).is_ok());
  ASSERT_TRUE(s.add(make_seq(2, prompt_tokens(2, 2), 6)).is_ok());
  StepPlan p = s.schedule(0);
  ASSERT_EQ(p.chunks.size(), 2u);
  const std::vector<SampledToken> first = {{1, 50, false}, {2, 51, false}};
  ASSERT_TRUE(s.on_step_done(p, first).is_ok());
  s.set_draft(1, std::vector<std::int32_t>{9, 9, 9});
  s.set_draft(2, std::vector<std::int32_t>{9, 9, 9});
  p = s.schedule(0);
  ASSERT_EQ(p.chunks.size(), 2u);
  EXPECT_EQ(p.chunks[0].num_draft, 1);  // positions 2 (the newest token) and 3 fill the block
  EXPECT_EQ(p.chunks[1].num_draft, 1);
  EXPECT_TRUE(p.preempted.empty());
  ASSERT_TRUE(kv.check_invariants().is_ok());
}

TEST(SchedulerDraftTest, GuessesNeverCrowdOutAnotherSequencesToken) {
  // Budget 8, two decoding sequences guessing 8 each: both get their own
  // token first; the guesses share what is left.
  KvManager kv = make_kv(32, 4);
  Scheduler s(budget_of(8), kv);
  ASSERT_TRUE(s.add(make_seq(1, prompt_tokens(3, 1), 40)).is_ok());
  ASSERT_TRUE(s.add(make_seq(2, prompt_tokens(3, 2), 40)).is_ok());
  StepPlan p = s.schedule(0);
  ASSERT_EQ(p.chunks.size(), 2u);
  const std::vector<SampledToken> first = {{1, 50, false}, {2, 51, false}};
  ASSERT_TRUE(s.on_step_done(p, first).is_ok());
  for (int step = 0; step < 3; ++step) {
    s.set_draft(1, std::vector<std::int32_t>(8, 9));
    s.set_draft(2, std::vector<std::int32_t>(8, 9));
    p = s.schedule(0);
    ASSERT_EQ(p.chunks.size(), 2u) << "step " << step;
    EXPECT_EQ(p.num_tokens(), 8);
    EXPECT_EQ(p.chunks[0].num_draft + p.chunks[1].num_draft, 6);
    std::vector<SampledToken> none;  // every guess wrong: one new token each
    for (const ScheduledChunk& c : p.chunks) none.push_back({c.seq, 70 + step, false});
    ASSERT_TRUE(s.on_step_done(p, none).is_ok());
  }
}

TEST(SchedulerDraftTest, GuessBlocksNeverPreemptAnotherSequence) {
  // Five blocks of 4. Sequence 1 (4-token prompt) and sequence 2 (8-token
  // prompt) hold three; the next step each needs a new block for its own
  // token. Sequence 1's guesses could take both free blocks if handed out
  // first, and sequence 2 would be preempted; last, they get only the room
  // left in sequence 1's new block.
  KvManager kv = make_kv(5, 4);
  Scheduler s(budget_of(64), kv);
  ASSERT_TRUE(s.add(make_seq(1, prompt_tokens(4, 1), 10)).is_ok());
  ASSERT_TRUE(s.add(make_seq(2, prompt_tokens(8, 2), 10)).is_ok());
  StepPlan p = s.schedule(0);
  const std::vector<SampledToken> first = {{1, 50, false}, {2, 51, false}};
  ASSERT_TRUE(s.on_step_done(p, first).is_ok());
  ASSERT_EQ(kv.stats().blocks_used, 3);
  s.set_draft(1, std::vector<std::int32_t>{9, 9, 9, 9, 9, 9, 9, 9});
  p = s.schedule(0);
  EXPECT_TRUE(p.preempted.empty());
  ASSERT_EQ(p.chunks.size(), 2u);
  EXPECT_EQ(p.chunks[1].seq, 2);
  EXPECT_EQ(p.chunks[1].num_draft, 0);
  // Sequence 1: its token at position 4, guesses at 5, 6 and 7.
  EXPECT_EQ(p.chunks[0].num_draft, 3);
  ASSERT_TRUE(kv.check_invariants().is_ok());
}

TEST(SchedulerDraftTest, ADraftIsForTheNextStepOnly) {
  KvManager kv = make_kv(16, 4);
  Scheduler s(budget_of(64), kv);
  ASSERT_TRUE(s.add(make_seq(1, prompt_tokens(5, 1), 20)).is_ok());
  start_decoding(s, 1);
  s.set_draft(1, std::vector<std::int32_t>{60, 61});
  // Used by the next plan; the one after it carries no stale guesses.
  StepPlan p = s.schedule(0);
  EXPECT_EQ(p.chunks[0].num_draft, 2);
  const SampledToken t{1, 70, false};
  ASSERT_TRUE(s.on_step_done(p, std::span(&t, 1)).is_ok());
  p = s.schedule(0);
  EXPECT_EQ(p.chunks[0].num_draft, 0);
  EXPECT_TRUE(s.find(1)->draft.empty());
}

TEST(SchedulerDraftTest, SamplesThatContradictTheGuessesAreAnError) {
  KvManager kv = make_kv(16, 4);
  Scheduler s(budget_of(64), kv);
  ASSERT_TRUE(s.add(make_seq(1, prompt_tokens(5, 1), 20)).is_ok());
  start_decoding(s, 1);
  s.set_draft(1, std::vector<std::int32_t>{60, 61});
  StepPlan p = s.schedule(0);
  // A sample after 70, which did not confirm the guess 60.
  const std::vector<SampledToken> bad = {{1, 70, false}, {1, 71, false}};
  EXPECT_EQ(s.on_step_done(p, bad).code(), StatusCode::kInternal);
  // More samples than rows.
  const std::vector<SampledToken> too_many = {{1, 60, false}, {1, 61, false}, {1, 5, false}, {1, 6, false}};
  EXPECT_EQ(s.on_step_done(p, too_many).code(), StatusCode::kInternal);
}

TEST(SchedulerDraftTest, AStopOnAConfirmedGuessFinishesTheSequence) {
  KvManager kv = make_kv(16, 4);
  Scheduler s(budget_of(64), kv);
  ASSERT_TRUE(s.add(make_seq(1, prompt_tokens(5, 1), 20)).is_ok());
  start_decoding(s, 1);
  s.set_draft(1, std::vector<std::int32_t>{60, 61, 62});
  StepPlan p = s.schedule(0);
  const std::vector<SampledToken> samples = {{1, 60, false}, {1, 61, true}};
  ASSERT_TRUE(s.on_step_done(p, samples).is_ok());
  EXPECT_EQ(s.find(1), nullptr);
  p = s.schedule(0);
  ASSERT_EQ(p.finished.size(), 1u);
  EXPECT_EQ(p.finished[0].reason, FinishReason::kStop);
  EXPECT_EQ(p.finished[0].num_generated, 3);
  EXPECT_EQ(kv.stats().blocks_used, 0);
}

}  // namespace
}  // namespace omnibus
