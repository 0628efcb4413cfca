#include "tokenizer/special_tokens.h"

namespace omnibus::tokenizer_internal {

namespace {

// Cuts every occurrence of `needle` (token `id`) out of the raw fragment
// `raw`, appending the pieces to `out`.
void cut_token(std::string_view text, const Fragment& raw, std::string_view needle, int32_t id,
               std::vector<Fragment>* out) {
  const std::string_view window = text.substr(0, raw.end);
  size_t pos = raw.begin;
  while (pos < raw.end) {
    const size_t found = window.find(needle, pos);
    if (found == std::string_view::npos) break;
    if (found > pos) out->push_back({-1, pos, found});
    out->push_back({id, found, found + needle.size()});
    pos = found + needle.size();
  }
  if (pos < raw.end) out->push_back({-1, pos, raw.end});
}

}  // namespace

std::vector<Fragment> split_special_tokens(std::string_view text, std::span<const int32_t> specials,
                                           const std::vector<std::string>& texts) {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({-1, 0, text.size()});
  std::vector<Fragment> next;
  for (int32_t id : specials) {
    const std::string& needle = texts[id];
    if (needle.empty()) continue;
    next.clear();
    next.reserve(fragments.size() + 2);
    for (const Fragment& f : fragments) {
      if (f.token >= 0 || f.end - f.begin < needle.size()) {
        next.push_back(f);
      } else {
        cut_token(text, f, needle, id, &next);
      }
    }
    fragments.swap(next);
  }
  return fragments;
}

}  // namespace omnibus::tokenizer_internal
