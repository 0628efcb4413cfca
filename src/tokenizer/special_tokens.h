// Cutting special tokens (<|im_start|>, <s>, user-defined tokens) out of
// text before the regular tokenizer sees it, so they are matched whole and
// never split. Follows llama.cpp: the longest special token is cut out of
// every text fragment first (each occurrence, left to right), then the next
// longest from what remains, and so on. That order decides overlaps, e.g. a
// long token wins over a shorter one that starts earlier inside it.
// Pure function; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace omnibus::tokenizer_internal {

// token >= 0: the special token `token`; otherwise the raw text
// [begin, end) of the input.
struct Fragment {
  int32_t token = -1;
  size_t begin = 0;
  size_t end = 0;
};

// `specials` are token ids in matching order (longest text first);
// `texts` are all token texts. Tokens with empty text are ignored.
std::vector<Fragment> split_special_tokens(std::string_view text, std::span<const int32_t> specials,
                                           const std::vector<std::string>& texts);

}  // namespace omnibus::tokenizer_internal
