#include "grammar/token_mask.h"

#include <algorithm>
#include <numeric>

namespace omnibus {

TokenTrie::TokenTrie(std::vector<std::string> token_text) : token_text_(std::move(token_text)) {
  if (token_text_.size() > (size_t{1} << 31)) token_text_.resize(size_t{1} << 31);
  std::vector<int32_t> sorted;
  for (size_t id = 0; id < token_text_.size(); ++id)
    if (!token_text_[id].empty()) sorted.push_back(static_cast<int32_t>(id));
  std::sort(sorted.begin(), sorted.end(), [&](int32_t a, int32_t b) {
    const std::string& x = token_text_[static_cast<size_t>(a)];
    const std::string& y = token_text_[static_cast<size_t>(b)];
    const int order = x.compare(y);
    return order != 0 ? order < 0 : a < b;
  });
  // In sorted order each token shares a prefix with the one before: close
  // the nodes below that prefix, open one per byte after it (so nodes come
  // out depth-first), and the token ends at the last one. A token that is
  // a prefix of others sorts first, so a node's own tokens come before its
  // subtree's.
  std::vector<uint32_t> parent = {0};
  std::vector<uint32_t> open = {0};  // the path to the last node, by depth
  nodes_.emplace_back();
  auto close_to = [&](size_t depth) {
    while (open.size() > depth + 1) {
      nodes_[open.back()].skip = static_cast<uint32_t>(nodes_.size());
      open.pop_back();
    }
  };
  const std::string* previous = nullptr;
  for (int32_t id : sorted) {
    const std::string& text = token_text_[static_cast<size_t>(id)];
    // Longer texts than a node's depth can count are left out.
    if (text.size() > UINT16_MAX) continue;
    size_t common = 0;
    if (previous != nullptr)
      while (common < previous->size() && common < text.size() && (*previous)[common] == text[common]) ++common;
    close_to(common);
    for (size_t d = common; d < text.size(); ++d) {
      Node node;
      node.first_token = static_cast<uint32_t>(token_ids_.size());
      node.depth = static_cast<uint16_t>(d + 1);
      node.byte = static_cast<uint8_t>(text[d]);
      parent.push_back(open.back());
      open.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back(node);
    }
    token_ids_.push_back(id);
    max_depth_ = std::max(max_depth_, text.size());
    previous = &text;
  }
  close_to(0);
  nodes_[0].skip = static_cast<uint32_t>(nodes_.size());
  Node end;
  end.first_token = static_cast<uint32_t>(token_ids_.size());
  end.skip = static_cast<uint32_t>(nodes_.size()) + 1;
  nodes_.push_back(end);
  summarize_subtrees(parent);
  text_tokens_.assign((token_text_.size() + 63) / 64, 0);
  for (int32_t id : token_ids_) text_tokens_[static_cast<size_t>(id) / 64] |= uint64_t{1} << (id % 64);
}

void TokenTrie::summarize_subtrees(const std::vector<uint32_t>& parent) {
  const size_t n = nodes_.size() - 1;  // not the closing node
  below_.assign(nodes_.size(), Below{});
  // Down the trie (parents come first): the UTF-8 character each path ends
  // inside, and whether the path is well-formed so far.
  std::vector<uint32_t> partial(nodes_.size(), 0);
  for (size_t c = 1; c < n; ++c) {
    const uint32_t up = parent[c];
    const uint8_t byte = nodes_[c].byte;
    uint32_t p = 0;
    bool ok = below_[up].well_formed;
    if (partial[up] == 0) {
      if (byte >= 0x80) ok = ok && (p = utf8_partial::start(byte)) != 0;
    } else {
      p = utf8_partial::extend(partial[up], byte);
      ok = ok && p != 0;
      if (ok && utf8_partial::complete(p)) {
        ok = utf8_partial::code_point(p) != utf8_partial::kInvalid;
        p = 0;
      }
    }
    if (ok && p != 0) {
      uint32_t lo = 0, hi = 0;
      utf8_partial::span(p, lo, hi);
      ok = lo <= hi;
    }
    partial[c] = ok ? p : 0;
    below_[c].well_formed = ok;
  }
  // Up the trie (children come after parents): each subtree's bytes, and
  // whether all of it is well-formed.
  for (size_t c = n; c-- > 1;) {
    Below& up = below_[parent[c]];
    const Below& b = below_[c];
    const uint8_t byte = nodes_[c].byte;
    if (byte < 0x80)
      up.ascii[byte / 64] |= uint64_t{1} << (byte % 64);
    else
      up.non_ascii = true;
    up.ascii[0] |= b.ascii[0];
    up.ascii[1] |= b.ascii[1];
    up.non_ascii = up.non_ascii || b.non_ascii;
    up.height = std::max<uint16_t>(up.height, static_cast<uint16_t>(b.height + 1));
    up.well_formed = up.well_formed && b.well_formed;
  }
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

bool GrammarMatcher::subtree_allowed_whole(uint32_t node, int32_t state, uint32_t partial) {
  const TokenTrie::Below& below = trie_->below_[node];
  if (!below.well_formed) return false;
  // A character a byte below completes moves one step too; counting the
  // steps in bytes over-counts, which only makes the test stricter.
  const bool non_ascii = below.non_ascii || partial != 0;
  for (uint32_t step = 0; step < below.height; ++step) {
    const int32_t next = automaton_.common_successor(state, below.ascii, non_ascii);
    if (next == GrammarAutomaton::kDead) return false;
    if (next == state) return true;  // a loop: every later step the same
    state = next;
  }
  return true;
}

void GrammarMatcher::compute_mask(std::vector<uint64_t>& mask) {
  const TokenTrie& trie = *trie_;
  const std::vector<TokenTrie::Node>& nodes = trie.nodes_;
  // Small subtrees are cheaper to walk than to test.
  constexpr uint32_t kWholeSubtreeMinTokens = 4;
  // The trie's UTF-8 summaries assume the walk starts between characters.
  const bool between_characters = at_.partial == 0;
  allowed_.clear();
  refused_.clear();
  auto add = [](std::vector<TokenRange>& to, uint32_t begin, uint32_t end) {
    if (begin == end) return;
    if (!to.empty() && to.back().end == begin)
      to.back().end = end;
    else
      to.push_back({begin, end});
  };
  path_.resize(trie.max_depth_ + 1);
  path_[0] = at_;
  // Front to back through the nodes, jumping over each subtree that is
  // refused or allowed whole.
  const auto last = static_cast<uint32_t>(nodes.size() - 1);
  ++masks_computed_;
  for (uint32_t i = 1; i < last; ++nodes_visited_) {
    const TokenTrie::Node& node = nodes[i];
    const uint32_t own_end = nodes[i + 1].first_token;
    const uint32_t subtree_end = nodes[node.skip].first_token;
    const GrammarPosition from = path_[node.depth - 1u];
    int32_t state = from.state;
    uint32_t partial = 0;
    bool alive = true;
    if (from.partial == 0 && node.byte < 0x80) {
      state = automaton_.next_ascii(state, node.byte);
    } else {
      partial = from.partial == 0 ? utf8_partial::start(node.byte) : utf8_partial::extend(from.partial, node.byte);
      if (partial == 0) {
        alive = false;
      } else if (utf8_partial::complete(partial)) {
        const uint32_t cp = utf8_partial::code_point(partial);
        partial = 0;
        if (cp == utf8_partial::kInvalid)
          alive = false;
        else
          state = automaton_.next_code_point(state, cp);
      } else if (from.partial == 0 || own_end > node.first_token) {
        // Inside a character: a lead byte no class can start prunes its
        // whole subtree; a token that ends here needs its exact prefix
        // to be possible. Deeper bytes are checked when the character
        // is whole.
        uint32_t lo = 0, hi = 0;
        utf8_partial::span(partial, lo, hi);
        alive = automaton_.can_match_range(state, lo, hi);
      }
    }
    if (!alive || state == GrammarAutomaton::kDead) {
      add(refused_, node.first_token, subtree_end);
      i = node.skip;
    } else if (node.skip == i + 1 || (between_characters && subtree_end - node.first_token >= kWholeSubtreeMinTokens &&
                                      subtree_allowed_whole(i, state, partial))) {
      add(allowed_, node.first_token, subtree_end);
      i = node.skip;
    } else {
      add(allowed_, node.first_token, own_end);
      path_[node.depth] = {state, partial};
      ++i;
    }
  }
  // The ranges cover every token of the trie once: set the allowed ones or
  // clear the refused ones from the tokens with text, whichever is fewer.
  size_t allowed_count = 0;
  for (const TokenRange& r : allowed_) allowed_count += r.end - r.begin;
  const bool set_allowed = allowed_count * 2 <= trie.token_ids_.size();
  if (set_allowed)
    mask.assign(trie.text_tokens_.size(), 0);
  else
    mask = trie.text_tokens_;
  for (const TokenRange& r : set_allowed ? allowed_ : refused_) {
    for (uint32_t t = r.begin; t < r.end; ++t) {
      const auto id = static_cast<size_t>(trie.token_ids_[t]);
      if (set_allowed)
        mask[id / 64] |= uint64_t{1} << (id % 64);
      else
        mask[id / 64] &= ~(uint64_t{1} << (id % 64));
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
