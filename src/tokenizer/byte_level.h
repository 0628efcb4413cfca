// GPT-2's byte-level alphabet: every byte 0..255 has a printable stand-in
// code point, so byte-level BPE vocabularies never hold raw control bytes or
// spaces (a space is 'Ġ', U+0120). Printable Latin-1 bytes stand for
// themselves; the other 68 bytes map, in byte order, to U+0100 and up.
// Constant tables, no state; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace omnibus::tokenizer_internal {

// The stand-in code point of `byte`.
uint32_t byte_to_gpt2_codepoint(uint8_t byte);

// The byte a stand-in code point stands for, or -1 when `cp` is not in the
// alphabet.
int byte_from_gpt2_codepoint(uint32_t cp);

// Appends the UTF-8 of each byte's stand-in.
void append_gpt2_encoded(std::string_view bytes, std::string* out);

}  // namespace omnibus::tokenizer_internal
