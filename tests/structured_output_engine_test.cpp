// Constrained decoding through the serving engine (EngineRequest::grammar),
// on a tiny random model with a byte vocabulary: whatever the random
// logits want, the text is a prefix of a sentence of the grammar, it ends
// (finish "stop") exactly when the grammar can end and nothing else may
// follow, with the end token allowed only once the sentence is whole; the
// masks hold under sampling, with guesses (speculative decoding) and with
// ignore_eos; unconstrained requests beside constrained ones are untouched.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "engine/serving_engine.h"
#include "engine_test_util.h"
#include "grammar/grammar.h"
#include "grammar/grammar_automaton.h"
#include "tiny_model.h"

namespace omnibus {
namespace {

constexpr int kVocab = testing::kByteVocab;

struct Output {
  std::string text;
  std::vector<int32_t> tokens;
  std::string finish_reason;
};

class StructuredOutputEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::TinyModelSpec spec;
    spec.vocab = kVocab;
    spec.n_layer = 2;
    spec.tied_output = false;
    model_bytes_ = testing::make_tiny_model_bytes(spec);
    model_ = testing::load_tiny_model(model_bytes_);
  }

  std::unique_ptr<ServingEngine> make_engine(ServingEngineOptions options = {}) {
    std::unique_ptr<Tokenizer> tok = testing::byte_tokenizer();
    EXPECT_NE(tok, nullptr);
    options.context_length = 512;
    options.kv_cache_bytes = int64_t{16} << 20;
    options.model_id = "tiny";
    options.announce = false;
    backends_.push_back(std::make_unique<CpuBackend>(1));
    auto engine = ServingEngine::create(model_, *backends_.back(), std::move(tok), ChatFormat{}, options);
    EXPECT_TRUE(engine.is_ok()) << engine.status().message();
    return std::move(engine).value();
  }

  static std::shared_ptr<const Grammar> grammar(const std::string& text) {
    Result<Grammar> g = parse_gbnf(text);
    EXPECT_TRUE(g.is_ok()) << g.status().to_string();
    return std::make_shared<const Grammar>(std::move(g).value());
  }

  static EngineRequest request(std::vector<int32_t> prompt, int64_t max_tokens, std::shared_ptr<const Grammar> g,
                               float temperature = 0, uint64_t seed = 0) {
    EngineRequest r;
    r.prompt = std::move(prompt);
    r.max_tokens = max_tokens;
    r.sampling.temperature = temperature;
    r.sampling.top_k = 0;
    r.sampling.top_p = 1;
    r.sampling.min_p = 0;
    r.sampling.seed = seed;
    r.grammar = std::move(g);
    return r;
  }

  static Output collect(RequestStream& stream) {
    Output out;
    for (const StreamEvent& e : testing::wait_for_finish(stream)) {
      out.text += e.text;
      for (const GeneratedToken& t : e.tokens) out.tokens.push_back(t.token);
      if (e.finished) out.finish_reason = e.finish_reason;
    }
    return out;
  }

  // A finished sentence when it stopped, else a prefix of one.
  static void expect_valid(const Grammar& g, const Output& out) {
    GrammarAutomaton automaton(std::shared_ptr<const Grammar>(std::shared_ptr<const Grammar>(), &g));
    GrammarPosition at = automaton.start();
    ASSERT_TRUE(automaton.advance(at, out.text)) << "'" << out.text << "'";
    if (out.finish_reason == "stop") {
      EXPECT_TRUE(automaton.can_end(at)) << "'" << out.text << "'";
    } else {
      EXPECT_EQ(out.finish_reason, "length") << "'" << out.text << "'";
    }
  }

  std::vector<uint8_t> model_bytes_;
  std::shared_ptr<const Model> model_;
  std::vector<std::unique_ptr<CpuBackend>> backends_;
};

const char* kObjectGrammar =
    R"(root ::= "{" ws "\"id\":" ws [1-9] [0-9]{0,3} "," ws "\"tag\":" ws "\"" [a-z]{1,6} "\"" ws "}"
ws ::= | " "
)";

