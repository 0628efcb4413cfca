// UTF-8 helpers for the tokenizer. Two decoders on purpose:
// - decode_utf8_lenient() reproduces how llama.cpp reads text before
//   pre-tokenizing (each byte it cannot decode becomes U+FFFD; overlong forms
//   and surrogates are accepted), because tokenization must match it exactly.
// - next_utf8_sequence() is a strict decoder (Unicode's well-formed byte
//   table) used where we emit text and must never emit a broken sequence.
// All functions are pure and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace omnibus::tokenizer_internal {

inline constexpr uint32_t kReplacementChar = 0xFFFD;

// Bytes in the sequence that `lead` starts, judged from its top four bits
// only (1 for ASCII, continuation and invalid bytes). Callers clamp to the
// bytes left.
size_t utf8_lead_length(uint8_t lead);

// Code points of `text`; a byte that does not start a decodable sequence
// gives U+FFFD and decoding resumes at the next byte.
std::vector<uint32_t> decode_utf8_lenient(std::string_view text);

// Appends the UTF-8 form of `cp`; values past U+10FFFF append U+FFFD.
// Surrogates are encoded as three bytes (like llama.cpp does).
void append_utf8(uint32_t cp, std::string* out);

// What sits at the front of a byte span.
struct Utf8Step {
  enum Kind { kValid, kInvalid, kIncomplete } kind;
  size_t length;  // kValid: bytes of the character; kInvalid: bytes to replace
                  // with one U+FFFD (the maximal invalid subpart, >= 1);
                  // kIncomplete: bytes present of a sequence cut short
};
// Strict decoding of the first character of `bytes` (which must not be
// empty). kIncomplete only when the span ends inside a sequence that could
// still become valid.
Utf8Step next_utf8_sequence(std::string_view bytes);

bool is_valid_utf8(std::string_view text);

// Replaces each invalid subpart with U+FFFD (incomplete tails included).
std::string sanitize_utf8(std::string_view text);

}  // namespace omnibus::tokenizer_internal
