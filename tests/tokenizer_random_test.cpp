// The real models' tokenizers (OMNIBUS_MODEL, byte-level BPE; and
// OMNIBUS_GEMMA_MODEL, SentencePiece) on random input: no crash, no
// out-of-range id, text survives encode -> decode exactly when it is valid
// UTF-8, and no token covers more than max_bytes_per_token() bytes (the
// server refuses long texts unread on that bound).
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "gguf/gguf_file.h"
#include "real_model.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab_from_gguf.h"

namespace omnibus {
namespace {

bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (int k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    i += len;
  }
  return true;
}

// Random strings mixing ASCII, whitespace runs, multi-byte characters,
// special-token text and raw (often invalid) bytes.
std::string random_text(std::mt19937& rng) {
  static const char* kPieces[] = {" ", "  ", "\n", "\t", "\r\n", "a", "Z", "7", "123", "'s", "don't", "é", "ß",
                                  "中文", "日本", "🙂", "👍🏽", "<|im_start|>", "<|im_end|>", "<|endoftext|>", "{", "}",
                                  "::", "->", "   x", "ΑΒΓ", "\xc3", "\xff", "\xe2\x82", "\x80"};
  std::string s;
  const int n = static_cast<int>(rng() % 40);
  for (int i = 0; i < n; ++i) s += kPieces[rng() % std::size(kPieces)];
  return s;
}

void check_random_texts(const char* env) {
  const char* path = std::getenv(env);
  if (path == nullptr || *path == 0) OMNIBUS_SKIP_OR_FAIL_WITHOUT_MODEL(std::string(env) + " is not set");
  auto file = GgufFile::open(path);
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  auto vocab = vocab_from_gguf(**file);
  ASSERT_TRUE(vocab.is_ok()) << vocab.status().to_string();
  auto tok = Tokenizer::create(std::move(vocab).value());
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  const size_t max_bytes = (*tok)->max_bytes_per_token();
  std::mt19937 rng(12345);
  int valid = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::string text = random_text(rng);
    for (bool parse_special : {false, true}) {
      const auto ids = (*tok)->encode(text, false, parse_special);
      for (int32_t id : ids) ASSERT_TRUE((*tok)->is_valid_id(id)) << id;
      ASSERT_GE(ids.size() * max_bytes, text.size()) << "max_bytes_per_token " << max_bytes;
      if (valid_utf8(text)) {
        EXPECT_EQ((*tok)->decode(ids, /*render_special=*/true), text) << "parse_special " << parse_special;
        valid += !parse_special;
      }
    }
  }
  EXPECT_GT(valid, 500);  // the generator must produce plenty of valid text too
  // The longest texts per token: runs of one character, which merge most.
  for (const char* unit : {" ", "a", "=", "-", "\n", "0", "é"}) {
    std::string run;
    for (int k = 0; k < 2000; ++k) run += unit;
    const auto ids = (*tok)->encode(run, false, false);
    EXPECT_GE(ids.size() * max_bytes, run.size()) << "a run of '" << unit << "'";
  }
}

TEST(TokenizerRandomTest, DefaultModelVocab) { check_random_texts("OMNIBUS_MODEL"); }
TEST(TokenizerRandomTest, GemmaVocab) { check_random_texts("OMNIBUS_GEMMA_MODEL"); }

}  // namespace
}  // namespace omnibus
