#include "sched/queue_gate.h"

#include <gtest/gtest.h>

#include "sched/scheduler.h"
#include "sched/scheduler_test_util.h"

namespace omnibus {
namespace {

using sched_test::FakeModel;
using sched_test::make_kv;
using sched_test::make_seq;
using sched_test::prompt_tokens;

// The burst of issue 35: --max-seqs 64, --max-queue 8, 100 short requests at
// once. 64 take the free seats, 8 queue, 28 are refused; 40 all fit.
TEST(QueueGateTest, ABurstThatFitsTheSeatsIsAdmittedWhole) {
  QueueGate gate(/*max_queue=*/8, /*block_size=*/16);
  gate.reset({/*seats=*/64, /*blocks=*/10000});
  int admitted = 0;
  for (int i = 0; i < 100; ++i) admitted += gate.try_admit(20) ? 1 : 0;
  EXPECT_EQ(admitted, 72);
  EXPECT_EQ(gate.queued(), 8);
  EXPECT_EQ(gate.room_left().seats, 0);
  EXPECT_EQ(gate.room_left().blocks, 10000 - 64 * 2);

  gate.reset({64, 10000});
  for (int i = 0; i < 40; ++i) EXPECT_TRUE(gate.try_admit(20)) << i;
  EXPECT_EQ(gate.queued(), 0);
  EXPECT_EQ(gate.room_left().seats, 24);
}

// With free seats but a nearly full pool, requests queue for blocks: the
// queue limit holds whichever kind of room is short.
TEST(QueueGateTest, BlocksAreRoomToo) {
  QueueGate gate(2, 16);
  gate.reset({64, 5});
  EXPECT_TRUE(gate.try_admit(32));  // 2 blocks: fits
  EXPECT_TRUE(gate.try_admit(33));  // 3 blocks: fits exactly
  EXPECT_EQ(gate.room_left().blocks, 0);
  EXPECT_EQ(gate.queued(), 0);
  EXPECT_TRUE(gate.try_admit(1));  // no block left: queued
  EXPECT_TRUE(gate.try_admit(1));
  EXPECT_FALSE(gate.try_admit(1));  // two wait already
  EXPECT_EQ(gate.queued(), 2);
  EXPECT_EQ(gate.room_left().seats, 62);
}

// First come, first served: once one request queues, a smaller one behind
// it queues too, as the scheduler would not start it first.
TEST(QueueGateTest, NobodyOvertakesTheQueue) {
  QueueGate gate(4, 16);
  gate.reset({8, 4});
  EXPECT_TRUE(gate.try_admit(16 * 5));  // 5 blocks > 4: queued
  EXPECT_EQ(gate.queued(), 1);
  EXPECT_TRUE(gate.try_admit(1));  // would fit, but queues behind it
  EXPECT_EQ(gate.queued(), 2);
  EXPECT_EQ(gate.room_left().blocks, 4);
}

// place() counts requests the engine already holds: it never refuses, so the
// queue may stand over max_queue after the room shrank; new ones are then
// refused until it drains.
TEST(QueueGateTest, PlacedRequestsAreNeverRefused) {
  QueueGate gate(1, 16);
  gate.reset({1, 100});
  for (int i = 0; i < 4; ++i) gate.place(10);
  EXPECT_EQ(gate.queued(), 3);
  EXPECT_FALSE(gate.try_admit(10));
  gate.reset({0, 100});  // a full running set
  EXPECT_TRUE(gate.try_admit(10));
  EXPECT_FALSE(gate.try_admit(10));
}

TEST(QueueGateTest, OutOfRangeArgumentsAreClamped) {
  QueueGate gate(0, 0);
  EXPECT_EQ(gate.max_queue(), 1);
  EXPECT_EQ(gate.blocks_for(5), 5);
  EXPECT_EQ(gate.blocks_for(-3), 0);
  gate.reset({-2, -7});
  EXPECT_EQ(gate.room_left().seats, 0);
  EXPECT_EQ(gate.room_left().blocks, 0);
  EXPECT_FALSE(gate.try_admit(1) && gate.try_admit(1));  // one may queue, not two
}

SchedulerConfig config(BatchingPolicy policy, std::int32_t max_seqs, std::int32_t batch_size = 8) {
  SchedulerConfig c;
  c.max_batched_tokens = 1000;
  c.max_seqs = max_seqs;
  c.policy = policy;
  c.batch_size = batch_size;
  return c;
}

// Room for the continuous policy: seats under the admission limit, and the
// free blocks less what running prefills still need for their prompts.
TEST(SchedulerRoomTest, SeatsAndBlocksOfTheRunningSet) {
  KvManager kv = make_kv(100, 4);
  SchedulerConfig c = config(BatchingPolicy::kContinuous, 4);
  c.max_batched_tokens = 10;  // the second prompt is only partly prefilled in step one
  Scheduler s(c, kv);
  EXPECT_EQ(s.room().seats, 4);
  EXPECT_EQ(s.room().blocks, 100);
  FakeModel m;
  for (SeqId id = 1; id <= 2; ++id) {
    m.expect_prompt(id, prompt_tokens(8, static_cast<int>(id)));
    ASSERT_TRUE(s.add(make_seq(id, prompt_tokens(8, static_cast<int>(id)), 50)).is_ok());
  }
  // Waiting sequences do not take room by themselves: the gate places them.
  EXPECT_EQ(s.room().seats, 4);
  m.run(s, s.schedule(0));
  ASSERT_EQ(s.num_running(), 2);
  // Known tokens count whole: sequence 1 holds 2 blocks and is owed a third
  // for the token it sampled (9 tokens); sequence 2 holds 1 of its prompt's
  // 2 blocks and is owed the other.
  EXPECT_EQ(s.room().seats, 2);
  EXPECT_EQ(s.room().blocks, 100 - 3 - 2);
  s.set_admission_limit(1);
  EXPECT_EQ(s.room().seats, 0);  // over the limit: no seat, not a negative one

  QueueGate gate(8, 4);
  ASSERT_TRUE(s.add(make_seq(3, prompt_tokens(8, 3), 5)).is_ok());
  gate.reset(s.room());
  s.place_waiting(gate);
  EXPECT_EQ(gate.queued(), 1);
}

// Static batching: the batch being gathered is the room; while a batch runs,
// only its members may start, so newcomers wait for the next one.
TEST(SchedulerRoomTest, StaticBatchSeats) {
  KvManager kv = make_kv(100, 4);
  Scheduler s(config(BatchingPolicy::kStatic, 64, /*batch_size=*/2), kv);
  EXPECT_EQ(s.room().seats, 2);
  FakeModel m;
  for (SeqId id = 1; id <= 3; ++id) {
    m.expect_prompt(id, prompt_tokens(4, static_cast<int>(id)));
    ASSERT_TRUE(s.add(make_seq(id, prompt_tokens(4, static_cast<int>(id)), 50)).is_ok());
  }
  m.run(s, s.schedule(0));
  ASSERT_EQ(s.num_running(), 2);
  EXPECT_EQ(s.room().seats, 0);
  QueueGate gate(8, 4);
  gate.reset(s.room());
  s.place_waiting(gate);
  EXPECT_EQ(gate.queued(), 1);
}

}  // namespace
}  // namespace omnibus
