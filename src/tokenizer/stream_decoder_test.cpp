#include "tokenizer/stream_decoder.h"

#include <gtest/gtest.h>

#include "tokenizer/test_vocabs.h"
#include "tokenizer/utf8.h"

namespace omnibus {
namespace {

// Byte-level vocabulary: token id == byte value for 0..255, plus two
// multi-byte tokens that cut an emoji in uneven places.
class StreamDecoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    VocabData v = testing_vocabs::byte_level_vocab({{"\xF0", "\x9F"}, {"\x98\x80", "!"}},
                                                   {{"<|im_end|>", TokenType::kControl}});
    first_half_ = testing_vocabs::id_of(v, testing_vocabs::gpt2("\xF0\x9F"));
    second_half_ = testing_vocabs::id_of(v, testing_vocabs::gpt2("\x98\x80!"));
    im_end_ = testing_vocabs::id_of(v, "<|im_end|>");
    auto tokenizer = Tokenizer::create(std::move(v));
    ASSERT_TRUE(tokenizer.is_ok()) << tokenizer.status().to_string();
    tokenizer_ = std::move(tokenizer).value();
  }
  std::unique_ptr<Tokenizer> tokenizer_;
  int32_t first_half_ = -1, second_half_ = -1, im_end_ = -1;
};

TEST_F(StreamDecoderTest, EmojiSplitAcrossByteTokensComesOutWhole) {
  StreamDecoder d(*tokenizer_);
  EXPECT_EQ(d.push('a'), "a");
  EXPECT_EQ(d.push(0xF0), "");
  EXPECT_EQ(d.push(0x9F), "");
  EXPECT_EQ(d.push(0x98), "");
  EXPECT_EQ(d.pending_bytes(), 3u);
  EXPECT_EQ(d.push(0x80), "\xF0\x9F\x98\x80");
  EXPECT_EQ(d.pending_bytes(), 0u);
  EXPECT_EQ(d.flush(), "");
}

TEST_F(StreamDecoderTest, TokensEndingMidCharacter) {
  StreamDecoder d(*tokenizer_);
  EXPECT_EQ(d.push(first_half_), "");
  EXPECT_EQ(d.push(second_half_), "\xF0\x9F\x98\x80!");
}

TEST_F(StreamDecoderTest, FlushReplacesAnUnfinishedCharacter) {
  StreamDecoder d(*tokenizer_);
  EXPECT_EQ(d.push('x'), "x");
  EXPECT_EQ(d.push(0xE2), "");
  EXPECT_EQ(d.push(0x82), "");
  EXPECT_EQ(d.flush(), "\xEF\xBF\xBD");
  EXPECT_EQ(d.pending_bytes(), 0u);
  EXPECT_EQ(d.push('y'), "y");  // usable again after flush
}

TEST_F(StreamDecoderTest, BytesThatCanNeverCompleteAreReplacedAtOnce) {
  StreamDecoder d(*tokenizer_);
  EXPECT_EQ(d.push(0x80), "\xEF\xBF\xBD");            // stray continuation byte
  EXPECT_EQ(d.push(0xF0), "");                        // may still become an emoji
  EXPECT_EQ(d.push('a'), "\xEF\xBF\xBD" "a");         // ... but 'a' ends it
  EXPECT_EQ(d.push(0xED), "");
  EXPECT_EQ(d.push(0xA0), "\xEF\xBF\xBD\xEF\xBF\xBD");  // ED A0 would be a surrogate
}

TEST_F(StreamDecoderTest, ControlTokensAreHiddenUnlessAsked) {
  StreamDecoder plain(*tokenizer_);
  EXPECT_EQ(plain.push(im_end_), "");
  StreamDecoder special(*tokenizer_, /*render_special=*/true);
  EXPECT_EQ(special.push(im_end_), "<|im_end|>");
  EXPECT_EQ(plain.push(-5), "");  // bad ids render as nothing
}

TEST_F(StreamDecoderTest, OutputIsAlwaysValidUtf8AndMatchesSanitizedDecode) {
  // A fixed pseudo-random byte stream (LCG) with many broken sequences.
  uint32_t state = 12345;
  std::vector<int32_t> ids;
  for (int i = 0; i < 4097; ++i) {
    state = state * 1664525u + 1013904223u;
    const uint32_t r = state >> 24;
    ids.push_back(r < 64 ? 'a' + static_cast<int32_t>(r % 26) : static_cast<int32_t>(r));
  }
  StreamDecoder d(*tokenizer_);
  std::string streamed;
  for (int32_t id : ids) {
    const std::string chunk = d.push(id);
    EXPECT_TRUE(tokenizer_internal::is_valid_utf8(chunk));
    streamed += chunk;
  }
  streamed += d.flush();
  EXPECT_EQ(streamed, tokenizer_internal::sanitize_utf8(tokenizer_->decode(ids)));
}

}  // namespace
}  // namespace omnibus
