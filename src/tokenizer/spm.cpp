#include "tokenizer/spm.h"

#include <string>

#include "tokenizer/symbol_merge.h"

namespace omnibus::tokenizer_internal {

void spm_encode(std::string_view text, const SpmTables& tables, std::vector<int32_t>* out) {
  if (text.empty()) return;
  std::vector<Symbol> symbols = split_into_characters(text);
  std::string scratch;
  merge_symbols(text, &symbols, [&](std::string_view l, std::string_view r) -> std::optional<double> {
    scratch.assign(l);
    scratch.append(r);
    const int32_t id = find_id(*tables.tokens, scratch);
    if (id < 0) return std::nullopt;
    return static_cast<double>((*tables.scores)[id]);
  });
  for (int32_t i = 0; i >= 0; i = symbols[i].next) {
    const std::string_view piece = text.substr(symbols[i].begin, symbols[i].length);
    const int32_t id = find_id(*tables.tokens, piece);
    if (id >= 0) {
      out->push_back(id);
      continue;
    }
    for (char c : piece) {
      const int32_t byte_id = tables.byte_tokens[static_cast<uint8_t>(c)];
      if (byte_id >= 0) {
        out->push_back(byte_id);
      } else if (tables.unk_id >= 0) {
        out->push_back(tables.unk_id);
      }
    }
  }
}

std::string replace_spm_spaces(const std::string& text) {
  static constexpr std::string_view kSpmSpace = "\xE2\x96\x81";
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (std::string_view(text).substr(i, kSpmSpace.size()) == kSpmSpace) {
      out.push_back(' ');
      i += kSpmSpace.size();
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

}  // namespace omnibus::tokenizer_internal
