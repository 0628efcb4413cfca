// Sliding-window layers that keep only their window (ServingEngineOptions::
// window_kv, docs/design/sliding-window-kv.md), through the serving engine
// on tiny random gemma3 and gpt-oss models (window 12): the
// same logits, to the bit, as an engine that keeps every layer for the
// whole context, whatever the batching, the step budget and the prefix
// cache (prompts shorter and longer than the window, with eviction in
// between); the KV handover; and a sequence's window blocks stay bounded
// however long it grows.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "engine/evaluation.h"
#include "engine/serving_engine.h"
#include "engine_test_util.h"
#include "tiny_model.h"

namespace omnibus {
namespace {

using namespace std::chrono_literals;

constexpr int kVocab = testing::kByteVocab;
constexpr int kWindow = 12;
constexpr int kBlockSize = 4;

struct Output {
  std::vector<GeneratedToken> tokens;
  int64_t cached_tokens = 0;
  std::string finish_reason;
};

// Tokens and every reported logprob, bit for bit.
void expect_same(const Output& a, const Output& b, const std::string& what) {
  ASSERT_EQ(a.tokens.size(), b.tokens.size()) << what;
  for (size_t i = 0; i < a.tokens.size(); ++i) {
    EXPECT_EQ(a.tokens[i].token, b.tokens[i].token) << what << ", token " << i;
    EXPECT_EQ(a.tokens[i].logprob, b.tokens[i].logprob) << what << ", token " << i;
    ASSERT_EQ(a.tokens[i].top.size(), b.tokens[i].top.size()) << what;
    for (size_t k = 0; k < a.tokens[i].top.size(); ++k) {
      EXPECT_EQ(a.tokens[i].top[k].token, b.tokens[i].top[k].token) << what << ", token " << i;
      EXPECT_EQ(a.tokens[i].top[k].logprob, b.tokens[i].top[k].logprob) << what << ", token " << i;
    }
  }
}

// The value of a gauge in the metrics text (-1 if absent).
double gauge(const std::string& metrics, const std::string& name) {
  const size_t at = metrics.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stod(metrics.substr(at + name.size() + 2));
}

// Gemma 3 (five window layers in six) and gpt-oss (every other layer a
// window, mixture of experts, attention sinks).
class WindowKvTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    testing::TinyModelSpec spec;
    spec.architecture = GetParam();
    spec.vocab = kVocab;
    spec.n_layer = spec.architecture == "gemma3" ? 6 : 4;
    spec.head_dim = 32;
    spec.sliding_window = kWindow;
    spec.tied_output = false;
    spec.context_length = 512;
    model_bytes_ = testing::make_tiny_model_bytes(spec);
    model_ = testing::load_tiny_model(model_bytes_);
  }

  std::unique_ptr<ServingEngine> make_engine(ServingEngineOptions options) {
    std::unique_ptr<Tokenizer> tok = testing::byte_tokenizer();
    EXPECT_NE(tok, nullptr);
    options.context_length = 400;
    options.kv_block_size = kBlockSize;
    if (options.kv_cache_bytes == ServingEngineOptions{}.kv_cache_bytes) options.kv_cache_bytes = int64_t{8} << 20;
    options.model_id = "tiny-gemma3";
    options.announce = false;
    backends_.push_back(std::make_unique<CpuBackend>(2));
    auto engine = ServingEngine::create(model_, *backends_.back(), std::move(tok), ChatFormat{}, options);
    EXPECT_TRUE(engine.is_ok()) << engine.status().message();
    return std::move(engine).value();
  }

  // Greedy, with the chosen token's logprob and the top 5 reported.
  static EngineRequest greedy(std::vector<int32_t> prompt, int64_t max_tokens) {
    EngineRequest r = testing::greedy_request(std::move(prompt), max_tokens);
    r.sampling.logprobs = true;
    r.sampling.top_logprobs = 5;
    return r;
  }

  static Output collect(RequestStream& stream) {
    Output out;
    for (const StreamEvent& e : testing::wait_for_finish(stream)) {
      for (const GeneratedToken& t : e.tokens) out.tokens.push_back(t);
      if (e.finished) {
        out.cached_tokens = e.cached_tokens;
        out.finish_reason = e.finish_reason;
      }
    }
    return out;
  }

  // Prompts of 3..73 tokens; every other one shares a 30-token head.
  static std::vector<std::vector<int32_t>> prompts(int count) { return testing::mixed_prompts(count, 2, 30, 3, 17); }

