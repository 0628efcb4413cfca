#include "tokenizer/token_attributes.h"

#include <algorithm>

namespace omnibus::tokenizer_internal {

namespace {

uint8_t attribute_of(TokenType type) {
  switch (type) {
    case TokenType::kNormal: return kAttrNormal;
    case TokenType::kUnknown: return kAttrUnknown;
    case TokenType::kControl: return kAttrControl;
    case TokenType::kUserDefined: return kAttrUserDefined;
    case TokenType::kUnused: return kAttrUnused;
    case TokenType::kByte: return kAttrByte;
    case TokenType::kUndefined: break;
  }
  return 0;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

int byte_token_value(std::string_view text) {
  if (text.size() != 6 || !text.starts_with("<0x") || text[5] != '>') return -1;
  const int hi = hex_digit(text[3]), lo = hex_digit(text[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

Result<std::vector<uint8_t>> token_attributes(const VocabData& vocab) {
  const size_t n = vocab.tokens.size();
  std::vector<uint8_t> attributes(n, kAttrNormal);
  for (size_t i = 0; i < vocab.token_types.size() && i < n; ++i) {
    attributes[i] = attribute_of(static_cast<TokenType>(vocab.token_types[i]));
    if ((attributes[i] & kAttrByte) && byte_token_value(vocab.tokens[i]) < 0) {
      return Status::corrupt("token " + std::to_string(i) + " ('" + vocab.tokens[i] +
                             "') has the byte type but is not written <0xXX>");
    }
  }
  for (size_t i = 0; i < n; ++i) {
    for (std::string_view eog : kEndOfGenerationTexts) {
      if (vocab.tokens[i] == eog) attributes[i] |= kAttrControl;
    }
  }
  return attributes;
}

std::vector<int32_t> special_token_order(const std::vector<std::string>& tokens,
                                         const std::vector<uint8_t>& attributes, bool user_defined_only) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const uint8_t a = attributes[i];
    const bool special = (a & (kAttrControl | kAttrUserDefined | kAttrUnknown)) != 0;
    const bool hidden_without_parse = (a & (kAttrControl | kAttrUnknown)) != 0;
    if (special && !(user_defined_only && hidden_without_parse)) ids.push_back(static_cast<int32_t>(i));
  }
  std::stable_sort(ids.begin(), ids.end(),
                   [&](int32_t a, int32_t b) { return tokens[a].size() > tokens[b].size(); });
  return ids;
}

std::array<int32_t, 256> byte_fallback_tokens(const StringIdMap& token_ids) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::array<int32_t, 256> table{};
  for (int b = 0; b < 256; ++b) {
    const char name[] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
    int32_t id = find_id(token_ids, std::string_view(name, sizeof(name)));
    if (id < 0) id = find_id(token_ids, std::string(1, static_cast<char>(b)));
    table[b] = id;
  }
  return table;
}

}  // namespace omnibus::tokenizer_internal
