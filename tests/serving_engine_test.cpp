// ServingEngine on a tiny random model: many sequences batched together give
// exactly the tokens each gives alone, whatever the step budget, the prefix
// cache, or preemption under a small KV pool; cancellation frees every block;
// a full queue and impossible requests are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "engine/serving_engine.h"
#include "engine_test_util.h"
#include "tiny_model.h"

namespace omnibus {
namespace {

using namespace std::chrono_literals;

struct Output {
  std::vector<int32_t> tokens;
  std::string text;
  std::string finish_reason;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
  size_t top_logprobs = 0;  // alternatives reported, all tokens together
};

class ServingEngineTest : public ::testing::Test {
 protected:
  static constexpr int kVocab = 257;  // 256 bytes + <|end|>

  void SetUp() override {
    testing::TinyModelSpec spec;
    spec.vocab = kVocab;
    spec.n_layer = 2;
    spec.tied_output = false;  // tied: the random model just repeats its last token
    model_bytes_ = testing::make_tiny_model_bytes(spec);
    model_ = testing::load_tiny_model(model_bytes_);
  }

  // Each engine's backend, kept for the test (a backend outlives its engine).
  std::vector<std::unique_ptr<CpuBackend>> backends_;
  int threads_ = 1;  // of the engines make_engine makes

  std::unique_ptr<ServingEngine> make_engine(ServingEngineOptions options) {
    std::unique_ptr<Tokenizer> tok = testing::byte_tokenizer();
    EXPECT_NE(tok, nullptr);
    if (options.context_length == 0) options.context_length = 512;
    // The default 512 MiB pool is faulted in at creation; the tiny model's
    // 256 bytes a token need far less (32 MiB: 131,072 tokens).
    if (options.kv_cache_bytes == ServingEngineOptions{}.kv_cache_bytes) options.kv_cache_bytes = int64_t{32} << 20;
    options.model_id = "tiny";
    backends_.push_back(std::make_unique<CpuBackend>(threads_));
    auto engine = ServingEngine::create(model_, *backends_.back(), std::move(tok), ChatFormat{}, options);
    EXPECT_TRUE(engine.is_ok()) << engine.status().message();
    return std::move(engine).value();
  }

  static EngineRequest greedy(std::vector<int32_t> prompt, int64_t max_tokens) {
    return testing::greedy_request(std::move(prompt), max_tokens);
  }

  // Waits for the stream's final event, collecting everything before it.
  static Output collect(RequestStream& stream) {
    Output out;
    for (const StreamEvent& e : testing::wait_for_finish(stream)) {
      out.text += e.text;
      for (const GeneratedToken& t : e.tokens) {
        out.tokens.push_back(t.token);
        out.top_logprobs += t.top.size();
      }
      if (e.finished) {
        out.finish_reason = e.finish_reason;
        out.completion_tokens = e.completion_tokens;
        out.cached_tokens = e.cached_tokens;
      }
    }
    return out;
  }

  // n token ids (i * step + offset) % 250: distinct prompts by their step.
  static std::vector<int32_t> ramp(int n, int step, int offset) {
    std::vector<int32_t> p(n);
    for (int i = 0; i < n; ++i) p[i] = (i * step + offset) % 250;
    return p;
  }

  // Prompts of awkward lengths; every third shares a 37-token head.
  static std::vector<std::vector<int32_t>> prompts(int count) { return testing::mixed_prompts(count, 3, 37, 1, 13); }

  std::vector<Output> run_alone(ServingEngineOptions options, const std::vector<std::vector<int32_t>>& ps,
                                int64_t max_tokens) {
    auto engine = make_engine(options);
    std::vector<Output> outs;
    for (const auto& p : ps) {
      auto stream = engine->submit(greedy(p, max_tokens));
      EXPECT_TRUE(stream.is_ok());
      outs.push_back(collect(**stream));
    }
    return outs;
  }

  std::vector<Output> run_together(ServingEngineOptions options, const std::vector<std::vector<int32_t>>& ps,
                                   int64_t max_tokens) {
    auto engine = make_engine(options);
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (const auto& p : ps) {
      auto stream = engine->submit(greedy(p, max_tokens));
      EXPECT_TRUE(stream.is_ok()) << stream.status().message();
      streams.push_back(*stream);
    }
    std::vector<Output> outs;
    for (auto& s : streams) outs.push_back(collect(*s));
    return outs;
  }