  std::vector<Output> run(ServingEngineOptions options, const std::vector<std::vector<int32_t>>& ps, int64_t max_tokens,
                          bool together) {
    auto engine = make_engine(options);
    if (options.window_kv) {
      EXPECT_GT(engine->kv_window_blocks(), 0);
    }
    std::vector<Output> outs;
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (const auto& p : ps) {
      auto stream = engine->submit(greedy(p, max_tokens));
      EXPECT_TRUE(stream.is_ok()) << stream.status().message();
      if (together)
        streams.push_back(*stream);
      else
        outs.push_back(collect(**stream));
    }
    for (auto& s : streams) outs.push_back(collect(*s));
    return outs;
  }

  std::vector<std::unique_ptr<CpuBackend>> backends_;
  std::vector<uint8_t> model_bytes_;
  std::shared_ptr<const Model> model_;
};

TEST_P(WindowKvTest, SameLogitsAsWholeLayersAcrossBatchingBudgetsAndCache) {
  ASSERT_EQ(model_->config().sliding_window, kWindow);
  // The mixture-of-experts model's steps cost more: fewer of them.
  const bool moe = model_->config().is_moe();
  const auto ps = prompts(moe ? 6 : 10);
  const int64_t tokens = moe ? 16 : 30;
  ServingEngineOptions whole;
  whole.window_kv = false;
  whole.prefix_caching = false;
  const std::vector<Output> reference = run(whole, ps, tokens, /*together=*/false);
  for (int budget : moe ? std::vector<int>{5, 256} : std::vector<int>{3, 16, 256}) {
    for (bool cache : {false, true}) {
      for (bool together : {false, true}) {
        ServingEngineOptions o;
        o.scheduler.max_batched_tokens = budget;
        o.prefix_caching = cache;
        const std::vector<Output> outs = run(o, ps, tokens, together);
        for (size_t i = 0; i < ps.size(); ++i)
          expect_same(outs[i], reference[i],
                      "prompt " + std::to_string(i) + ", budget " + std::to_string(budget) + ", cache " +
                          std::to_string(cache) + ", together " + std::to_string(together));
      }
    }
  }
}

// A prompt run twice takes its head from the cache, window blocks with it,
// and gives the same bits as a fresh prefill: prompts shorter and longer
// than the window, and after other traffic has evicted part of the window
// pool (the match then stops where the window's blocks are still cached).
TEST_P(WindowKvTest, PrefixCacheRestoresTheSameState) {
  ServingEngineOptions whole;
  whole.window_kv = false;
  whole.prefix_caching = false;
  ServingEngineOptions o;
  o.scheduler.max_seqs = 2;
  o.scheduler.max_batched_tokens = 16;
  for (int len : {9, 13, 40, 90}) {
    SCOPED_TRACE("prompt of " + std::to_string(len));
    std::vector<int32_t> prompt(len);
    for (int i = 0; i < len; ++i) prompt[i] = (i * 29 + len) % 250;
    const Output fresh = run(whole, {prompt}, 20, false)[0];
    auto engine = make_engine(o);
    const Output first = collect(**engine->submit(greedy(prompt, 20)));
    const Output second = collect(**engine->submit(greedy(prompt, 20)));
    expect_same(first, fresh, "first");
    expect_same(second, fresh, "second");
    EXPECT_EQ(first.cached_tokens, 0);
    EXPECT_EQ(second.cached_tokens, (len - 1) / kBlockSize * kBlockSize);
    // Traffic through the window pool: every cached window block of the
    // prompt is reused by others, but the full layers' blocks stay.
    for (int k = 0; k < 6; ++k) {
      std::vector<int32_t> other(120);
      for (int i = 0; i < 120; ++i) other[i] = (i * 13 + k * 7 + 1) % 250;
      collect(**engine->submit(greedy(other, 2)));
    }
    const Output third = collect(**engine->submit(greedy(prompt, 20)));
    expect_same(third, fresh, "after eviction");
    EXPECT_LE(third.cached_tokens, second.cached_tokens);
  }
}

