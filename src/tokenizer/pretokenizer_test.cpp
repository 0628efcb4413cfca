// The pre-tokenizer regexes on their own: where words start and end.
#include "tokenizer/pretokenizer.h"

#include <gtest/gtest.h>

namespace omnibus::tokenizer_internal {
namespace {

std::vector<std::string> split(PreTokenizerKind kind, std::string_view text) {
  auto pre = PreTokenizer::create(kind);
  EXPECT_TRUE(pre.is_ok()) << pre.status().to_string();
  std::vector<std::string> words;
  for (const TextSpan& s : (*pre)->split(text)) words.emplace_back(text.substr(s.begin, s.end - s.begin));
  return words;
}

using Words = std::vector<std::string>;

TEST(PreTokenizerTest, Gpt2) {
  EXPECT_EQ(split(PreTokenizerKind::kGpt2, "Hello world's 123  foo\n\nbar"),
            (Words{"Hello", " world", "'s", " 123", " ", " foo", "\n", "\n", "bar"}));
  EXPECT_EQ(split(PreTokenizerKind::kGpt2, "I'M ok!!  "), (Words{"I", "'", "M", " ok", "!!", "  "}));
}

TEST(PreTokenizerTest, DigitsThenGpt2) {
  EXPECT_EQ(split(PreTokenizerKind::kDigitsThenGpt2, "a 123 b"), (Words{"a", " ", "1", "2", "3", " b"}));
  // A space run before a digit ends its piece, so it stays whole.
  EXPECT_EQ(split(PreTokenizerKind::kDigitsThenGpt2, "x   7"), (Words{"x", "   ", "7"}));
}

TEST(PreTokenizerTest, Llama3) {
  EXPECT_EQ(split(PreTokenizerKind::kLlama3, "I'M 12345 fine!!\n\n"),
            (Words{"I", "'M", " ", "123", "45", " fine", "!!\n\n"}));
  EXPECT_EQ(split(PreTokenizerKind::kLlama3, "a \n\n b"), (Words{"a", " \n\n", " b"}));
}

TEST(PreTokenizerTest, Qwen2SplitsDigitsOneByOne) {
  EXPECT_EQ(split(PreTokenizerKind::kQwen2, "x=123"), (Words{"x", "=", "1", "2", "3"}));
}

TEST(PreTokenizerTest, DefaultChain) {
  EXPECT_EQ(split(PreTokenizerKind::kDefault, "ab,,cd 12345"), (Words{"ab", ",,", "cd", " ", "123", "45"}));
}

TEST(PreTokenizerTest, WhitespaceIsUnicodeWhiteSpaceOnly) {
  // U+180E is not White_Space in Unicode (PCRE2's \s would count it): it is
  // "other" and sticks to a leading space, as in llama.cpp.
  EXPECT_EQ(split(PreTokenizerKind::kGpt2, " \xE1\xA0\x8E" "b"), (Words{" \xE1\xA0\x8E", "b"}));
  // U+3000 is whitespace.
  EXPECT_EQ(split(PreTokenizerKind::kGpt2, "a\xE3\x80\x80\xE3\x80\x80" "b"),
            (Words{"a", "\xE3\x80\x80", "\xE3\x80\x80", "b"}));
}

TEST(PreTokenizerTest, Unicode15LettersAreLetters) {
  // U+31350 (CJK Extension H) is a letter in llama.cpp's tables.
  EXPECT_EQ(split(PreTokenizerKind::kGpt2, "a\xF0\xB1\x8D\x90"), (Words{"a\xF0\xB1\x8D\x90"}));
}

TEST(PreTokenizerTest, SpansCoverTheTextExactly) {
  const std::string text = "  mixed \t\n text, with 42 numbers\xE2\x80\xA6 and \xF0\x9F\x98\x80 emoji  ";
  for (auto kind : {PreTokenizerKind::kDefault, PreTokenizerKind::kGpt2, PreTokenizerKind::kDigitsThenGpt2,
                    PreTokenizerKind::kLlama3, PreTokenizerKind::kQwen2}) {
    std::string joined;
    for (const auto& w : split(kind, text)) {
      EXPECT_FALSE(w.empty());
      joined += w;
    }
    EXPECT_EQ(joined, text);
  }
}

TEST(PreTokenizerTest, ConfigNames) {
  EXPECT_EQ(pre_tokenizer_config("smollm").kind, PreTokenizerKind::kDigitsThenGpt2);
  EXPECT_FALSE(pre_tokenizer_config("smollm").clean_spaces);
  EXPECT_EQ(pre_tokenizer_config("llama-bpe").kind, PreTokenizerKind::kLlama3);
  EXPECT_TRUE(pre_tokenizer_config("llama-bpe").ignore_merges);
  EXPECT_EQ(pre_tokenizer_config("qwen2").kind, PreTokenizerKind::kQwen2);
  EXPECT_EQ(pre_tokenizer_config("gpt2").kind, PreTokenizerKind::kGpt2);
  EXPECT_EQ(pre_tokenizer_config("default").kind, PreTokenizerKind::kDefault);
  EXPECT_TRUE(pre_tokenizer_config("default").recognised);
  EXPECT_FALSE(pre_tokenizer_config("made-up").recognised);
}

TEST(PreTokenizerTest, ExpandsClassesInsideAndOutsideBrackets) {
  const std::string e = expand_pattern_classes("\\s+[^\\s\\p{L}]\\S");
  EXPECT_EQ(e.find("\\s"), std::string::npos);
  EXPECT_NE(e.find("[\\t-\\r "), std::string::npos);   // \s outside a class gets its own class
  EXPECT_NE(e.find("[^\\t-\\r "), std::string::npos);  // \S is the negated class
  EXPECT_NE(e.find("\\p{L}\\x{1DF25}"), std::string::npos);
}

}  // namespace
}  // namespace omnibus::tokenizer_internal