  std::vector<uint8_t> model_bytes_;
  std::shared_ptr<const Model> model_;
};

// A mixture-of-experts model through the engine: sequences batched give
// the tokens each gives alone, and /metrics counts the routings and the
// expert runs (fewer when a step's rows share experts).
TEST_F(ServingEngineTest, MoeModelBatchesAndReportsExpertLoad) {
  testing::TinyModelSpec spec;
  spec.architecture = "qwen3moe";
  spec.vocab = kVocab;
  spec.n_layer = 2;
  spec.n_expert = 8;
  spec.n_expert_used = 2;
  spec.tied_output = false;
  model_bytes_ = testing::make_tiny_model_bytes(spec);
  model_ = testing::load_tiny_model(model_bytes_);
  std::vector<std::vector<int32_t>> ps;
  for (int i = 0; i < 4; ++i) ps.push_back(ramp(9 + 3 * i, 5 + i, i));
  constexpr int kTokens = 6;
  auto engine = make_engine({});
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& p : ps) streams.push_back(*engine->submit(greedy(p, kTokens)));
  const auto alone = run_alone({}, ps, kTokens);
  for (size_t i = 0; i < ps.size(); ++i) EXPECT_EQ(collect(*streams[i]).tokens, alone[i].tokens) << "sequence " << i;
  // Every row run (each prompt token, each generated token but the last)
  // routed in each layer to n_expert_used experts.
  int64_t rows = 0;
  for (const auto& p : ps) rows += static_cast<int64_t>(p.size()) + kTokens - 1;
  const std::string m = engine->metrics_text();
  const int64_t routed = rows * spec.n_layer * spec.n_expert_used;
  EXPECT_NE(m.find("omnibus_moe_routed_tokens_total " + std::to_string(routed) + "\n"), std::string::npos) << m;
  EXPECT_NE(m.find("omnibus_moe_expert_tokens_total{expert=\"7\"}"), std::string::npos) << m;
  const std::string runs_line = "\nomnibus_moe_expert_runs_total ";
  const size_t at = m.find(runs_line);
  ASSERT_NE(at, std::string::npos) << m;
  const int64_t runs = std::stoll(m.substr(at + runs_line.size()));
  EXPECT_GT(runs, 0);
  EXPECT_LT(runs, routed);  // prompt rows share experts: each read once a step
}

TEST_F(ServingEngineTest, GeneratesMaxTokensAndReportsLength) {
  auto engine = make_engine({});
  auto stream = engine->submit(greedy({1, 2, 3, 4, 5}, 9));
  ASSERT_TRUE(stream.is_ok());
  Output out = collect(**stream);
  EXPECT_EQ(out.finish_reason, "length");
  EXPECT_EQ(out.tokens.size(), 9u);
  EXPECT_EQ(out.completion_tokens, 9);
}

// The command line's Generator runs the engine without a tokenizer: token
// ids only, its own end ids, its own speculation.
TEST_F(ServingEngineTest, WithoutATokenizerStreamsIdsAndEndsAtTheRequestsOwnIds) {
  ServingEngineOptions options;
  options.context_length = 512;
  options.kv_cache_bytes = int64_t{32} << 20;
  options.announce = false;
  CpuBackend backend(1);
  auto made = ServingEngine::create(model_, backend, nullptr, ChatFormat{}, options);
  ASSERT_TRUE(made.is_ok()) << made.status().message();
  ServingEngine& engine = **made;
  const std::vector<int32_t> prompt = ramp(20, 7, 3);
  auto plain = engine.submit(greedy(prompt, 12));
  ASSERT_TRUE(plain.is_ok());
  const Output all = collect(**plain);
  ASSERT_EQ(all.tokens.size(), 12u);
  EXPECT_EQ(all.text, "");  // no tokenizer: no text
  EXPECT_EQ(all.finish_reason, "length");

  // The fifth token ends it: the four before it come, the end id does not.
  EngineRequest ends = greedy(prompt, 12);
  ends.ignore_eos = false;
  ends.end_of_generation = std::vector<int32_t>{all.tokens[4]};
  auto ended = engine.submit(std::move(ends));
  ASSERT_TRUE(ended.is_ok());
  const Output cut = collect(**ended);
  const auto first = std::find(all.tokens.begin(), all.tokens.end(), all.tokens[4]) - all.tokens.begin();
  EXPECT_EQ(cut.tokens, std::vector<int32_t>(all.tokens.begin(), all.tokens.begin() + first));
  EXPECT_EQ(cut.finish_reason, "stop");

  // Speculation asked for by the request alone gives the same tokens.
  EngineRequest guessed = greedy(prompt, 12);
  SpeculationOptions speculation;
  speculation.source = DraftSource::kCustom;
  speculation.adaptive = false;
  speculation.custom = [](std::span<const int32_t>, int max_tokens, std::vector<int32_t>& draft) {
    for (int i = 0; i < max_tokens; ++i) draft.push_back(i % 7);
  };
  guessed.speculation = speculation;
  auto spec = engine.submit(std::move(guessed));
  ASSERT_TRUE(spec.is_ok());
  EXPECT_EQ(collect(**spec).tokens, all.tokens);

  EngineRequest with_stop = greedy(prompt, 12);
  with_stop.stop = {"x"};
  EXPECT_EQ(engine.submit(std::move(with_stop)).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(ServingEngineTest, ConcurrentGreedyEqualsAloneAcrossBudgetsAndCache) {
  const auto ps = prompts(14);
  ServingEngineOptions base;
  base.prefix_caching = false;
  base.scheduler.max_batched_tokens = 64;
  const std::vector<Output> alone = run_alone(base, ps, 11);
  for (int budget : {5, 64, 300}) {
    for (bool cache : {false, true}) {
      ServingEngineOptions o;
      o.scheduler.max_batched_tokens = budget;
      o.prefix_caching = cache;
      threads_ = 2;  // the engines made from here on
      const std::vector<Output> together = run_together(o, ps, 11);
      for (size_t i = 0; i < ps.size(); ++i) {
        EXPECT_EQ(together[i].tokens, alone[i].tokens) << "prompt " << i << " budget " << budget << " cache " << cache;
        EXPECT_EQ(together[i].text, alone[i].text);
        EXPECT_EQ(together[i].finish_reason, "length");
      }
    }
  }
}

// The same with the q8_0 KV cache (--kv-type q8_0), on a model whose head
// size (32) the format takes: batching, chunked prefill and the prefix cache
// change nothing, and the pool holds 1.88x the tokens of an f16 one.
class ServingEngineQ8Test : public ServingEngineTest {
 protected:
  void SetUp() override {
    testing::TinyModelSpec spec;
    spec.vocab = kVocab;
    spec.n_layer = 2;
    spec.n_embd = 128;  // 4 heads of 32
    spec.tied_output = false;
    model_bytes_ = testing::make_tiny_model_bytes(spec);
    model_ = testing::load_tiny_model(model_bytes_);
  }
};

TEST_F(ServingEngineQ8Test, ConcurrentGreedyEqualsAloneWithQ8Cache) {
  const auto ps = prompts(10);
  // bf16 (--kv-type bf16) too: the f16 cache's size, its own kernels.
  for (KvCacheType type : {KvCacheType::kQ8_0, KvCacheType::kBF16}) {
    ServingEngineOptions base;
    base.kv_type = type;
    base.prefix_caching = false;
    const std::vector<Output> alone = run_alone(base, ps, 11);
    for (int budget : {5, 300}) {
      ServingEngineOptions o;
      o.kv_type = type;
      o.scheduler.max_batched_tokens = budget;
      threads_ = 2;  // the engines made from here on
      const std::vector<Output> together = run_together(o, ps, 11);
      for (size_t i = 0; i < ps.size(); ++i)
        EXPECT_EQ(together[i].tokens, alone[i].tokens)
            << kv_cache_type_name(type) << " prompt " << i << " budget " << budget;
    }
  }
  ServingEngineOptions f16, q8;
  q8.kv_type = KvCacheType::kQ8_0;
  const std::string f16_metrics = make_engine(f16)->metrics_text(), q8_metrics = make_engine(q8)->metrics_text();
  auto blocks = [](const std::string& m) {
    const auto at = m.find("\nomnibus_kv_blocks_total ");
    return at == std::string::npos ? 0.0 : std::stod(m.substr(at + 25));
  };
  ASSERT_GT(blocks(f16_metrics), 0) << f16_metrics;
  EXPECT_NEAR(blocks(q8_metrics) / blocks(f16_metrics), 64.0 / 34.0, 0.01);
}

TEST_F(ServingEngineTest, StaticAndDynamicBatchingGiveTheSameTokens) {
  const auto ps = prompts(9);
  const std::vector<Output> alone = run_alone({}, ps, 6);
  for (BatchingPolicy policy : {BatchingPolicy::kStatic, BatchingPolicy::kDynamic}) {
    ServingEngineOptions o;
    o.scheduler.policy = policy;
    o.scheduler.batch_size = 3;  // 9 requests: three full batches
    o.scheduler.batch_wait_ms = 5;
    const std::vector<Output> together = run_together(o, ps, 6);
    for (size_t i = 0; i < ps.size(); ++i) EXPECT_EQ(together[i].tokens, alone[i].tokens) << i;
  }
}

TEST_F(ServingEngineTest, DynamicBatchingStartsAPartialBatchAfterTheWait) {
  ServingEngineOptions o;
  o.scheduler.policy = BatchingPolicy::kDynamic;
  o.scheduler.batch_size = 50;
  o.scheduler.batch_wait_ms = 30;
  auto engine = make_engine(o);
  Output out = collect(**engine->submit(greedy({4, 5, 6}, 3)));
  EXPECT_EQ(out.finish_reason, "length");
  EXPECT_EQ(out.tokens.size(), 3u);
}

TEST_F(ServingEngineTest, PrefixCacheServesTheSharedHead) {
  ServingEngineOptions o;
  o.kv_block_size = 8;
  auto engine = make_engine(o);
  std::vector<int32_t> head(40);
  for (int i = 0; i < 40; ++i) head[i] = (i * 11) % 200;
  auto first = head;
  first.push_back(7);
  auto second = head;
  second.push_back(9);
  Output a = collect(**engine->submit(greedy(first, 3)));
  Output b = collect(**engine->submit(greedy(second, 3)));
  EXPECT_EQ(a.cached_tokens, 0);
  EXPECT_EQ(b.cached_tokens, 40);  // five full blocks of 8
  const std::string m = engine->metrics_text();
  EXPECT_NE(m.find("omnibus_prefix_cache_hit_tokens_total 40\n"), std::string::npos) << m;
}

// Disaggregated prefill and decode (docs/plan-disaggregation.md): the
// prompt's whole blocks exported from one engine and imported into another
// give the second the same greedy tokens as the first, from its prefix
// cache, for every cache type.
TEST_F(ServingEngineTest, KvHandoverGivesTheSameTokensAsOneInstance) {
  // Head size 32: the q8_0 and q4_0 caches need whole 32-value groups.
  testing::TinyModelSpec spec;
  spec.vocab = kVocab;
  spec.tied_output = false;
  spec.head_dim = 32;
  model_bytes_ = testing::make_tiny_model_bytes(spec);
  model_ = testing::load_tiny_model(model_bytes_);
  const std::vector<int32_t> prompt = ramp(45, 13, 5);
  for (KvCacheType type : {KvCacheType::kF16, KvCacheType::kQ8_0, KvCacheType::kQ4_0, KvCacheType::kBF16}) {
    SCOPED_TRACE(kv_cache_type_name(type));
    ServingEngineOptions o;
    o.kv_block_size = 8;
    o.kv_type = type;
    auto prefill = make_engine(o);
    const Output one = collect(**prefill->submit(greedy(prompt, 12)));
    ASSERT_EQ(one.tokens.size(), 12u);
    Result<std::string> blob = prefill->export_kv(prompt);
    ASSERT_TRUE(blob.is_ok()) << blob.status().message();

    auto decode = make_engine(o);
    Result<int64_t> imported = decode->import_kv(*blob);
    ASSERT_TRUE(imported.is_ok()) << imported.status().message();
    EXPECT_EQ(*imported, 40);  // five whole blocks of the 45 tokens
    const Output two = collect(**decode->submit(greedy(prompt, 12)));
    EXPECT_EQ(two.cached_tokens, 40);
    EXPECT_EQ(two.tokens, one.tokens);
    // Importing again finds every block cached and writes nothing new.
    Result<int64_t> again = decode->import_kv(*blob);
    ASSERT_TRUE(again.is_ok()) << again.status().message();
    EXPECT_EQ(*again, 40);
    EXPECT_EQ(collect(**decode->submit(greedy(prompt, 12))).tokens, one.tokens);
    // The two requests' hits; the handover's own lookups are not counted,
    // its tokens are (the second import wrote nothing).
    const std::string m = decode->metrics_text();
    EXPECT_NE(m.find("omnibus_prefix_cache_hit_tokens_total 80\n"), std::string::npos) << m;
    EXPECT_NE(m.find("omnibus_kv_imported_tokens_total 80\n"), std::string::npos) << m;
    EXPECT_NE(m.find("omnibus_kv_imported_written_tokens_total 40\n"), std::string::npos) << m;
    EXPECT_NE(prefill->metrics_text().find("omnibus_kv_exported_tokens_total 40\n"), std::string::npos);
    // The decode engine hands the same bytes on.
    Result<std::string> again_out = decode->export_kv(prompt);
    ASSERT_TRUE(again_out.is_ok()) << again_out.status().message();
    EXPECT_EQ(*again_out, *blob);

    // A receiver that already holds the first two blocks (its own prefill
    // of a prompt sharing them) keeps those and takes the other three.
    auto partial = make_engine(o);
    std::vector<int32_t> head(prompt.begin(), prompt.begin() + 17);
    collect(**partial->submit(greedy(head, 1)));
    Result<int64_t> topped_up = partial->import_kv(*blob);
    ASSERT_TRUE(topped_up.is_ok()) << topped_up.status().message();
    EXPECT_EQ(*topped_up, 40);
    const Output three = collect(**partial->submit(greedy(prompt, 12)));
    EXPECT_EQ(three.cached_tokens, 40);
    EXPECT_EQ(three.tokens, one.tokens);
    Result<std::string> partial_out = partial->export_kv(prompt);
    ASSERT_TRUE(partial_out.is_ok()) << partial_out.status().message();
    EXPECT_EQ(*partial_out, *blob);
  }
}

TEST_F(ServingEngineTest, KvHandoverRefusesBlobsThatDoNotFit) {
  const std::vector<int32_t> prompt = ramp(30, 7, 1);
  ServingEngineOptions o;
  o.kv_block_size = 8;
  auto source = make_engine(o);
  // Nothing cached yet (resource_exhausted: run it first), and a prompt
  // shorter than a block never has any (not_found).
  Result<std::string> none = source->export_kv(prompt);
  ASSERT_FALSE(none.is_ok());
  EXPECT_EQ(none.status().code(), StatusCode::kResourceExhausted);
  collect(**source->submit(greedy(prompt, 2)));
  EXPECT_EQ(source->export_kv({1, 2, 3}).status().code(), StatusCode::kNotFound);
  Result<std::string> exported = source->export_kv(prompt);
  ASSERT_TRUE(exported.is_ok()) << exported.status().message();
  const std::string blob = *exported;

  auto refused = [](ServingEngine& e, std::string_view b) {
    Result<int64_t> r = e.import_kv(b);
    EXPECT_FALSE(r.is_ok());
    return r.is_ok() ? std::string() : r.status().message();
  };
  auto same = make_engine(o);
  EXPECT_NE(refused(*same, std::string(100, 'x')).find("OMKV"), std::string::npos);
  EXPECT_NE(refused(*same, blob.substr(0, blob.size() - 1)).find("checksum"), std::string::npos);
  std::string flipped = blob;
  flipped[flipped.size() / 2] ^= 0x10;
  EXPECT_NE(refused(*same, flipped).find("checksum"), std::string::npos);
  EXPECT_NE(refused(*same, blob.substr(0, 20)).find("shorter than its header"), std::string::npos);

  ServingEngineOptions other_block = o;
  other_block.kv_block_size = 4;
  EXPECT_NE(refused(*make_engine(other_block), blob).find("block size"), std::string::npos);
  ServingEngineOptions other_type = o;
  other_type.kv_type = KvCacheType::kBF16;
  EXPECT_NE(refused(*make_engine(other_type), blob).find("cache type"), std::string::npos);
  testing::TinyModelSpec spec;
  spec.vocab = kVocab;
  spec.tied_output = false;
  spec.seed = 2;  // same shapes, other weights
  // Not into model_bytes_: `source` and `same` still read their weights from
  // there (ASan found the use after free).
  const std::vector<uint8_t> other_model_bytes = testing::make_tiny_model_bytes(spec);
  model_ = testing::load_tiny_model(other_model_bytes);
  EXPECT_NE(refused(*make_engine(o), blob).find("another model"), std::string::npos);
  // Nothing was imported by any refusal.
  const Output after = collect(**same->submit(greedy(prompt, 2)));
  EXPECT_EQ(after.cached_tokens, 0);
}

TEST_F(ServingEngineTest, KvHandoverNamesWhatThePoolOrContextCannotHold) {
  const std::vector<int32_t> prompt = ramp(70, 5, 2);
  ServingEngineOptions o;
  o.kv_block_size = 8;
  auto source = make_engine(o);
  collect(**source->submit(greedy(prompt, 1)));
  Result<std::string> exported = source->export_kv(prompt);
  ASSERT_TRUE(exported.is_ok()) << exported.status().message();  // 64 tokens
  auto message = [](const Result<int64_t>& r) { return r.is_ok() ? std::string() : r.status().message(); };

  ServingEngineOptions tiny_pool = o;
  // 2 layers x kv_dim 32 x K and V x 2 bytes = 256 B a token: 6 blocks of 8.
  tiny_pool.kv_cache_bytes = 6 * 8 * 256;
  tiny_pool.context_length = 200;
  EXPECT_NE(message(make_engine(tiny_pool)->import_kv(*exported)).find("KV pool of 6 blocks"), std::string::npos);
  ServingEngineOptions short_context = o;
  short_context.context_length = 40;
  EXPECT_NE(message(make_engine(short_context)->import_kv(*exported)).find("context is 40"), std::string::npos);
  ServingEngineOptions no_cache = o;
  no_cache.prefix_caching = false;
  auto uncached = make_engine(no_cache);
  EXPECT_NE(message(uncached->import_kv(*exported)).find("--no-prefix-cache"), std::string::npos);
  collect(**uncached->submit(greedy(prompt, 1)));
  Result<std::string> nothing = uncached->export_kv(prompt);
  ASSERT_FALSE(nothing.is_ok());
  EXPECT_NE(nothing.status().message().find("--no-prefix-cache"), std::string::npos);
  // A prompt whose blocks were evicted: a busy pool, not a short prompt.
  auto fresh = make_engine(o);
  Result<std::string> evicted = fresh->export_kv(prompt);
  ASSERT_FALSE(evicted.is_ok());
  EXPECT_EQ(evicted.status().code(), StatusCode::kResourceExhausted);
}

TEST_F(ServingEngineTest, PreemptionUnderATinyPoolStillGivesTheSameTokens) {
  const auto ps = prompts(8);
  ServingEngineOptions big;
  const std::vector<Output> alone = run_alone(big, ps, 30);
  ServingEngineOptions small;
  small.kv_block_size = 4;
  // 2 layers x kv_dim 32 x K and V x 2 bytes (f16) = 256 B/token: 32 blocks
  // of 4 tokens hold 128 tokens, far less than the 8 sequences need at once.
  small.kv_cache_bytes = 32 * 4 * 256;
  small.prefix_caching = false;
  auto engine = make_engine(small);
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& p : ps) streams.push_back(*engine->submit(greedy(p, 30)));
  for (size_t i = 0; i < ps.size(); ++i) EXPECT_EQ(collect(*streams[i]).tokens, alone[i].tokens) << i;
  const std::string m = engine->metrics_text();
  EXPECT_EQ(m.find("omnibus_preemptions_total 0\n"), std::string::npos) << "expected preemptions\n" << m;
}

// An unreachable TPOT objective throttles admission down to one running
// sequence; every request still completes, with the same tokens.
TEST_F(ServingEngineTest, TpotObjectiveThrottlesAdmissionWithoutChangingTokens) {
  const auto ps = prompts(6);
  ServingEngineOptions plain;
  const std::vector<Output> alone = run_alone(plain, ps, 12);
  ServingEngineOptions slo;
  slo.slo.tpot_seconds = 1e-9;
  auto engine = make_engine(slo);
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& p : ps) streams.push_back(*engine->submit(greedy(p, 12)));
  for (size_t i = 0; i < ps.size(); ++i) EXPECT_EQ(collect(*streams[i]).tokens, alone[i].tokens) << i;
  const std::string m = engine->metrics_text();
  EXPECT_NE(m.find("omnibus_admission_limit 1\n"), std::string::npos) << m;
}

TEST_F(ServingEngineTest, CancelledStreamsFreeEveryBlock) {
  auto engine = make_engine({});
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 20; ++i) streams.push_back(*engine->submit(greedy({1, 2, 3, i}, 400)));
  // Cancel once every stream is running (has sent its first event), not
  // after a fixed sleep: with a fast enough step, 20 ms let streams finish
  // their 400 tokens first (seen once under ctest -j2).
  for (auto& s : streams) {
    std::vector<StreamEvent> first;
    for (int waited = 0; first.empty() && waited < 600; ++waited) s->wait(first, 100ms);
  }
  for (auto& s : streams) s->cancel();
  for (auto& s : streams) EXPECT_EQ(collect(*s).finish_reason, "cancelled");
  engine->wait_idle();
  const std::string m = engine->metrics_text();
  EXPECT_NE(m.find("omnibus_kv_blocks_used 0\n"), std::string::npos) << m;
  EXPECT_NE(m.find("omnibus_requests_total{outcome=\"cancelled\"} 20\n"), std::string::npos) << m;
  // And the engine still serves.
  EXPECT_EQ(collect(**engine->submit(greedy({5, 6}, 4))).tokens.size(), 4u);
}

