// Byte-level BPE on hand-built vocabularies: merge order, tie-breaking,
// pre-tokenizer boundaries, special tokens, byte fallback, decoding.
#include <gtest/gtest.h>

#include <algorithm>

#include "tokenizer/test_vocabs.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace omnibus {
namespace {

using testing_vocabs::byte_level_vocab;
using testing_vocabs::gpt2;
using testing_vocabs::id_of;

std::unique_ptr<Tokenizer> make(VocabData v) {
  auto t = Tokenizer::create(std::move(v));
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return t.is_ok() ? std::move(t).value() : nullptr;
}

// Ids of the given raw pieces in `v` (each must be a token).
std::vector<int32_t> ids(const VocabData& v, const std::vector<std::string>& raw_pieces) {
  std::vector<int32_t> out;
  for (const auto& p : raw_pieces) {
    const int32_t id = id_of(v, gpt2(p));
    EXPECT_GE(id, 0) << "no token for '" << p << "'";
    out.push_back(id);
  }
  return out;
}

TEST(BpeTokenizerTest, MergesFormWholeWords) {
  const VocabData v = byte_level_vocab({{"t", "h"}, {"th", "e"}, {" ", "the"}});
  auto tok = make(v);
  EXPECT_EQ(tok->encode("the", false, false), ids(v, {"the"}));
  EXPECT_EQ(tok->encode(" the", false, false), ids(v, {" the"}));
  EXPECT_EQ(tok->encode("theme", false, false), ids(v, {"the", "m", "e"}));
}

TEST(BpeTokenizerTest, LowestRankMergesFirst) {
  // "abc": with "b c" ranked before "a b", b and c merge and "a b" never applies.
  const VocabData bc_first = byte_level_vocab({{"b", "c"}, {"a", "b"}});
  EXPECT_EQ(make(bc_first)->encode("abc", false, false), ids(bc_first, {"a", "bc"}));
  const VocabData ab_first = byte_level_vocab({{"a", "b"}, {"b", "c"}});
  EXPECT_EQ(make(ab_first)->encode("abc", false, false), ids(ab_first, {"ab", "c"}));
}

TEST(BpeTokenizerTest, EqualRanksMergeLeftmostFirst) {
  const VocabData v = byte_level_vocab({{"a", "a"}});
  auto tok = make(v);
  EXPECT_EQ(tok->encode("aaa", false, false), ids(v, {"aa", "a"}));
  EXPECT_EQ(tok->encode("aaaaa", false, false), ids(v, {"aa", "aa", "a"}));
}

TEST(BpeTokenizerTest, MergesNeverCrossPreTokenizerBoundaries) {
  // GPT-2 keeps the space with the following word: "a b" is "a" + " b";
  // the merge "a  " (a + space) must not apply across that boundary.
  const VocabData v = byte_level_vocab({{"a", " "}, {" ", "b"}});
  EXPECT_EQ(make(v)->encode("a b", false, false), ids(v, {"a", " b"}));
}

TEST(BpeTokenizerTest, SmollmSplitsEveryDigit) {
  const VocabData v = byte_level_vocab({{"1", "2"}, {" ", "1"}}, {}, "smollm");
  auto tok = make(v);
  EXPECT_EQ(tok->encode("12", false, false), ids(v, {"1", "2"}));
  EXPECT_EQ(tok->encode("a 12", false, false), ids(v, {"a", " ", "1", "2"}));
}

TEST(BpeTokenizerTest, Gpt2KeepsDigitRunsTogether) {
  const VocabData v = byte_level_vocab({{"1", "2"}, {" ", "12"}}, {}, "gpt2");
  EXPECT_EQ(make(v)->encode("a 12", false, false), ids(v, {"a", " 12"}));
}

TEST(BpeTokenizerTest, Llama3IgnoresMergesForWholeTokensAndGroupsDigitsByThree) {
  // "abc" is a token but no merge chain builds it: llama-bpe still emits it whole.
  VocabData v = byte_level_vocab({{"1", "2"}, {"12", "3"}}, {}, "llama-bpe");
  v.tokens.push_back(gpt2("abc"));
  v.token_types.push_back(1);
  v.bos_id = id_of(v, gpt2("a"));
  auto tok = make(v);
  EXPECT_EQ(tok->encode("abc", false, false), std::vector<int32_t>{id_of(v, gpt2("abc"))});
  EXPECT_EQ(tok->encode("12312", false, false), ids(v, {"123", "12"}));
  EXPECT_EQ(tok->encode("1231", false, false), ids(v, {"123", "1"}));
  // llama-bpe adds BOS by default.
  VocabData defaults = v;
  apply_model_defaults(&defaults);
  EXPECT_TRUE(defaults.add_bos);
}

TEST(BpeTokenizerTest, ControlTokensNeedParseSpecial) {
  const VocabData v = byte_level_vocab({}, {{"<|im_start|>", TokenType::kControl}});
  auto tok = make(v);
  const int32_t im_start = id_of(v, "<|im_start|>");
  EXPECT_EQ(tok->encode("x<|im_start|>y", false, true), (std::vector<int32_t>{'x', im_start, 'y'}));
  const auto plain = tok->encode("x<|im_start|>y", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), im_start), 0);
  EXPECT_EQ(tok->decode(plain), "x<|im_start|>y");
}

