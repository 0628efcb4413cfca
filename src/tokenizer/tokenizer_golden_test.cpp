// Our tokenizer against llama.cpp on the real model: the ids of every string
// of tests/golden/tokenizer_corpus.jsonl, with and without special-token
// parsing, and the text the ids decode back to. The golden file comes from
// tools/make_tokenizer_golden.py. Needs the models: OMNIBUS_MODEL for
// SmolLM2-135M-Instruct (byte-level BPE) and OMNIBUS_GEMMA_MODEL for Gemma 3
// 270M (SentencePiece, 262,144 tokens); a test skips without its model,
// unless OMNIBUS_REQUIRE_MODEL=1, which makes it fail.
#include <gtest/gtest.h>

#include <cstdlib>

#include "tokenizer/golden_test_support.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"

namespace omnibus {
namespace {

using golden::ids_to_string;

// A model's vocabulary and the golden tokenizations made from it.
struct GoldenVocab {
  const char* name;
  const char* env_var;  // the model's path
  const char* golden_path;
  size_t vocab_size;    // to catch a wrong model behind the variable
  int32_t bos, eos;
  bool add_bos;
};

const GoldenVocab kSmolLm2{"smollm2", "OMNIBUS_MODEL", "tests/golden/tokenizer_golden_smollm2.jsonl", 49152, 1, 2,
                           false};
const GoldenVocab kGemma3{"gemma3", "OMNIBUS_GEMMA_MODEL", "tests/golden/gemma3/tokenizer_golden_gemma3.jsonl",
                          262144, 2, 1, true};

class GoldenTokenizerTest : public ::testing::TestWithParam<GoldenVocab> {
 protected:
  void SetUp() override {
    const GoldenVocab& g = GetParam();
    const char* path = std::getenv(g.env_var);
    if (path == nullptr || *path == '\0') {
      OMNIBUS_SKIP_OR_FAIL_WITHOUT_MODEL(std::string(g.env_var) + " is not set");
    }
    auto vocab = golden::load_vocab(path);
    ASSERT_TRUE(vocab.is_ok()) << vocab.status().to_string();
    ASSERT_EQ(vocab->tokens.size(), g.vocab_size) << g.env_var << " is not the " << g.name << " model";
    auto tokenizer = Tokenizer::create(std::move(vocab).value());
    ASSERT_TRUE(tokenizer.is_ok()) << tokenizer.status().to_string();
    tokenizer_ = std::move(tokenizer).value();
    records_ = golden::read_jsonl(g.golden_path);
    ASSERT_GE(records_.size(), 300u) << "cannot read " << g.golden_path << " (run from the repository root)";
  }

  // Compares encode(text, false, parse_special) with the ids under `key`.
  void check_encode(const char* key, bool parse_special) {
    int mismatches = 0;
    for (const auto& r : records_) {
      const std::string text = r["text"].get<std::string>();
      const auto expected = r[key].get<std::vector<int32_t>>();
      const auto got = tokenizer_->encode(text, /*add_special=*/false, parse_special);
      if (got != expected && ++mismatches <= 20) {
        ADD_FAILURE() << "text " << nlohmann::json(text).dump() << "\n  llama.cpp: " << ids_to_string(expected)
                      << "\n  ours:      " << ids_to_string(got);
      }
    }
    EXPECT_EQ(mismatches, 0) << "of " << records_.size() << " strings";
  }

  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<nlohmann::json> records_;
};

TEST_P(GoldenTokenizerTest, EncodeWithSpecialTokensMatchesLlamaCpp) { check_encode("ids", true); }

TEST_P(GoldenTokenizerTest, EncodePlainTextMatchesLlamaCpp) { check_encode("ids_plain", false); }

TEST_P(GoldenTokenizerTest, DecodeMatchesLlamaCppPieces) {
  int mismatches = 0;
  for (const auto& r : records_) {
    const auto ids = r["ids"].get<std::vector<int32_t>>();
    const std::string expected = r["pieces_hex"].get<std::string>();
    const std::string got = golden::to_hex(tokenizer_->decode(ids, /*render_special=*/true));
    if (got != expected && ++mismatches <= 20) {
      ADD_FAILURE() << "ids " << ids_to_string(ids) << "\n  llama.cpp: " << expected << "\n  ours:      " << got;
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << records_.size() << " strings";
}

TEST_P(GoldenTokenizerTest, StreamingMatchesDecodeAndRestoresTheText) {
  // Without special tokens the streamed text is the original string, except
  // where the vocabulary has no token for a byte (SmolLM2 lacks 0x1D), which
  // llama.cpp drops too, and (SentencePiece) where a leading space or a
  // normalisation does not come back.
  size_t restored = 0;
  for (const auto& r : records_) {
    const std::string text = r["text"].get<std::string>();
    const auto ids = r["ids_plain"].get<std::vector<int32_t>>();
    StreamDecoder stream(*tokenizer_);
    std::string streamed;
    for (int32_t id : ids) streamed += stream.push(id);
    streamed += stream.flush();
    EXPECT_EQ(streamed, tokenizer_->decode(ids)) << nlohmann::json(text).dump();
    restored += streamed == text;
  }
  EXPECT_GE(restored, records_.size() - 2);
}

TEST_P(GoldenTokenizerTest, SpecialIds) {
  const GoldenVocab& g = GetParam();
  EXPECT_EQ(tokenizer_->bos_id(), g.bos);
  EXPECT_EQ(tokenizer_->eos_id(), g.eos);
  EXPECT_EQ(tokenizer_->add_bos(), g.add_bos);
  EXPECT_TRUE(tokenizer_->is_end_of_generation(g.eos));
  EXPECT_FALSE(tokenizer_->is_end_of_generation(g.bos));
  if (std::string(g.name) == "smollm2") {
    EXPECT_TRUE(tokenizer_->is_end_of_generation(0));  // <|endoftext|>
    EXPECT_NE(tokenizer_->vocab().chat_template.find("<|im_start|>"), std::string::npos);
  }
}

std::string vocab_name(const ::testing::TestParamInfo<GoldenVocab>& info) { return info.param.name; }
INSTANTIATE_TEST_SUITE_P(RealModels, GoldenTokenizerTest, ::testing::Values(kSmolLm2, kGemma3), vocab_name);

}  // namespace
}  // namespace omnibus