// A sequence holds the window's blocks (plus a partial one each side), not
// its whole context, in the window layers; the full layers' pool holds
// everything. Sampled from /metrics while a long request decodes.
TEST_P(WindowKvTest, WindowBlocksStayBoundedAsTheSequenceGrows) {
  ServingEngineOptions o;
  o.scheduler.max_batched_tokens = 16;
  auto engine = make_engine(o);
  std::vector<int32_t> prompt(150);
  for (int i = 0; i < 150; ++i) prompt[i] = (i * 37 + 5) % 250;
  auto stream = engine->submit(greedy(prompt, 200));
  ASSERT_TRUE(stream.is_ok());
  std::vector<StreamEvent> events;
  int64_t generated = 0, samples = 0;
  double most_window = 0, most_full = 0;
  bool finished = false;
  for (int waited = 0; waited < 600 && !finished; ++waited) {
    (*stream)->wait(events, 100ms);
    for (const StreamEvent& e : events) {
      generated += static_cast<int64_t>(e.tokens.size());
      finished |= e.finished;
    }
    events.clear();
    if (finished) break;
    const std::string m = engine->metrics_text();
    most_window = std::max(most_window, gauge(m, "omnibus_kv_window_blocks_used"));
    most_full = std::max(most_full, gauge(m, "omnibus_kv_blocks_used"));
    ++samples;
  }
  ASSERT_TRUE(finished);
  EXPECT_EQ(generated, 200);
  ASSERT_GT(samples, 0);
  // At most the window (12 positions: 3 blocks) plus a partial block each
  // side and one step's 16 new positions (4 blocks), between steps fewer.
  EXPECT_GT(most_window, 0);
  EXPECT_LE(most_window, kWindow / kBlockSize + 2 + 16 / kBlockSize);
  EXPECT_GT(most_full, 150 / kBlockSize);
  // Once finished, nothing is held.
  const std::string m = engine->metrics_text();
  EXPECT_EQ(gauge(m, "omnibus_kv_window_blocks_used"), 0);
  EXPECT_EQ(gauge(m, "omnibus_kv_bytes_used"), 0);
}

// The handover: a prompt's blocks from an engine that keeps only windows
// give a window engine the tokens one engine gives; an engine that keeps
// every layer whole refuses the blob (its early window bytes are zeros)
// but its own blobs go to a window engine.
TEST_P(WindowKvTest, KvHandoverBetweenWindowEngines) {
  std::vector<int32_t> prompt(61);
  for (int i = 0; i < 61; ++i) prompt[i] = (i * 19 + 2) % 250;
  ServingEngineOptions o;
  ServingEngineOptions whole;
  whole.window_kv = false;
  auto source = make_engine(o);
  const Output one = collect(**source->submit(greedy(prompt, 15)));
  Result<std::string> blob = source->export_kv(prompt);
  ASSERT_TRUE(blob.is_ok()) << blob.status().message();

  auto target = make_engine(o);
  Result<int64_t> imported = target->import_kv(*blob);
  ASSERT_TRUE(imported.is_ok()) << imported.status().message();
  EXPECT_EQ(*imported, 60);
  const Output two = collect(**target->submit(greedy(prompt, 15)));
  EXPECT_EQ(two.cached_tokens, 60);
  expect_same(two, one, "imported");

  Result<int64_t> refused = make_engine(whole)->import_kv(*blob);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("keeps every layer whole"), std::string::npos)
      << refused.status().message();

  auto whole_source = make_engine(whole);
  collect(**whole_source->submit(greedy(prompt, 1)));
  Result<std::string> whole_blob = whole_source->export_kv(prompt);
  ASSERT_TRUE(whole_blob.is_ok()) << whole_blob.status().message();
  auto third = make_engine(o);
  ASSERT_TRUE(third->import_kv(*whole_blob).is_ok());
  const Output three = collect(**third->submit(greedy(prompt, 15)));
  EXPECT_EQ(three.cached_tokens, 60);
  expect_same(three, one, "imported from a whole-layer engine");
}

// Perplexity's evaluator (engine/evaluation.h): its window layers in a ring
// of blocks give the same logits, to the bit, as whole layers, for forward
// calls of several sizes, and hold fewer bytes.
TEST_P(WindowKvTest, EvaluatorRingGivesTheSameLogits) {
  std::vector<int32_t> tokens;
  for (int i = 0; i < 150; ++i) tokens.push_back((i * 37 + 11) % 250);
  CpuBackend backend(2);
  for (const int chunk : {1, 7, 16}) {
    auto whole = LogitsEvaluator::create(model_, backend, 160, chunk, KvCacheType::kF16, /*window_kv=*/false);
    auto ring = LogitsEvaluator::create(model_, backend, 160, chunk, KvCacheType::kF16, /*window_kv=*/true);
    ASSERT_TRUE(whole.is_ok() && ring.is_ok());
    EXPECT_EQ((*whole)->window_blocks(), 0);
    ASSERT_GT((*ring)->window_blocks(), 0) << "chunk " << chunk;
    EXPECT_LT((*ring)->kv_bytes(), (*whole)->kv_bytes());
    // Twice over the same evaluator: the ring's earlier contents do not leak in.
    for (int pass = 0; pass < 2; ++pass) {
      auto a = (*whole)->all_logits(tokens), b = (*ring)->all_logits(tokens);
      ASSERT_TRUE(a.is_ok() && b.is_ok());
      ASSERT_EQ(a->size(), b->size());
      EXPECT_EQ(0, std::memcmp(a->data(), b->data(), a->size() * sizeof(float))) << "chunk " << chunk;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, WindowKvTest, ::testing::Values("gemma3", "gpt-oss"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace omnibus
