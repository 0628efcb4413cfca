// Speculative decoding gives exactly the tokens plain decoding gives: the
// target model samples every token from its own logits in the same order,
// and batch invariance makes a guessed row's logits bit-identical to a
// one-token step's. Checked on tiny models with guesses that are right,
// wrong, and mixed, greedy and seeded, and with the cache reused after.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "engine/generator.h"
#include "tiny_model.h"

namespace omnibus::testing {
namespace {

struct Outcome {
  std::vector<int32_t> tokens;
  GenerationStats stats;
};

class SpeculativeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TinyModelSpec spec;
    spec.matrix_type = DType::kQ4_1;
    spec.embedding_type = DType::kQ8_0;
    spec.vocab = 48;  // a small vocabulary: random models repeat themselves, so n-grams match
    bytes_ = make_tiny_model_bytes(spec);
    model_ = load_tiny_model(bytes_);
  }

  Outcome generate(const std::vector<int32_t>& prompt, const GenerationOptions& options,
                   const std::vector<int32_t>& end_ids = {}, Generator* reuse = nullptr) {
    std::unique_ptr<Generator> fresh;
    if (reuse == nullptr) {
      auto g = Generator::create(model_, two_threads_, /*context=*/256, /*prefill_chunk=*/32);
      EXPECT_TRUE(g.is_ok());
      fresh = std::move(*g);
      reuse = fresh.get();
    }
    Outcome out;
    auto stats = reuse->generate(prompt, options, end_ids, [&](int32_t t) {
      out.tokens.push_back(t);
      return true;
    });
    EXPECT_TRUE(stats.is_ok()) << stats.status().message();
    if (stats.is_ok()) out.stats = *stats;
    return out;
  }

  std::vector<uint8_t> bytes_;
  std::shared_ptr<const Model> model_;
  CpuBackend two_threads_{2};
};

std::vector<int32_t> test_prompt() { return {1, 5, 9, 13, 5, 9, 13, 2, 7, 5, 9}; }

GenerationOptions plain_options(int max_tokens, bool sampled) {
  GenerationOptions o;
  o.max_tokens = max_tokens;
  o.ignore_eos = true;
  if (sampled) {
    o.sampling.temperature = 0.9f;
    o.sampling.top_p = 0.95f;
    o.sampling.repetition_penalty = 1.1f;
    o.sampling.seed = 1234;
  }
  return o;
}

// Guesses the plain run's tokens, each `wrong_every`-th guess replaced by
// another token (0: all right).
DraftFunction oracle(const std::vector<int32_t>& prompt, const std::vector<int32_t>& expected, int wrong_every) {
  return [=](std::span<const int32_t> history, int max_tokens, std::vector<int32_t>& draft) {
    const size_t done = history.size() - prompt.size();  // generated tokens already in history
    for (int i = 0; i < max_tokens && done + i < expected.size(); ++i) {
      int32_t t = expected[done + i];
      if (wrong_every > 0 && (done + i) % wrong_every == 0) t = (t + 1) % 48;
      draft.push_back(t);
    }
  };
}

