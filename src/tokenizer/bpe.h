// Byte-level BPE merging inside one pre-tokenized word. The word arrives
// already mapped to the GPT-2 byte alphabet; it starts as one symbol per
// character and the adjacent pair with the lowest merge rank is merged
// first (ties: the leftmost pair), until no adjacent pair has a rank. This is
// exactly llama.cpp's order, which matters: a different tie rule gives
// different ids.
//
// Thread-safety: immutable after create(); encode_word() is const and keeps
// its scratch state on the stack.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/token_map.h"

namespace omnibus::tokenizer_internal {

class BpeMerges {
 public:
  // `merges` are "left right" lines; a line's rank is its index, and a
  // repeated line keeps its first rank. A line without a space after its
  // first character is an error that names the line.
  static Result<BpeMerges> create(const std::vector<std::string>& merges);

  // Rank of merging `left` with `right`, or -1. `scratch` avoids an
  // allocation per lookup.
  int32_t rank(std::string_view left, std::string_view right, std::string* scratch) const;

  // Appends the ids of `word`. With `ignore_merges`, a word that is itself a
  // token is emitted whole. A final symbol that is not a token falls back to
  // the tokens of its single bytes (bytes with no token are dropped, as in
  // llama.cpp).
  void encode_word(std::string_view word, const StringIdMap& tokens, bool ignore_merges,
                   std::vector<int32_t>* out) const;

  size_t size() const { return ranks_.size(); }

 private:
  StringIdMap ranks_;
};

}  // namespace omnibus::tokenizer_internal
