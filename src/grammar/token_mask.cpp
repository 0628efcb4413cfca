#include "grammar/token_mask.h"

#include <algorithm>
#include <numeric>

namespace omnibus {

TokenTrie::TokenTrie(std::vector<std::string> token_text) : token_text_(std::move(token_text)) {
  std::vector<int32_t> sorted;
  for (size_t id = 0; id < token_text_.size(); ++id)
    if (!token_text_[id].empty()) sorted.push_back(static_cast<int32_t>(id));
  std::sort(sorted.begin(), sorted.end(), [&](int32_t a, int32_t b) {
    const std::string& x = token_text_[static_cast<size_t>(a)];
    const std::string& y = token_text_[static_cast<size_t>(b)];
    return x != y ? x < y : a < b;
  });
  nodes_.emplace_back();
  build(sorted, 0, sorted.size(), 0, 0);
}

// Tokens sorted[begin..end) share their first `depth` bytes, the path to
// `node`. Those exactly `depth` long end here (they sort first); the rest
// become children, one per next byte, laid out next to each other.
void TokenTrie::build(const std::vector<int32_t>& sorted, size_t begin, size_t end, size_t depth, uint32_t node) {
  size_t i = begin;
  nodes_[node].first_token = static_cast<uint32_t>(token_ids_.size());
  while (i < end && token_text_[static_cast<size_t>(sorted[i])].size() == depth) token_ids_.push_back(sorted[i++]);
  nodes_[node].token_count = static_cast<uint32_t>(token_ids_.size()) - nodes_[node].first_token;
  std::vector<std::pair<size_t, size_t>> groups;
  while (i < end) {
    const char byte = token_text_[static_cast<size_t>(sorted[i])][depth];
    size_t j = i + 1;
    while (j < end && token_text_[static_cast<size_t>(sorted[j])][depth] == byte) ++j;
    groups.emplace_back(i, j);
    i = j;
  }
  const auto first = static_cast<uint32_t>(nodes_.size());
  nodes_[node].first_child = first;
  nodes_[node].child_count = static_cast<uint32_t>(groups.size());
  for (const auto& [b, e] : groups) {
    Node child;
    child.byte = static_cast<uint8_t>(token_text_[static_cast<size_t>(sorted[b])][depth]);
    nodes_.push_back(child);
  }
  for (size_t g = 0; g < groups.size(); ++g)
    build(sorted, groups[g].first, groups[g].second, depth + 1, first + static_cast<uint32_t>(g));
}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie)
    : trie_(std::move(trie)), automaton_(std::move(grammar)), at_(automaton_.start()) {}

std::span<const uint64_t> GrammarMatcher::allowed_tokens() {
  auto it = masks_.find(cache_key(at_));
  if (it == masks_.end()) {
    std::vector<uint64_t> mask;
    compute_mask(mask);
    it = masks_.emplace(cache_key(at_), std::move(mask)).first;
  }
  return it->second;
}

void GrammarMatcher::compute_mask(std::vector<uint64_t>& mask) {
  const TokenTrie& trie = *trie_;
  mask.assign((static_cast<size_t>(trie.vocab_size()) + 63) / 64, 0);
  auto allow_tokens_of = [&](const TokenTrie::Node& node) {
    for (uint32_t t = node.first_token; t < node.first_token + node.token_count; ++t) {
      const auto id = static_cast<size_t>(trie.token_ids_[t]);
      mask[id / 64] |= uint64_t{1} << (id % 64);
    }
  };
  walk_.clear();
  walk_.push_back({0, at_.state, at_.partial});
  while (!walk_.empty()) {
    const WalkStep step = walk_.back();
    walk_.pop_back();
    const TokenTrie::Node& node = trie.nodes_[step.node];
    for (uint32_t c = node.first_child; c < node.first_child + node.child_count; ++c) {
      const TokenTrie::Node& child = trie.nodes_[c];
      int32_t state = step.state;
      uint32_t partial = 0;
      if (step.partial == 0 && child.byte < 0x80) {
        state = automaton_.next_ascii(state, child.byte);
      } else {
        partial = step.partial == 0 ? utf8_partial::start(child.byte) : utf8_partial::extend(step.partial, child.byte);
        if (partial == 0) continue;
        if (utf8_partial::complete(partial)) {
          const uint32_t cp = utf8_partial::code_point(partial);
          if (cp == utf8_partial::kInvalid) continue;
          partial = 0;
          state = automaton_.next_code_point(state, cp);
        } else if (step.partial == 0 || child.token_count > 0) {
          // Inside a character: a lead byte no class can start prunes its
          // whole subtree; a token that ends here needs its exact prefix
          // to be possible. Deeper bytes are checked when the character
          // is whole.
          uint32_t lo = 0, hi = 0;
          utf8_partial::span(partial, lo, hi);
          if (!automaton_.can_match_range(state, lo, hi)) continue;
        }
      }
      if (state == GrammarAutomaton::kDead) continue;
      allow_tokens_of(child);
      if (child.child_count > 0) walk_.push_back({c, state, partial});
    }
  }
}

bool GrammarMatcher::accept_token(int32_t token) {
  if (token < 0 || token >= trie_->vocab_size()) return false;
  const std::string& text = trie_->token_text(token);
  if (text.empty()) return false;
  return accept_text(text);
}

bool GrammarMatcher::accept_text(std::string_view text) {
  GrammarPosition next = at_;
  if (!automaton_.advance(next, text)) return false;
  at_ = next;
  keep_within_budget();
  return true;
}

void GrammarMatcher::keep_within_budget() {
  const size_t mask_bytes = ((static_cast<size_t>(trie_->vocab_size()) + 63) / 64) * 8;
  if (automaton_.over_budget()) {
    // Fresh state ids: every cached mask is keyed by an old one.
    at_ = automaton_.restart_from(at_);
    masks_.clear();
  } else if (masks_.size() * mask_bytes > kMaskCacheBytes) {
    masks_.clear();
  }
}

}  // namespace omnibus
