// Our tokenizer against llama.cpp on the real model: the ids of every string
// of tests/golden/tokenizer_corpus.jsonl, with and without special-token
// parsing, and the text the ids decode back to. The golden file comes from
// tools/make_tokenizer_golden.py. Needs the model: set OMNIBUS_MODEL to the
// SmolLM2-135M-Instruct GGUF (the test skips otherwise).
#include <gtest/gtest.h>

#include "tokenizer/golden_test_support.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"

namespace omnibus {
namespace {

using golden::ids_to_string;

constexpr const char* kGoldenPath = "tests/golden/tokenizer_golden_smollm2.jsonl";

class GoldenTokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = golden::model_path();
    if (path.empty()) {
      OMNIBUS_SKIP_OR_FAIL_WITHOUT_MODEL("OMNIBUS_MODEL is not set; set it to SmolLM2-135M-Instruct (GGUF)");
    }
    auto vocab = golden::load_vocab(path);
    ASSERT_TRUE(vocab.is_ok()) << vocab.status().to_string();
    if (!golden::is_smollm2(*vocab)) {
      GTEST_SKIP() << "the golden data is for SmolLM2 (pre 'smollm', 49152 tokens); this model has pre '"
                   << vocab->pre << "' and " << vocab->tokens.size() << " tokens";
    }
    auto tokenizer = Tokenizer::create(std::move(vocab).value());
    ASSERT_TRUE(tokenizer.is_ok()) << tokenizer.status().to_string();
    tokenizer_ = std::move(tokenizer).value();
    records_ = golden::read_jsonl(kGoldenPath);
    ASSERT_GE(records_.size(), 300u) << "cannot read " << kGoldenPath << " (run from the repository root)";
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

TEST_F(GoldenTokenizerTest, EncodeWithSpecialTokensMatchesLlamaCpp) { check_encode("ids", true); }

TEST_F(GoldenTokenizerTest, EncodePlainTextMatchesLlamaCpp) { check_encode("ids_plain", false); }

TEST_F(GoldenTokenizerTest, DecodeMatchesLlamaCppPieces) {
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

TEST_F(GoldenTokenizerTest, StreamingMatchesDecodeAndRestoresTheText) {
  // Without special tokens the streamed text is the original string, except
  // where the vocabulary has no token for a byte (SmolLM2 lacks 0x1D), which
  // llama.cpp drops too.
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

TEST_F(GoldenTokenizerTest, SmolLm2SpecialIds) {
  EXPECT_EQ(tokenizer_->bos_id(), 1);
  EXPECT_EQ(tokenizer_->eos_id(), 2);
  EXPECT_FALSE(tokenizer_->add_bos());
  EXPECT_TRUE(tokenizer_->is_end_of_generation(2));  // <|im_end|>
  EXPECT_TRUE(tokenizer_->is_end_of_generation(0));  // <|endoftext|>
  EXPECT_FALSE(tokenizer_->is_end_of_generation(1));
  EXPECT_NE(tokenizer_->vocab().chat_template.find("<|im_start|>"), std::string::npos);
}

}  // namespace
}  // namespace omnibus