TEST(BpeTokenizerTest, UserDefinedTokensAreAlwaysMatchedWhole) {
  const VocabData v = byte_level_vocab({}, {{"<tool>", TokenType::kUserDefined}});
  const int32_t tool = id_of(v, "<tool>");
  auto tok = make(v);
  EXPECT_EQ(tok->encode("a<tool>b", false, false), (std::vector<int32_t>{'a', tool, 'b'}));
  // User-defined tokens render even without render_special; control ones do not.
  EXPECT_EQ(tok->token_to_piece(tool), "<tool>");
}

TEST(BpeTokenizerTest, LongerSpecialTokenWinsOverlaps) {
  // "<a><b>" holds "<a>" and "<a><b>"; the longer one is cut out first.
  const VocabData v = byte_level_vocab({}, {{"<a>", TokenType::kControl}, {"<a><b>", TokenType::kControl}});
  auto tok = make(v);
  EXPECT_EQ(tok->encode("<a><b><a>", false, true),
            (std::vector<int32_t>{id_of(v, "<a><b>"), id_of(v, "<a>")}));
}

TEST(BpeTokenizerTest, AddSpecialAddsBosAndEosAsFlagged) {
  VocabData v = byte_level_vocab({}, {{"<s>", TokenType::kControl}, {"</s>", TokenType::kControl}});
  v.bos_id = id_of(v, "<s>");
  v.eos_id = id_of(v, "</s>");
  v.add_bos = true;
  v.add_eos = true;
  auto tok = make(v);
  EXPECT_EQ(tok->encode("hi", true, false), (std::vector<int32_t>{v.bos_id, 'h', 'i', v.eos_id}));
  EXPECT_EQ(tok->encode("hi", false, false), (std::vector<int32_t>{'h', 'i'}));
  EXPECT_EQ(tok->encode("", true, false), (std::vector<int32_t>{v.bos_id, v.eos_id}));
}

TEST(BpeTokenizerTest, EveryByteRoundTrips) {
  const VocabData v = byte_level_vocab({{"\xF0", "\x9F"}, {"\xF0\x9F", "\x98"}});
  auto tok = make(v);
  const std::string emoji = "a \xF0\x9F\x98\x80 \xC3\xA9\t\n";
  const auto encoded = tok->encode(emoji, false, false);
  EXPECT_EQ(tok->decode(encoded), emoji);
  // Invalid UTF-8 is read the way llama.cpp reads it: each bad byte is U+FFFD.
  EXPECT_EQ(tok->decode(tok->encode("x\xFFy", false, false)), "x\xEF\xBF\xBDy");
}

TEST(BpeTokenizerTest, ControlTokensRenderOnlyWhenAsked) {
  const VocabData v = byte_level_vocab({}, {{"<|im_end|>", TokenType::kNormal}});
  auto tok = make(v);
  const int32_t im_end = id_of(v, "<|im_end|>");
  // <|im_end|> ends generation and is forced to control even when typed normal.
  EXPECT_TRUE(tok->is_end_of_generation(im_end));
  EXPECT_TRUE(tok->is_control(im_end));
  EXPECT_EQ(tok->token_to_piece(im_end), "");
  EXPECT_EQ(tok->token_to_piece(im_end, true), "<|im_end|>");
  EXPECT_EQ(tok->token_to_piece(-1), "");
  EXPECT_EQ(tok->token_to_piece(tok->vocab_size()), "");
}

