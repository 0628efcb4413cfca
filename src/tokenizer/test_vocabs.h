// Tiny hand-built vocabularies for the tokenizer's unit tests (header only,
// used by the *_test.cpp files of this folder).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tokenizer/byte_level.h"
#include "tokenizer/vocab.h"

namespace omnibus::testing_vocabs {

// `raw` written in the GPT-2 byte alphabet (" the" -> "Ġthe").
inline std::string gpt2(std::string_view raw) {
  std::string out;
  tokenizer_internal::append_gpt2_encoded(raw, &out);
  return out;
}

// A byte-level vocabulary: ids 0..255 are the single bytes (id == byte
// value), then one token per merge result in merge order, then `specials`
// (text, TokenType) in order. Merges are given as raw (left, right) pairs.
inline VocabData byte_level_vocab(const std::vector<std::pair<std::string, std::string>>& merges,
                                  const std::vector<std::pair<std::string, TokenType>>& specials = {},
                                  const std::string& pre = "gpt2") {
  VocabData v;
  v.model = "gpt2";
  v.pre = pre;
  for (int b = 0; b < 256; ++b) v.tokens.push_back(gpt2(std::string(1, static_cast<char>(b))));
  for (const auto& [l, r] : merges) {
    v.merges.push_back(gpt2(l) + " " + gpt2(r));
    const std::string merged = gpt2(l + r);
    bool present = false;
    for (const auto& t : v.tokens) present = present || t == merged;
    if (!present) v.tokens.push_back(merged);
  }
  v.token_types.assign(v.tokens.size(), static_cast<int32_t>(TokenType::kNormal));
  for (const auto& [text, type] : specials) {
    v.tokens.push_back(text);
    v.token_types.push_back(static_cast<int32_t>(type));
  }
  return v;
}

// Index of `text` in v.tokens, or -1.
inline int32_t id_of(const VocabData& v, const std::string& text) {
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (v.tokens[i] == text) return static_cast<int32_t>(i);
  }
  return -1;
}

// A SentencePiece vocabulary: <unk> <s> </s>, the 256 byte tokens (ids
// 3..258), then `pieces` (text with U+2581 for spaces, score) as normal
// tokens.
inline VocabData spm_vocab(const std::vector<std::pair<std::string, float>>& pieces) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  VocabData v;
  v.model = "llama";
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.scores = {0, 0, 0};
  v.token_types = {static_cast<int32_t>(TokenType::kUnknown), static_cast<int32_t>(TokenType::kControl),
                   static_cast<int32_t>(TokenType::kControl)};
  for (int b = 0; b < 256; ++b) {
    v.tokens.push_back(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">");
    v.scores.push_back(0);
    v.token_types.push_back(static_cast<int32_t>(TokenType::kByte));
  }
  for (const auto& [text, score] : pieces) {
    v.tokens.push_back(text);
    v.scores.push_back(score);
    v.token_types.push_back(static_cast<int32_t>(TokenType::kNormal));
  }
  apply_model_defaults(&v);
  return v;
}

}  // namespace omnibus::testing_vocabs