TEST_F(ServingEngineTest, RefusesWhatCanNeverRunAndAFullQueue) {
  ServingEngineOptions o;
  o.context_length = 64;
  o.max_queue = 2;
  o.scheduler.policy = BatchingPolicy::kStatic;
  o.scheduler.batch_size = 100;  // nothing starts: the queue fills
  o.scheduler.max_seqs = 1;      // the batch being gathered has one seat
  auto engine = make_engine(o);
  EXPECT_EQ(engine->submit(greedy({}, 4)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(engine->submit(greedy(std::vector<int32_t>(64, 1), 4)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(engine->submit(greedy({1, kVocab}, 4)).status().code(), StatusCode::kInvalidArgument);
  auto a = engine->submit(greedy({1}, 4));  // takes the seat
  auto b = engine->submit(greedy({2}, 4));  // queued
  auto c = engine->submit(greedy({3}, 4));  // queued
  ASSERT_TRUE(a.is_ok() && b.is_ok() && c.is_ok());
  std::this_thread::sleep_for(50ms);  // let the engine thread take them
  EXPECT_EQ(engine->submit(greedy({4}, 4)).status().code(), StatusCode::kResourceExhausted);
  engine.reset();  // shutting down ends the queued ones as cancelled
  EXPECT_EQ(collect(**a).finish_reason, "cancelled");
}

// --max-queue counts requests waiting for room, not requests the engine
// has not picked up yet: a burst that fits the running set is accepted
// whole, however fast it comes (issue 35: 9 of 100 ran, 55 seats free).
TEST_F(ServingEngineTest, ABurstThatFitsTheRunningSetIsAdmittedWhole) {
  ServingEngineOptions o;
  o.max_queue = 1;
  o.scheduler.max_seqs = 64;
  auto engine = make_engine(o);
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 40; ++i) {
    auto s = engine->submit(greedy({1, 2, i}, 8));
    ASSERT_TRUE(s.is_ok()) << i << ": " << s.status().message();
    streams.push_back(*s);
  }
  for (auto& s : streams) EXPECT_EQ(collect(*s).tokens.size(), 8u);
}

// Beyond the seats, max_queue more wait and the rest are refused; nothing
// starts here (a static batch of 100), so the count is exact.
TEST_F(ServingEngineTest, BeyondTheSeatsMaxQueueWaitAndTheRestAreRefused) {
  ServingEngineOptions o;
  o.max_queue = 2;
  o.scheduler.policy = BatchingPolicy::kStatic;
  o.scheduler.batch_size = 100;
  o.scheduler.max_seqs = 8;
  auto engine = make_engine(o);
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 10; ++i) {
    auto s = engine->submit(greedy({1, 2, i}, 4));
    ASSERT_TRUE(s.is_ok()) << i << ": " << s.status().message();
    streams.push_back(*s);
  }
  std::this_thread::sleep_for(50ms);  // taken by the engine thread or not, the same count
  const auto refused = engine->submit(greedy({9}, 4));
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("--max-queue 2"), std::string::npos) << refused.status().message();
  engine.reset();
  for (auto& s : streams) EXPECT_EQ(collect(*s).finish_reason, "cancelled");
}

// When the KV pool rather than the seats is short, requests wait for blocks,
// and they count against max_queue: 8 blocks of 16 tokens hold two prompts
// of 40 tokens (3 blocks each), not three.
TEST_F(ServingEngineTest, RequestsWaitingForKvBlocksCountAgainstTheQueue) {
  ServingEngineOptions o;
  o.max_queue = 1;
  o.kv_block_size = 16;
  o.kv_cache_bytes = 8 * 16 * 256;  // the tiny model's 256 bytes a token
  o.scheduler.policy = BatchingPolicy::kStatic;
  o.scheduler.batch_size = 100;  // nothing starts: the count is exact
  auto engine = make_engine(o);
  ASSERT_EQ(engine->kv_num_blocks(), 8);
  auto a = engine->submit(greedy(std::vector<int32_t>(40, 1), 4));
  auto b = engine->submit(greedy(std::vector<int32_t>(40, 2), 4));
  auto c = engine->submit(greedy(std::vector<int32_t>(40, 3), 4));  // queued: 2 blocks left
  ASSERT_TRUE(a.is_ok() && b.is_ok() && c.is_ok());
  EXPECT_EQ(engine->submit(greedy({4}, 4)).status().code(), StatusCode::kResourceExhausted);
}

TEST_F(ServingEngineTest, SeededSamplingIsReproducibleAndLogprobsArrive) {
  auto engine = make_engine({});
  EngineRequest r = greedy({10, 20, 30}, 8);
  r.sampling.temperature = 1.0f;
  r.sampling.top_k = 0;
  r.sampling.top_p = 1.0f;
  r.sampling.min_p = 0.0f;
  r.sampling.seed = 42;
  r.sampling.top_logprobs = 3;
  auto s1 = *engine->submit(r);
  auto s2 = *engine->submit(r);
  Output a = collect(*s1), b = collect(*s2);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.top_logprobs, 3 * a.tokens.size());
  r.sampling.seed = 43;
  Output c = collect(**engine->submit(r));
  EXPECT_NE(a.tokens, c.tokens);
}