TEST(BpeTokenizerTest, CleanUpSpacesForGpt2ButNotForSmollm) {
  const std::vector<std::string> words = {"a", " ,", " 's"};
  const VocabData gpt2_vocab = byte_level_vocab({{" ", ","}, {" ", "'"}, {" '", "s"}}, {}, "gpt2");
  const VocabData smollm_vocab = byte_level_vocab({{" ", ","}, {" ", "'"}, {" '", "s"}}, {}, "smollm");
  EXPECT_EQ(make(gpt2_vocab)->decode(ids(gpt2_vocab, words)), "a,'s");
  EXPECT_EQ(make(smollm_vocab)->decode(ids(smollm_vocab, words)), "a , 's");
}

TEST(BpeTokenizerTest, CreateRejectsBrokenVocabularies) {
  VocabData v = byte_level_vocab({{"a", "b"}});
  v.merges.push_back("nospace");
  EXPECT_EQ(Tokenizer::create(v).status().code(), StatusCode::kCorrupt);

  v = byte_level_vocab({});
  v.tokens.push_back(v.tokens[5]);
  v.token_types.push_back(1);
  EXPECT_EQ(Tokenizer::create(v).status().code(), StatusCode::kCorrupt);  // duplicate text

  v = byte_level_vocab({});
  v.eos_id = 300;
  EXPECT_EQ(Tokenizer::create(v).status().code(), StatusCode::kOutOfRange);

  v = byte_level_vocab({});
  v.scores.assign(7, 0.0f);
  EXPECT_EQ(Tokenizer::create(v).status().code(), StatusCode::kCorrupt);

  v = byte_level_vocab({});
  v.token_types[3] = 9;
  EXPECT_EQ(Tokenizer::create(v).status().code(), StatusCode::kCorrupt);

  v = byte_level_vocab({});
  v.add_bos = true;  // but no BOS id
  EXPECT_EQ(Tokenizer::create(v).status().code(), StatusCode::kInvalidArgument);

  v = byte_level_vocab({});
  v.model = "t5";
  EXPECT_EQ(Tokenizer::create(v).status().code(), StatusCode::kUnsupported);
}

TEST(BpeTokenizerTest, ArbitraryBytesRoundTripAsLlamaCppReadsThem) {
  // Overlong forms, surrogates, truncated and stray bytes: llama.cpp turns
  // each undecodable byte into U+FFFD and keeps what decodes (surrogates and
  // overlong forms included, re-encoded canonically).
  const VocabData v = byte_level_vocab({{"a", "b"}, {" ", "ab"}}, {}, "llama-bpe");
  auto tok = make(v);
  EXPECT_EQ(tok->decode(tok->encode("\xC0\x80|\xED\xA0\x80|\xF8|\xE2\x82|\x80", false, false)),
            std::string(1, '\0') + "|\xED\xA0\x80|\xEF\xBF\xBD|\xEF\xBF\xBD\xEF\xBF\xBD|\xEF\xBF\xBD");
  uint32_t state = 7;
  for (int round = 0; round < 33; ++round) {
    std::string text;
    for (int i = 0; i < 1 + round * 7; ++i) {
      state = state * 1103515245u + 12345u;
      text.push_back(static_cast<char>(state >> 23));
    }
    std::string canonical;
    for (uint32_t cp : tokenizer_internal::decode_utf8_lenient(text)) tokenizer_internal::append_utf8(cp, &canonical);
    EXPECT_EQ(tok->decode(tok->encode(text, true, true)), canonical);
  }
}

TEST(BpeTokenizerTest, UnknownPreTokenizerFallsBackToDefault) {
  const VocabData v = byte_level_vocab({}, {}, "no-such-pre");
  auto tok = make(v);
  ASSERT_NE(tok, nullptr);
  // The default chain isolates punctuation runs and groups digits by three.
  EXPECT_EQ(tok->decode(tok->encode("ab,cd 1234", false, false)), "ab,cd 1234");
}

}  // namespace
}  // namespace omnibus
