// The tokenizer paths SmolLM2 does not use (Llama 3, Qwen 2, GPT-2 and
// default pre-tokenizers; SentencePiece), against llama.cpp. The vocabularies
// are derived from the SmolLM2 model (OMNIBUS_MODEL) the same way
// tools/make_tokenizer_golden.py derives them for llama.cpp; the golden
// ids are in tests/golden/tokenizer_golden_variants.jsonl.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "tokenizer/byte_level.h"
#include "tokenizer/golden_test_support.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace omnibus {
namespace {

using golden::ids_to_string;

constexpr const char* kGoldenPath = "tests/golden/tokenizer_golden_variants.jsonl";

// spm_vocabulary() of tools/make_tokenizer_golden.py, in C++.
VocabData spm_vocabulary(const VocabData& base) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  VocabData v;
  v.model = "llama";
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.token_types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    v.tokens.push_back(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">");
    v.token_types.push_back(6);
  }
  v.scores.assign(v.tokens.size(), 0.0f);
  std::set<std::string> seen(v.tokens.begin(), v.tokens.end());
  for (size_t i = 0; i < base.tokens.size(); ++i) {
    if (base.token_types[i] != 1) continue;
    std::string raw;
    bool in_alphabet = true;
    for (uint32_t cp : tokenizer_internal::decode_utf8_lenient(base.tokens[i])) {
      const int byte = tokenizer_internal::byte_from_gpt2_codepoint(cp);
      in_alphabet = in_alphabet && byte >= 0;
      raw.push_back(static_cast<char>(byte));
    }
    if (!in_alphabet || !tokenizer_internal::is_valid_utf8(raw)) continue;
    std::string piece;
    for (char c : raw) piece += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
    if (piece.empty() || piece.find('\0') != std::string::npos || !seen.insert(piece).second) continue;
    v.tokens.push_back(piece);
    v.token_types.push_back(1);
    v.scores.push_back(-static_cast<float>(i));
  }
  v.tokens.insert(v.tokens.end(), {"<|im_start|>", "<|im_end|>"});
  v.token_types.insert(v.token_types.end(), {3, 3});
  v.scores.insert(v.scores.end(), {0.0f, 0.0f});
  apply_model_defaults(&v);  // add_bos, add_space_prefix, <unk>/<s>/</s> at 0/1/2
  v.pad_id = 0;
  return v;
}

class VariantGoldenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = golden::model_path();
    if (path.empty()) {
      OMNIBUS_SKIP_OR_FAIL_WITHOUT_MODEL("OMNIBUS_MODEL is not set; set it to SmolLM2-135M-Instruct (GGUF)");
    }
    auto vocab = golden::load_vocab(path);
    ASSERT_TRUE(vocab.is_ok()) << vocab.status().to_string();
    if (!golden::is_smollm2(*vocab)) GTEST_SKIP() << "the golden data is for SmolLM2";
    base_ = std::move(vocab).value();
    for (const auto& r : golden::read_jsonl(kGoldenPath)) records_[r["variant"].get<std::string>()].push_back(r);
    ASSERT_FALSE(records_.empty()) << "cannot read " << kGoldenPath << " (run from the repository root)";
  }

  void check(const std::string& variant, VocabData vocab) {
    auto created = Tokenizer::create(std::move(vocab));
    ASSERT_TRUE(created.is_ok()) << created.status().to_string();
    const Tokenizer& tok = **created;
    const auto& records = records_[variant];
    ASSERT_GE(records.size(), 300u) << "no golden records for " << variant;
    int mismatches = 0;
    for (const auto& r : records) {
      const std::string text = r["text"].get<std::string>();
      const auto ids = tok.encode(text, /*add_special=*/true, /*parse_special=*/true);
      const auto ids_plain = tok.encode(text, /*add_special=*/false, /*parse_special=*/false);
      const std::string decoded = golden::to_hex(tok.decode(r["ids"].get<std::vector<int32_t>>()));
      const bool ok = ids == r["ids"].get<std::vector<int32_t>>() &&
                      ids_plain == r["ids_plain"].get<std::vector<int32_t>>() &&
                      decoded == r["decoded_hex"].get<std::string>();
      if (!ok && ++mismatches <= 10) {
        ADD_FAILURE() << variant << " text " << nlohmann::json(text).dump() << "\n  llama.cpp: " << r["ids"].dump()
                      << " / " << r["ids_plain"].dump() << " / " << r["decoded_hex"].get<std::string>()
                      << "\n  ours:      " << ids_to_string(ids) << " / " << ids_to_string(ids_plain) << " / "
                      << decoded;
      }
    }
    EXPECT_EQ(mismatches, 0) << variant << ": of " << records.size() << " strings";
  }

  VocabData with_pre(const std::string& pre) const {
    VocabData v = base_;
    v.pre = pre;
    return v;
  }

  VocabData base_;
  std::map<std::string, std::vector<nlohmann::json>> records_;
};

TEST_F(VariantGoldenTest, Llama3PreTokenizer) { check("llama-bpe", with_pre("llama-bpe")); }
TEST_F(VariantGoldenTest, Qwen2PreTokenizer) { check("qwen2", with_pre("qwen2")); }
TEST_F(VariantGoldenTest, Gpt2PreTokenizer) { check("gpt-2", with_pre("gpt-2")); }
TEST_F(VariantGoldenTest, DefaultPreTokenizer) { check("default", with_pre("default")); }
TEST_F(VariantGoldenTest, Gpt4oPreTokenizer) { check("gpt-4o", with_pre("gpt-4o")); }
TEST_F(VariantGoldenTest, SentencePiece) { check("spm", spm_vocabulary(base_)); }

}  // namespace
}  // namespace omnibus