TEST_F(StructuredOutputEngineTest, GreedyAndSampledOutputsFollowTheGrammarAndStopAtItsEnd) {
  auto engine = make_engine();
  auto g = grammar(kObjectGrammar);
  int stopped = 0;
  for (uint64_t seed = 0; seed < 12; ++seed) {
    const float temperature = seed == 0 ? 0.0f : 1.5f;
    const std::vector<int32_t> prompt = {static_cast<int32_t>(10 + seed), 20, 30};
    Output out = collect(**engine->submit(request(prompt, 60, g, temperature, seed)));
    expect_valid(*g, out);
    stopped += out.finish_reason == "stop";
  }
  // The grammar is at most 34 bytes long: every one ends within 60 tokens.
  EXPECT_EQ(stopped, 12);
}

TEST_F(StructuredOutputEngineTest, EndComesOnlyWhenTheSentenceIsWhole) {
  auto engine = make_engine();
  // After "ab" the sentence may end or go on: the end token is allowed
  // there and only there, so outputs are "ab" or "ab" + digits.
  auto g = grammar("root ::= \"ab\" [0-9]*\n");
  for (uint64_t seed = 1; seed < 10; ++seed) {
    Output out = collect(**engine->submit(request({5, 6, 7}, 8, g, 2.0f, seed)));
    expect_valid(*g, out);
    ASSERT_GE(out.text.size(), 2u);
    EXPECT_EQ(out.text.substr(0, 2), "ab");
  }
}

TEST_F(StructuredOutputEngineTest, IgnoreEosStillEndsWhereTheGrammarDoes) {
  auto engine = make_engine();
  auto g = grammar("root ::= \"yes\" | \"no\"\n");
  EngineRequest r = request({1, 2, 3}, 50, g);
  r.ignore_eos = true;
  Output out = collect(**engine->submit(r));
  EXPECT_TRUE(out.text == "yes" || out.text == "no") << out.text;
  EXPECT_EQ(out.finish_reason, "stop");
  EXPECT_EQ(out.tokens.size(), out.text.size());  // the end is not a token of the output
}

TEST_F(StructuredOutputEngineTest, GuessesThatBreakTheGrammarAreRejected) {
  auto g = grammar(kObjectGrammar);
  auto plain = make_engine();
  const Output want = collect(**plain->submit(request({40, 41, 42}, 60, g)));
  // Every guess is a byte the grammar never allows here ('~') or a right one.
  ServingEngineOptions o;
  o.speculation.source = DraftSource::kCustom;
  o.speculation.adaptive = false;
  o.speculation.max_draft = 4;
  o.speculation.custom = [](std::span<const int32_t>, int max_tokens, std::vector<int32_t>& draft) {
    for (int i = 0; i < max_tokens; ++i) draft.push_back(i % 2 == 0 ? '~' : '"');
  };
  auto guessing = make_engine(o);
  const Output got = collect(**guessing->submit(request({40, 41, 42}, 60, g)));
  EXPECT_EQ(got.tokens, want.tokens);
  EXPECT_EQ(got.finish_reason, want.finish_reason);
  expect_valid(*g, got);
}

TEST_F(StructuredOutputEngineTest, UnconstrainedNeighboursAreUntouched) {
  auto alone_engine = make_engine();
  EngineRequest free_request = request({9, 8, 7, 6}, 24, nullptr);
  free_request.ignore_eos = true;
  const Output alone = collect(**alone_engine->submit(free_request));
  auto engine = make_engine();
  auto g = grammar(kObjectGrammar);
  auto constrained = *engine->submit(request({9, 8, 7, 6}, 60, g));
  auto free_stream = *engine->submit(free_request);
  const Output beside = collect(*free_stream);
  expect_valid(*g, collect(*constrained));
  EXPECT_EQ(beside.tokens, alone.tokens);
}

TEST_F(StructuredOutputEngineTest, RefusedWithoutATokenizer) {
  testing::TinyModelSpec spec;
  spec.vocab = kVocab;
  spec.n_layer = 1;
  CpuBackend backend(1);
  ServingEngineOptions options;
  options.context_length = 128;
  options.kv_cache_bytes = int64_t{4} << 20;
  options.announce = false;
  auto engine = ServingEngine::create(model_, backend, nullptr, ChatFormat{}, options);
  ASSERT_TRUE(engine.is_ok()) << engine.status().message();
  auto stream = (*engine)->submit(request({1, 2}, 4, grammar("root ::= \"a\"\n")));
  ASSERT_FALSE(stream.is_ok());
  EXPECT_NE(stream.status().message().find("grammar needs a tokenizer"), std::string::npos);
}

}  // namespace
}  // namespace omnibus
