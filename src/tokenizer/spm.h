// SentencePiece-style BPE ("llama" tokenizer model) over one text fragment
// whose spaces are already replaced by U+2581. Adjacent symbols merge when
// their concatenation is a token, highest token score first (ties: the
// leftmost pair). A final symbol that is not a token is spelled with byte
// tokens (<0xXX>), the SentencePiece byte fallback.
// Pure function; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/token_map.h"

namespace omnibus::tokenizer_internal {

struct SpmTables {
  const StringIdMap* tokens = nullptr;
  const std::vector<float>* scores = nullptr;  // one per token
  std::array<int32_t, 256> byte_tokens{};      // -1 where the byte has no token
  int32_t unk_id = -1;                         // used for a byte with no token
};

void spm_encode(std::string_view text, const SpmTables& tables, std::vector<int32_t>* out);

// `text` with SentencePiece's space mark (U+2581) written as a space.
std::string replace_spm_spaces(const std::string& text);

}  // namespace omnibus::tokenizer_internal
