// Decode steps of B sequences that share a cached prompt prefix, on the
// real model (OMNIBUS_MODEL), with shared-prefix attention on and off in
// alternating rounds in one process; a measurement, not a check (disabled):
//   OMNIBUS_MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf build/tests/shared_prefix_bench_test
//     --gtest_also_run_disabled_tests [--gtest_filter=*SharedPrefix*]
// Prints the median step time each way and the median of the per-round ratios.
// OMNIBUS_BENCH_PAIR_ALL=1 lifts the few-row steps' prefix-size rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "backends/cpu/forward.h"
#include "backends/cpu/paged_kv_store.h"
#include "backends/cpu/weight_repack.h"
#include "base/thread_pool.h"
#include "base/timer.h"
#include "model/model.h"

namespace omnibus {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

TEST(SharedPrefixBench, DISABLED_DecodeStepsOfSequencesSharingAPrompt) {
  const char* path = std::getenv("OMNIBUS_MODEL");
  if (path == nullptr) GTEST_SKIP() << "OMNIBUS_MODEL is not set";
  const WeightRepacker repacker;
  auto model = Model::load(path, {.preparer = &repacker});
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  const ModelConfig& c = (*model)->config();
  constexpr int kBlock = 16, kThreads = 2, kOwn = 32, kRounds = 9, kSteps = 8;
  for (const int prefix_len : {1024, 2048}) {
    for (const int n_seqs : {2, 4, 8, 16}) {
      const int max_positions = prefix_len + kOwn + kRounds * kSteps * 2 + kBlock;
      const int own_blocks = (kOwn + kRounds * kSteps * 2 + kBlock) / kBlock + 1;
      ThreadPool pool(kThreads);
      ForwardPass fp(*model, pool, prefix_len, max_positions);
      // OMNIBUS_BENCH_PAIR_ALL=1: pair few-row steps whatever the prefix's
      // size (to measure the rule in plan_shared_chunks).
      if (const char* all = std::getenv("OMNIBUS_BENCH_PAIR_ALL"); all != nullptr && all[0] == '1')
        fp.set_shared_prefix_min_bytes(0);
      auto kv = PagedKvStore::create(c, prefix_len / kBlock + n_seqs * own_blocks, kBlock);
      ASSERT_TRUE(kv.is_ok());
      std::mt19937 rng(1);
      std::vector<std::vector<int32_t>> tables(n_seqs);
      for (int s = 0; s < n_seqs; ++s) {
        for (int b = 0; b < prefix_len / kBlock; ++b) tables[s].push_back(b);
        for (int b = 0; b < own_blocks; ++b) tables[s].push_back(prefix_len / kBlock + s * own_blocks + b);
      }
      std::vector<float> logits(static_cast<size_t>(prefix_len) * c.vocab_size);
      std::vector<BatchRow> rows;
      for (int p = 0; p < prefix_len; ++p)
        rows.push_back({static_cast<int32_t>(rng() % c.vocab_size), tables[0], p, false});
      ASSERT_TRUE(fp.run(rows, *kv, logits.data()).is_ok());
      for (int s = 0; s < n_seqs; ++s) {
        rows.clear();
        for (int p = prefix_len; p < prefix_len + kOwn; ++p)
          rows.push_back({static_cast<int32_t>(rng() % c.vocab_size), tables[s], p, false});
        ASSERT_TRUE(fp.run(rows, *kv, logits.data()).is_ok());
      }
      // Rounds of kSteps decode steps each way; positions move on (the same
      // K/V amounts either way within a round's pair).
      int pos = prefix_len + kOwn;
      std::vector<double> on_ms, off_ms, ratio;
      for (int round = 0; round < kRounds; ++round) {
        double ms[2];
        for (int way = 0; way < 2; ++way) {
          fp.set_shared_prefix_attention(way == 0);
          Stopwatch watch;
          for (int step = 0; step < kSteps; ++step, ++pos) {
            rows.clear();
            for (int s = 0; s < n_seqs; ++s)
              rows.push_back({static_cast<int32_t>(rng() % c.vocab_size), tables[s], pos, true});
            ASSERT_TRUE(fp.run(rows, *kv, logits.data()).is_ok());
          }
          ms[way] = watch.seconds() * 1e3 / kSteps;
        }
        on_ms.push_back(ms[0]), off_ms.push_back(ms[1]), ratio.push_back(ms[1] / ms[0]);
      }
      std::printf("prefix %4d, %2d sequences: step %6.2f ms alone, %6.2f ms shared (median of %d rounds; "
                  "speedup median %.3f)\n",
                  prefix_len, n_seqs, median(off_ms), median(on_ms), kRounds, median(ratio));
    }
  }
}

}  // namespace
}  // namespace omnibus
