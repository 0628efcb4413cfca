#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/utf8.h"

namespace omnibus::tokenizer_internal {

namespace {

constexpr bool stands_for_itself(int b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

constexpr std::array<uint16_t, 256> make_byte_table() {
  std::array<uint16_t, 256> table{};
  int next_extra = 0;
  for (int b = 0; b < 256; ++b) {
    table[b] = stands_for_itself(b) ? static_cast<uint16_t>(b) : static_cast<uint16_t>(256 + next_extra++);
  }
  return table;
}

// 256 + 68 stand-ins: every code point of the alphabet is below this.
constexpr int kAlphabetLimit = 256 + 68;

constexpr std::array<int16_t, kAlphabetLimit> make_reverse_table() {
  std::array<int16_t, kAlphabetLimit> reverse{};
  for (auto& r : reverse) r = -1;
  const auto forward = make_byte_table();
  for (int b = 0; b < 256; ++b) reverse[forward[b]] = static_cast<int16_t>(b);
  return reverse;
}

constexpr std::array<uint16_t, 256> kByteToCodepoint = make_byte_table();
constexpr std::array<int16_t, kAlphabetLimit> kCodepointToByte = make_reverse_table();

}  // namespace

uint32_t byte_to_gpt2_codepoint(uint8_t byte) { return kByteToCodepoint[byte]; }

int byte_from_gpt2_codepoint(uint32_t cp) {
  return cp < static_cast<uint32_t>(kAlphabetLimit) ? kCodepointToByte[cp] : -1;
}

void append_gpt2_encoded(std::string_view bytes, std::string* out) {
  for (char c : bytes) append_utf8(kByteToCodepoint[static_cast<uint8_t>(c)], out);
}

}  // namespace omnibus::tokenizer_internal
