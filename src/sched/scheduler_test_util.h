// Test helpers for the scheduler: a fake model that "runs" a StepPlan and
// samples deterministic tokens, so runs can be checked exactly.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

#include "kv/kv_manager.h"
#include "sched/scheduler.h"

namespace omnibus::sched_test {

inline KvManager make_kv(std::int32_t blocks, std::int32_t block_size, bool caching = true) {
  auto kv = KvManager::create({blocks, block_size, caching});
  EXPECT_TRUE(kv.is_ok()) << kv.status().to_string();
  return std::move(kv).value();
}

// Prompt tokens 100+seed*1000+i: distinct per seed, never zero.
inline std::vector<std::int32_t> prompt_tokens(int n, int seed) {
  std::vector<std::int32_t> t(n);
  for (int i = 0; i < n; ++i) t[i] = 100 + seed * 1000 + i;
  return t;
}

inline SequenceState make_seq(SeqId id, std::vector<std::int32_t> prompt, std::int64_t max_tokens,
                              double arrival = 0) {
  SequenceState s;
  s.id = id;
  s.prompt = std::move(prompt);
  s.max_tokens = max_tokens;
  s.arrival_time = arrival;
  return s;
}

// The token the fake model samples for `seq` at known position `pos`: a
// function of both, so a recomputed sequence samples what it did before.
inline std::int32_t fake_token(SeqId seq, std::int64_t pos) {
  return static_cast<std::int32_t>(7 + (seq * 31 + pos * 17) % 5000);
}

// Plays the model: checks each chunk against what the driver knows of the
// sequence, then samples for chunks that need logits.
class FakeModel {
 public:
  void expect_prompt(SeqId id, const std::vector<std::int32_t>& prompt) { known_[id] = prompt; }
  const std::vector<std::int32_t>& known(SeqId id) { return known_[id]; }

  // Runs `plan` and reports it done. `stop_ids` stop at this step.
  void run(Scheduler& sched, const StepPlan& plan, const std::set<SeqId>& stop_ids = {}) {
    std::vector<SampledToken> sampled;
    for (const ScheduledChunk& c : plan.chunks) {
      const std::vector<std::int32_t>& k = known_[c.seq];
      const std::int64_t end = c.start_pos + static_cast<std::int64_t>(c.tokens.size());
      ASSERT_LE(end, static_cast<std::int64_t>(k.size())) << "seq " << c.seq;
      for (std::size_t i = 0; i < c.tokens.size(); ++i)
        ASSERT_EQ(c.tokens[i], k[c.start_pos + i]) << "seq " << c.seq << " pos " << c.start_pos + i;
      ASSERT_EQ(c.needs_logits, end == static_cast<std::int64_t>(k.size())) << "seq " << c.seq;
      if (c.needs_logits)
        sampled.push_back({c.seq, fake_token(c.seq, end), stop_ids.count(c.seq) != 0});
    }
    for (const SampledToken& t : sampled) known_[t.seq].push_back(t.token);
    const Status st = sched.on_step_done(plan, sampled);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
  }

 private:
  std::map<SeqId, std::vector<std::int32_t>> known_;
};

inline const ScheduledChunk* chunk_of(const StepPlan& plan, SeqId id) {
  for (const ScheduledChunk& c : plan.chunks)
    if (c.seq == id) return &c;
  return nullptr;
}

}  // namespace omnibus::sched_test