// Guesses each request's known continuation (from a run without guesses),
// every `wrong_every`-th guess wrong; the request is told by its prompt.
DraftFunction oracle(const std::vector<std::vector<int32_t>>& ps, const std::vector<std::vector<int32_t>>& outputs,
                     int wrong_every) {
  return [=](std::span<const int32_t> history, int max_tokens, std::vector<int32_t>& draft) {
    for (size_t i = 0; i < ps.size(); ++i) {
      const std::vector<int32_t>& p = ps[i];
      const std::vector<int32_t>& out = outputs[i];
      if (history.size() < p.size() || history.size() > p.size() + out.size()) continue;
      if (!std::equal(p.begin(), p.end(), history.begin()) ||
          !std::equal(history.begin() + p.size(), history.end(), out.begin()))
        continue;
      const size_t done = history.size() - p.size();
      for (int k = 0; k < max_tokens && done + k < out.size(); ++k) {
        const int32_t t = out[done + k];
        draft.push_back(wrong_every > 0 && (done + k) % wrong_every == 0 ? (t + 1) % 256 : t);
      }
      return;
    }
  };
}

double metric(const std::string& text, const std::string& name) {
  const auto at = text.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + name.size() + 2));
}

TEST_F(ServingEngineTest, SpeculativeDecodingGivesTheSameTokens) {
  const auto ps = prompts(8);
  ServingEngineOptions plain;
  const std::vector<Output> alone = run_alone(plain, ps, 24);
  std::vector<std::vector<int32_t>> outputs;
  for (const Output& o : alone) outputs.push_back(o.tokens);
  for (int budget : {5, 64, 300}) {
    for (int wrong_every : {0, 3}) {
      ServingEngineOptions o;
      o.scheduler.max_batched_tokens = budget;
      threads_ = 2;  // the engines made from here on
      o.speculation.source = DraftSource::kCustom;
      o.speculation.max_draft = 5;
      o.speculation.custom = oracle(ps, outputs, wrong_every);
      o.speculation.adaptive = false;  // every guess rides along
      o.speculative_max_seqs = 8;
      const std::vector<Output> together = run_together(o, ps, 24);
      for (size_t i = 0; i < ps.size(); ++i) {
        EXPECT_EQ(together[i].tokens, alone[i].tokens) << "prompt " << i << " budget " << budget;
        EXPECT_EQ(together[i].text, alone[i].text);
        EXPECT_EQ(together[i].finish_reason, "length");
      }
    }
  }
  // One at a time, so every decode step may guess: the counters move, and a
  // right guess saves a step.
  ServingEngineOptions o;
  o.speculation.source = DraftSource::kCustom;
  o.speculation.max_draft = 5;
  o.speculation.custom = oracle(ps, outputs, 4);
  o.speculation.row_share = 0.2;  // adaptive, at a fixed row cost: counts do not depend on timing
  auto engine = make_engine(o);
  for (size_t i = 0; i < ps.size(); ++i) EXPECT_EQ(collect(**engine->submit(greedy(ps[i], 24))).tokens, alone[i].tokens);
  const std::string m = engine->metrics_text();
  EXPECT_GT(metric(m, "omnibus_speculative_guessed_tokens_total"), 0) << m;
  EXPECT_GT(metric(m, "omnibus_speculative_accepted_tokens_total"), 0) << m;
  EXPECT_LT(metric(m, "omnibus_engine_steps_total"), 8 * 24) << m;
}

