#include "tokenizer/bpe.h"

#include "tokenizer/symbol_merge.h"

namespace omnibus::tokenizer_internal {

Result<BpeMerges> BpeMerges::create(const std::vector<std::string>& merges) {
  BpeMerges out;
  out.ranks_.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string& line = merges[i];
    // Split at the first space after the first character, like llama.cpp.
    const size_t space = line.size() > 1 ? line.find(' ', 1) : std::string::npos;
    if (space == std::string::npos || space + 1 >= line.size()) {
      return Status::corrupt("tokenizer merge " + std::to_string(i) + " ('" + line +
                             "') is not two symbols separated by a space");
    }
    out.ranks_.emplace(line, static_cast<int32_t>(i));  // keeps the first rank of a repeated line
  }
  return out;
}

int32_t BpeMerges::rank(std::string_view left, std::string_view right, std::string* scratch) const {
  scratch->assign(left);
  scratch->push_back(' ');
  scratch->append(right);
  return find_id(ranks_, *scratch);
}

void BpeMerges::encode_word(std::string_view word, const StringIdMap& tokens, bool ignore_merges,
                            std::vector<int32_t>* out) const {
  if (word.empty()) return;
  if (ignore_merges) {
    const int32_t whole = find_id(tokens, word);
    if (whole >= 0) {
      out->push_back(whole);
      return;
    }
  }
  std::vector<Symbol> symbols = split_into_characters(word);
  std::string scratch;
  merge_symbols(word, &symbols, [&](std::string_view l, std::string_view r) -> std::optional<double> {
    const int32_t r_rank = rank(l, r, &scratch);
    if (r_rank < 0) return std::nullopt;
    return -static_cast<double>(r_rank);  // lowest rank first
  });
  for (int32_t i = 0; i >= 0; i = symbols[i].next) {
    const std::string_view text = word.substr(symbols[i].begin, symbols[i].length);
    const int32_t id = find_id(tokens, text);
    if (id >= 0) {
      out->push_back(id);
      continue;
    }
    for (size_t b = 0; b < text.size(); ++b) {
      const int32_t byte_id = find_id(tokens, text.substr(b, 1));
      if (byte_id >= 0) out->push_back(byte_id);
    }
  }
}

}  // namespace omnibus::tokenizer_internal
