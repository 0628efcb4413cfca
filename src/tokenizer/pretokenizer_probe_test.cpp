// Pre-tokenizer splits against llama.cpp's, on texts chosen to tell them
// apart (case changes inside words, contractions, slashes, scripts). A
// vocabulary of byte tokens plus, for each probe text, a chain of merges
// that builds it whole (tools/make_tokenizer_golden.py probe_vocabulary)
// turns every split into a visible token boundary, where a real
// vocabulary's merges would often hide it. The ids are llama.cpp's
// (tests/golden/pretokenizer_probe_PRE.jsonl; the texts in
// pretokenizer_probe_corpus.jsonl). No model file needed.
#include <gtest/gtest.h>

#include <set>

#include "tokenizer/golden_test_support.h"
#include "tokenizer/test_vocabs.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace omnibus {
namespace {

// probe_merges() of the script: (text[:k], text[k]) over characters.
std::vector<std::pair<std::string, std::string>> probe_merges(const std::vector<std::string>& texts) {
  std::vector<std::pair<std::string, std::string>> merges;
  std::set<std::pair<std::string, std::string>> seen;
  for (const std::string& text : texts) {
    std::vector<std::string> chars;
    for (uint32_t cp : tokenizer_internal::decode_utf8_lenient(text)) {
      chars.emplace_back();
      tokenizer_internal::append_utf8(cp, &chars.back());
    }
    std::string prefix = chars.empty() ? "" : chars[0];
    for (size_t k = 1; k < chars.size(); ++k) {
      if (seen.insert({prefix, chars[k]}).second) merges.emplace_back(prefix, chars[k]);
      prefix += chars[k];
    }
  }
  return merges;
}

class PretokenizerProbeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PretokenizerProbeTest, SplitsAsLlamaCpp) {
  std::vector<std::string> texts;
  for (const auto& t : golden::read_jsonl("tests/golden/pretokenizer_probe_corpus.jsonl"))
    texts.push_back(t.get<std::string>());
  const auto records = golden::read_jsonl("tests/golden/pretokenizer_probe_" + GetParam() + ".jsonl");
  ASSERT_GE(texts.size(), 40u);
  ASSERT_EQ(records.size(), texts.size());
  auto tok = Tokenizer::create(testing_vocabs::byte_level_vocab(probe_merges(texts), {}, GetParam()));
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  int mismatches = 0;
  for (const auto& r : records) {
    const std::string text = r["text"].get<std::string>();
    const auto want = r["ids"].get<std::vector<int32_t>>();
    const auto got = (*tok)->encode(text, /*add_special=*/false, /*parse_special=*/false);
    if (got != want) {
      ++mismatches;
      ADD_FAILURE() << GetParam() << " " << nlohmann::json(text).dump()
                    << "\n  llama.cpp: " << nlohmann::json(want).dump()
                    << "\n  omnibus:   " << nlohmann::json(got).dump();
    }
  }
  EXPECT_EQ(mismatches, 0);
}

INSTANTIATE_TEST_SUITE_P(Pre, PretokenizerProbeTest, ::testing::Values("gpt-4o", "llama-bpe"), [](const auto& info) {
  std::string name = info.param;
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
});

}  // namespace
}  // namespace omnibus
