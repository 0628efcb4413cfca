// Which tokens a grammar allows next: the vocabulary as a byte trie
// (TokenTrie, built once per model) walked through the grammar's automaton
// (grammar_automaton.h) from the sequence's current state (GrammarMatcher,
// one per constrained sequence).
//
// A token is allowed when all of its bytes are: the walk goes down the trie
// (its nodes laid out depth-first, so the walk reads them front to back)
// byte by byte and skips every subtree where the automaton dies, so a state
// that expects `:` visits a few nodes. A state inside a JSON string would
// visit the whole trie; instead, where every byte below a node leads the
// automaton back to the state it is in (TokenTrie keeps each subtree's byte
// set and height), or step by step along one chain of live states (a string
// of bounded length), the whole subtree is allowed without a visit.
//
// The walk yields ranges of the trie's token order, allowed or refused; the
// mask is built from whichever side is smaller, so an almost-open state
// costs about as much as the few tokens it refuses. Each state's mask is
// kept (up to kMaskCacheBytes per matcher), so a state the sequence returns
// to costs a lookup.
//
// Tokens with no text (control and special tokens) are never allowed by the
// mask; the caller decides about end-of-generation tokens with can_end().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/grammar_automaton.h"

namespace omnibus {

class TokenTrie {
 public:
  // token_text[id]: the bytes the token adds to the output; empty for tokens
  // a grammar may never produce (control, special, unused).
  explicit TokenTrie(std::vector<std::string> token_text);

  int32_t vocab_size() const { return static_cast<int32_t>(token_text_.size()); }
  const std::string& token_text(int32_t id) const { return token_text_[static_cast<size_t>(id)]; }
  size_t node_count() const { return nodes_.size() - 1; }  // not the closing one

 private:
  friend class GrammarMatcher;
  // Nodes in depth-first order, so that a walk reads them front to back:
  // node i's subtree is nodes [i, skip), its own tokens (those that end
  // at it) token_ids_[first_token of i, first_token of i + 1) and its
  // subtree's tokens token_ids_[first_token of i, first_token of skip).
  // A last node with no edge closes the ranges.
  struct Node {
    uint32_t first_token = 0;
    uint32_t skip = 0;
    uint16_t depth = 0;  // its text's length
    uint8_t byte = 0;    // the edge into it
  };
  // The bytes on the edges below a node (not its own), for the walk's
  // whole-subtree test.
  struct Below {
    uint64_t ascii[2] = {0, 0};
    bool non_ascii = false;
    uint16_t height = 0;  // the longest path below, in bytes
    // Every path through this node is well-formed UTF-8 so far (a
    // character cut off at the end may still complete).
    bool well_formed = true;
  };
  void summarize_subtrees(const std::vector<uint32_t>& parent);

  std::vector<std::string> token_text_;
  std::vector<Node> nodes_;            // 0 is the root (the empty prefix)
  std::vector<Below> below_;           // per node
  std::vector<int32_t> token_ids_;     // in node order
  std::vector<uint64_t> text_tokens_;  // mask of every token with text
  size_t max_depth_ = 0;
};

class GrammarMatcher {
 public:
  static constexpr size_t kMaskCacheBytes = size_t{64} << 20;

  GrammarMatcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie);

  // One bit per token id (bit id % 64 of word id / 64): the tokens whose
  // whole text the grammar allows next. Valid until the next call.
  std::span<const uint64_t> allowed_tokens();
  // The output so far is a whole sentence: an end token may come now.
  bool can_end() const { return automaton_.can_end(at_); }
  // Some token could still follow.
  bool can_continue() const { return automaton_.can_continue(at_); }

  // Moves past the token's text; false (and no change) when the grammar
  // does not allow it or it has no text.
  bool accept_token(int32_t token);
  bool accept_text(std::string_view text);

  // For tests and metrics.
  size_t cached_masks() const { return masks_.size(); }
  size_t automaton_states() const { return automaton_.state_count(); }
  // Work done so far, independent of the machine's speed: masks computed
  // (not taken from the cache), trie nodes their walks visited, and the
  // automaton's transitions computed (by walks and by accepted tokens).
  size_t masks_computed() const { return masks_computed_; }
  size_t nodes_visited() const { return nodes_visited_; }
  size_t transitions_computed() const { return automaton_.transitions_computed(); }

 private:
  void compute_mask(std::vector<uint64_t>& mask);
  void keep_within_budget();

  struct TokenRange {
    uint32_t begin, end;  // into the trie's token_ids_
  };
  // Whether every token below `node` (reached in `state` with `partial`)
  // is allowed because at each step down every byte below leads to one
  // live state (the state itself, inside a JSON string).
  bool subtree_allowed_whole(uint32_t node, int32_t state, uint32_t partial);
  static uint64_t cache_key(GrammarPosition at) {
    return (static_cast<uint64_t>(at.partial) << 32) | static_cast<uint32_t>(at.state);
  }

  std::shared_ptr<const TokenTrie> trie_;
  GrammarAutomaton automaton_;
  GrammarPosition at_;
  std::unordered_map<uint64_t, std::vector<uint64_t>> masks_;  // by position
  // compute_mask's scratch: the automaton's position at each depth of the
  // path the walk is on.
  std::vector<GrammarPosition> path_;
  std::vector<TokenRange> allowed_, refused_;  // compute_mask's scratch
  size_t masks_computed_ = 0;
  size_t nodes_visited_ = 0;
};

}  // namespace omnibus
