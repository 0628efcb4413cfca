// Which tokens a grammar allows next: the vocabulary as a byte trie
// (TokenTrie, built once per model) walked through the grammar's automaton
// (grammar_automaton.h) from the sequence's current state (GrammarMatcher,
// one per constrained sequence).
//
// A token is allowed when all of its bytes are: the walk goes down the trie
// byte by byte and stops wherever the automaton dies, so a state inside a
// JSON string visits most of the trie and a state that expects `:` visits a
// few nodes. Each state's mask is kept (up to kMaskCacheBytes per matcher),
// so a state the sequence returns to (the next character of a string, the
// next key of an object) costs a copy, not a walk.
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
  size_t node_count() const { return nodes_.size(); }

 private:
  friend class GrammarMatcher;
  struct Node {
    uint32_t first_child = 0;  // children are contiguous in nodes_
    uint32_t child_count = 0;
    uint32_t first_token = 0;  // into token_ids_: tokens that end here
    uint32_t token_count = 0;
    uint8_t byte = 0;  // the edge into this node
  };
  void build(const std::vector<int32_t>& sorted, size_t begin, size_t end, size_t depth, uint32_t node);

  std::vector<std::string> token_text_;
  std::vector<Node> nodes_;  // 0 is the root (the empty prefix)
  std::vector<int32_t> token_ids_;
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

 private:
  void compute_mask(std::vector<uint64_t>& mask);
  void keep_within_budget();

  struct WalkStep {
    uint32_t node;     // a trie node whose children are still to visit
    int32_t state;     // the automaton's state at it
    uint32_t partial;  // and the UTF-8 character it ends inside (utf8_partial)
  };
  static uint64_t cache_key(GrammarPosition at) {
    return (static_cast<uint64_t>(at.partial) << 32) | static_cast<uint32_t>(at.state);
  }

  std::shared_ptr<const TokenTrie> trie_;
  GrammarAutomaton automaton_;
  GrammarPosition at_;
  std::unordered_map<uint64_t, std::vector<uint64_t>> masks_;  // by position
  std::vector<WalkStep> walk_;
};

}  // namespace omnibus