TEST_F(SpeculativeTest, RightWrongAndMixedGuessesGiveThePlainTokens) {
  for (bool sampled : {false, true}) {
    const GenerationOptions plain = plain_options(40, sampled);
    const Outcome want = generate(test_prompt(), plain);
    ASSERT_EQ(want.tokens.size(), 40u);
    for (int wrong_every : {0, 1, 3, 5}) {
      for (int max_draft : {1, 4, 16}) {
        GenerationOptions o = plain;
        o.speculation.source = DraftSource::kCustom;
        o.speculation.max_draft = max_draft;
        o.speculation.custom = oracle(test_prompt(), want.tokens, wrong_every);
        o.speculation.adaptive = false;  // every guess runs: the counts below are exact
        const Outcome got = generate(test_prompt(), o);
        SCOPED_TRACE(::testing::Message() << "sampled " << sampled << " wrong_every " << wrong_every << " max_draft "
                                        << max_draft);
        EXPECT_EQ(got.tokens, want.tokens);
        EXPECT_EQ(got.stats.finish_reason, want.stats.finish_reason);
        EXPECT_GT(got.stats.drafted_tokens, 0);
        if (wrong_every == 1) {
          EXPECT_EQ(got.stats.accepted_tokens, 0);  // every guess wrong: a plain step each
          EXPECT_EQ(got.stats.decode_steps, 39);
        } else {
          EXPECT_GT(got.stats.accepted_tokens, 0);
          // Each accepted guess saves one forward step.
          EXPECT_EQ(got.stats.decode_steps, 39 - got.stats.accepted_tokens);
        }
        if (wrong_every == 0 && max_draft == 16) {
          EXPECT_LE(got.stats.decode_steps, 3);
        }
      }
    }
  }
}

TEST_F(SpeculativeTest, NgramGuessesGiveThePlainTokens) {
  for (bool sampled : {false, true}) {
    const GenerationOptions plain = plain_options(64, sampled);
    const Outcome want = generate(test_prompt(), plain);
    GenerationOptions o = plain;
    o.speculation.source = DraftSource::kNgram;
    o.speculation.ngram.min_ngram = 1;
    o.speculation.adaptive = false;
    const Outcome got = generate(test_prompt(), o);
    EXPECT_EQ(got.tokens, want.tokens) << "sampled " << sampled;
    EXPECT_GT(got.stats.drafted_tokens, 0);
    EXPECT_EQ(got.stats.decode_steps, 63 - got.stats.accepted_tokens);
  }
}

TEST_F(SpeculativeTest, AdaptiveGuessingRunsRightGuessesAndDropsWrongOnes) {
  const Outcome want = generate(test_prompt(), plain_options(60, false));
  GenerationOptions o = plain_options(60, false);
  o.speculation.source = DraftSource::kCustom;
  o.speculation.custom = oracle(test_prompt(), want.tokens, 0);  // always right
  o.speculation.row_share = 0.3;  // not measured: the counts below must not depend on timing
  const Outcome right = generate(test_prompt(), o);
  EXPECT_EQ(right.tokens, want.tokens);
  // The guesses that did not run were still checked against what was
  // sampled, so the estimate rises and the guesses start running.
  EXPECT_GT(right.stats.accepted_tokens, 20);
  EXPECT_EQ(right.stats.accepted_tokens, right.stats.drafted_tokens);
  o.speculation.custom = oracle(test_prompt(), want.tokens, 1);  // always wrong
  const Outcome wrong = generate(test_prompt(), o);
  EXPECT_EQ(wrong.tokens, want.tokens);
  EXPECT_EQ(wrong.stats.accepted_tokens, 0);
  // From the prior 0.5, four wrong guesses (one a step) bring the estimate
  // to 0.26, under what one guess needs at a row cost of 0.3; after that
  // the guesses are only checked, never run.
  EXPECT_EQ(wrong.stats.drafted_tokens, 4) << "wrong guesses kept running";
  EXPECT_GE(wrong.stats.decode_steps, 59);
}

