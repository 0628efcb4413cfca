// SentencePiece BPE ("llama" model) on hand-built vocabularies.
#include <gtest/gtest.h>

#include "tokenizer/test_vocabs.h"
#include "tokenizer/tokenizer.h"

namespace omnibus {
namespace {

using testing_vocabs::id_of;
using testing_vocabs::spm_vocab;

const std::string kSp = "\xE2\x96\x81";  // U+2581, SentencePiece's space

std::unique_ptr<Tokenizer> make(VocabData v) {
  auto t = Tokenizer::create(std::move(v));
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return t.is_ok() ? std::move(t).value() : nullptr;
}

VocabData hello_vocab() {
  return spm_vocab({{kSp, -1}, {"h", -2}, {"e", -2}, {"l", -2}, {"o", -2}, {"w", -2}, {"r", -2}, {"d", -2},
                    {"ll", -3}, {"he", -4}, {"llo", -5}, {"hello", -6}, {kSp + "hello", -7}, {kSp + "w", -8},
                    {"or", -9}, {kSp + "wor", -10}, {kSp + "world", -11}, {"ld", -12}, {kSp + "wo", -13}});
}

TEST(SpmTokenizerTest, AddsBosAndSpacePrefixByDefault) {
  const VocabData v = hello_vocab();
  EXPECT_TRUE(v.add_bos);
  EXPECT_TRUE(v.add_space_prefix);
  auto tok = make(v);
  EXPECT_EQ(tok->encode("hello world", true, false),
            (std::vector<int32_t>{1, id_of(v, kSp + "hello"), id_of(v, kSp + "world")}));
  EXPECT_EQ(tok->encode("hello", false, false), (std::vector<int32_t>{id_of(v, kSp + "hello")}));
  EXPECT_EQ(tok->encode("", true, false), (std::vector<int32_t>{1}));
}

TEST(SpmTokenizerTest, HigherScoreMergesFirst) {
  // "abc": whichever of "ab" / "bc" scores higher is merged; the other pair
  // is then impossible.
  VocabData ab = spm_vocab({{"a", -1}, {"b", -1}, {"c", -1}, {"ab", -2}, {"bc", -3}});
  ab.add_space_prefix = false;
  EXPECT_EQ(make(ab)->encode("abc", false, false), (std::vector<int32_t>{id_of(ab, "ab"), id_of(ab, "c")}));
  VocabData bc = spm_vocab({{"a", -1}, {"b", -1}, {"c", -1}, {"ab", -3}, {"bc", -2}});
  bc.add_space_prefix = false;
  EXPECT_EQ(make(bc)->encode("abc", false, false), (std::vector<int32_t>{id_of(bc, "a"), id_of(bc, "bc")}));
}

TEST(SpmTokenizerTest, EqualScoresMergeLeftmostFirst) {
  VocabData v = spm_vocab({{"a", -1}, {"aa", -2}});
  v.add_space_prefix = false;
  EXPECT_EQ(make(v)->encode("aaa", false, false), (std::vector<int32_t>{id_of(v, "aa"), id_of(v, "a")}));
}

TEST(SpmTokenizerTest, UnknownCharactersFallBackToBytes) {
  VocabData v = spm_vocab({{"a", -1}});
  v.add_space_prefix = false;
  // "é" is C3 A9; "<0xC3>" is id 3 + 0xC3.
  EXPECT_EQ(make(v)->encode("a\xC3\xA9", false, false), (std::vector<int32_t>{id_of(v, "a"), 3 + 0xC3, 3 + 0xA9}));
}

TEST(SpmTokenizerTest, SpacePrefixAfterEverySpecialToken) {
  const VocabData v = hello_vocab();
  auto tok = make(v);
  // llama.cpp prefixes a space to each text fragment that follows a special token.
  EXPECT_EQ(tok->encode("hello</s>hello", false, true),
            (std::vector<int32_t>{id_of(v, kSp + "hello"), 2, id_of(v, kSp + "hello")}));
  // Without parse_special "</s>" is text and spelled in bytes (no tokens for '<', '/', ...).
  const auto plain = tok->encode("</s>", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 2), 0);
}

TEST(SpmTokenizerTest, DecodeTurnsSpacesBackAndDropsThePrefixSpace) {
  const VocabData v = hello_vocab();
  auto tok = make(v);
  const auto encoded = tok->encode("hello world", true, false);
  EXPECT_EQ(tok->decode(encoded), " hello world");  // BOS renders empty, so the space stays (as in llama.cpp)
  EXPECT_EQ(tok->decode(std::vector<int32_t>(encoded.begin() + 1, encoded.end())), "hello world");
  EXPECT_EQ(tok->token_to_piece(id_of(v, kSp + "world")), " world");
  EXPECT_EQ(tok->token_to_piece(3 + 0x41), "A");  // <0x41>
  EXPECT_EQ(tok->token_to_piece(1), "");
  EXPECT_EQ(tok->token_to_piece(1, true), "<s>");
}

TEST(SpmTokenizerTest, EmojiThroughByteFallbackRoundTrips) {
  VocabData v = spm_vocab({{kSp, -1}, {"a", -1}});
  auto tok = make(v);
  const std::string text = "a \xF0\x9F\x98\x80";
  const auto encoded = tok->encode(text, false, false);
  ASSERT_EQ(encoded.size(), 7u);  // ▁ a ▁ + four byte tokens
  EXPECT_EQ(tok->decode(encoded), text);
}

TEST(SpmTokenizerTest, ByteTokensMustBeWrittenAsHex) {
  VocabData v = spm_vocab({});
  v.tokens[10] = "<0xZZ>";
  EXPECT_EQ(Tokenizer::create(v).status().code(), StatusCode::kCorrupt);
}

}  // namespace
}  // namespace omnibus