TEST_F(ServingEngineTest, SpeculativeSamplingAndPreemptionGiveTheSameTokens) {
  const auto ps = prompts(6);
  auto sampled = [](std::vector<int32_t> p) {
    EngineRequest r = greedy(std::move(p), 20);
    r.sampling.temperature = 0.8f;
    r.sampling.top_p = 0.9f;
    r.sampling.repetition_penalty = 1.2f;
    r.sampling.frequency_penalty = 0.3f;
    r.sampling.seed = 7;
    return r;
  };
  std::vector<Output> alone;
  {
    auto engine = make_engine({});
    for (const auto& p : ps) alone.push_back(collect(**engine->submit(sampled(p))));
  }
  std::vector<std::vector<int32_t>> outputs;
  for (const Output& o : alone) outputs.push_back(o.tokens);
  ServingEngineOptions small;  // a tiny pool: sequences are preempted and recomputed
  small.kv_block_size = 4;
  small.kv_cache_bytes = 32 * 4 * 256;
  small.prefix_caching = false;
  small.speculation.source = DraftSource::kCustom;
  small.speculation.max_draft = 6;
  small.speculation.custom = oracle(ps, outputs, 5);
  small.speculation.adaptive = false;
  small.speculative_max_seqs = 6;
  auto engine = make_engine(small);
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& p : ps) streams.push_back(*engine->submit(sampled(p)));
  for (size_t i = 0; i < ps.size(); ++i) EXPECT_EQ(collect(*streams[i]).tokens, alone[i].tokens) << i;
  const std::string m = engine->metrics_text();
  EXPECT_GT(metric(m, "omnibus_speculative_accepted_tokens_total"), 0) << m;
  // Prompt-lookup guesses on the same requests, greedy.
  ServingEngineOptions ngram;
  ngram.speculation.source = DraftSource::kNgram;
  ngram.speculation.ngram.min_ngram = 1;
  const std::vector<Output> alone_greedy = run_alone({}, ps, 20);
  const std::vector<Output> with_ngram = run_together(ngram, ps, 20);
  for (size_t i = 0; i < ps.size(); ++i) EXPECT_EQ(with_ngram[i].tokens, alone_greedy[i].tokens) << i;
}

}  // namespace
}  // namespace omnibus
