// Per-token attribute bits (what llama.cpp derives from token types) and the
// tables built from them: which tokens are special, in which order they are
// matched, and which token spells each byte in SentencePiece byte fallback.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "tokenizer/token_map.h"
#include "tokenizer/vocab.h"

namespace omnibus::tokenizer_internal {

enum : uint8_t {
  kAttrUnknown = 1 << 0,
  kAttrUnused = 1 << 1,
  kAttrNormal = 1 << 2,
  kAttrControl = 1 << 3,
  kAttrUserDefined = 1 << 4,
  kAttrByte = 1 << 5,
  kAttrRstrip = 1 << 6,  // whitespace after this special token is dropped (VocabData::rstrip_after_specials)
};

// One attribute byte per token, from vocab.token_types (all normal when
// empty). Tokens whose text marks end of generation ("<|im_end|>", ...)
// also get kAttrControl, as llama.cpp forces. A byte token whose text is not
// "<0xXX>" is an error.
Result<std::vector<uint8_t>> token_attributes(const VocabData& vocab);

// Control, user-defined and unknown tokens (only user-defined ones that are
// not also control/unknown when `user_defined_only`), longest text first,
// ties by id.
std::vector<int32_t> special_token_order(const std::vector<std::string>& tokens,
                                         const std::vector<uint8_t>& attributes, bool user_defined_only);

// For each byte, the id of "<0xXX>" or else of the one-byte token, or -1.
std::array<int32_t, 256> byte_fallback_tokens(const StringIdMap& token_ids);

// The byte value of a "<0xXX>" token text, or -1.
int byte_token_value(std::string_view text);

}  // namespace omnibus::tokenizer_internal
