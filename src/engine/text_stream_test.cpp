// TextStream: control tokens are hidden unless the request renders them
// (gpt-oss's harmony markers, which the server parses), and stop strings
// are matched in the text either way.
#include "engine/text_stream.h"

#include <gtest/gtest.h>

#include "tokenizer/test_vocabs.h"

namespace omnibus {
namespace {

std::unique_ptr<Tokenizer> tokenizer_with_marker() {
  VocabData vocab = testing_vocabs::byte_level_vocab({}, {{"<|channel|>", TokenType::kControl}});
  auto tok = Tokenizer::create(std::move(vocab));
  EXPECT_TRUE(tok.is_ok());
  return std::move(tok).value();
}

std::string stream_text(TextStream& s, const std::vector<int32_t>& ids) {
  std::string out;
  for (int32_t id : ids) out += s.push(id).text;
  return out + s.finish();
}

TEST(TextStreamTest, ControlTokensRenderOnlyWhenAsked) {
  const auto tok = tokenizer_with_marker();
  const std::vector<int32_t> ids = {'a', 256, 'b'};
  TextStream hidden(*tok, {});
  EXPECT_EQ(stream_text(hidden, ids), "ab");
  TextStream shown(*tok, {}, /*render_special=*/true);
  EXPECT_EQ(stream_text(shown, ids), "a<|channel|>b");
  // A stop string may then include the marker.
  TextStream stopped(*tok, {"<|channel|>"}, /*render_special=*/true);
  std::string text;
  bool stop = false;
  for (int32_t id : ids) {
    TextStream::Piece p = stopped.push(id);
    text += p.text;
    if ((stop = p.stopped)) break;
  }
  EXPECT_TRUE(stop);
  EXPECT_EQ(text, "a");
}

}  // namespace
}  // namespace omnibus