TEST_F(SpeculativeTest, StopsWhereThePlainRunStops) {
  const Outcome long_run = generate(test_prompt(), plain_options(40, false));
  // An end-of-generation id that first appears at some point of the run:
  // both stop there, the guesses after it unused.
  const int32_t end_id = long_run.tokens[12];
  GenerationOptions plain = plain_options(40, false);
  plain.ignore_eos = false;
  const Outcome want = generate(test_prompt(), plain, {end_id});
  ASSERT_LT(want.tokens.size(), 40u);
  GenerationOptions o = plain;
  o.speculation.source = DraftSource::kCustom;
  o.speculation.custom = oracle(test_prompt(), long_run.tokens, 0);
  o.speculation.adaptive = false;
  const Outcome got = generate(test_prompt(), o, {end_id});
  EXPECT_EQ(got.tokens, want.tokens);
  EXPECT_EQ(got.stats.finish_reason, "stop");
  // max_tokens in the middle of a run of right guesses.
  for (int max_tokens : {1, 2, 7}) {
    GenerationOptions m = o;
    m.max_tokens = max_tokens;
    m.ignore_eos = true;
    const Outcome cut = generate(test_prompt(), m);
    EXPECT_EQ(cut.tokens, std::vector<int32_t>(long_run.tokens.begin(), long_run.tokens.begin() + max_tokens));
    EXPECT_EQ(cut.stats.finish_reason, "length");
  }
}

TEST_F(SpeculativeTest, TheCacheHoldsOnlyAcceptedTokens) {
  // A chat turn after a speculative one reuses the cached prefix; if a
  // rejected guess had been counted as cached, the second turn would differ
  // from a fresh generator's.
  const Outcome first_plain = generate(test_prompt(), plain_options(30, false));
  GenerationOptions o = plain_options(30, false);
  o.speculation.source = DraftSource::kCustom;
  o.speculation.custom = oracle(test_prompt(), first_plain.tokens, 4);
  o.speculation.adaptive = false;
  auto g = Generator::create(model_, two_threads_, 256, 32);
  ASSERT_TRUE(g.is_ok());
  const Outcome first = generate(test_prompt(), o, {}, g->get());
  ASSERT_EQ(first.tokens, first_plain.tokens);
  std::vector<int32_t> second_prompt = test_prompt();
  second_prompt.insert(second_prompt.end(), first.tokens.begin(), first.tokens.end());
  second_prompt.push_back(3);
  const Outcome second = generate(second_prompt, plain_options(20, false), {}, g->get());
  // From the cache: the whole 16-token KV blocks (the Generator's) of what
  // the first turn computed, its prompt and every generated token but the
  // last (sampled, never run); the rest is computed now.
  const size_t computed = test_prompt().size() + first.tokens.size() - 1;
  EXPECT_EQ(second.stats.prefilled_tokens, static_cast<int>(second_prompt.size() - computed / 16 * 16));
  EXPECT_EQ(second.tokens, generate(second_prompt, plain_options(20, false)).tokens);
}

TEST_F(SpeculativeTest, BadGuessesAndOptionsAreHandled) {
  const Outcome want = generate(test_prompt(), plain_options(20, false));
  GenerationOptions o = plain_options(20, false);
  o.speculation.source = DraftSource::kCustom;
  o.speculation.custom = [](std::span<const int32_t>, int, std::vector<int32_t>& draft) {
    draft.assign({3, -1, 4, 1000, 5, 6, 7, 8, 9, 10, 11, 12, 13});  // out of range, and too many
  };
  o.speculation.adaptive = false;
  EXPECT_EQ(generate(test_prompt(), o).tokens, want.tokens);

  CpuBackend one_thread(1);
  auto g = Generator::create(model_, one_thread, 256, 32);
  ASSERT_TRUE(g.is_ok());
  auto ignore = [](int32_t) { return true; };
  GenerationOptions bad = plain_options(4, false);
  bad.speculation.source = DraftSource::kNgram;
  bad.speculation.max_draft = 0;
  EXPECT_FALSE((*g)->generate(test_prompt(), bad, {}, ignore).is_ok());
  bad.speculation.max_draft = 4;
  bad.speculation.ngram.min_ngram = 5;
  bad.speculation.ngram.max_ngram = 4;
  EXPECT_FALSE((*g)->generate(test_prompt(), bad, {}, ignore).is_ok());
  bad.speculation.source = DraftSource::kCustom;  // no function
  EXPECT_FALSE((*g)->generate(test_prompt(), bad, {}, ignore).is_ok());
}

}  // namespace
}  // namespace omnibus::testing
