// The merge loop shared by byte-level BPE (best = lowest merge rank) and
// SentencePiece BPE (best = highest token score): a word starts as one
// symbol per UTF-8 character, kept in a linked list; candidate pairs wait in
// a priority queue; the best pair is merged first, ties going to the leftmost
// pair, and the new neighbours become candidates. Entries made stale by an
// earlier merge are recognised by their length and skipped.
#pragma once

#include <cstdint>
#include <optional>
#include <queue>
#include <string_view>
#include <vector>

#include "tokenizer/utf8.h"

namespace omnibus::tokenizer_internal {

struct Symbol {
  uint32_t begin = 0;
  uint32_t length = 0;  // 0 once merged into its left neighbour
  int32_t prev = -1;
  int32_t next = -1;
};

// One symbol per character (lengths from lead bytes, clamped to the end).
inline std::vector<Symbol> split_into_characters(std::string_view text) {
  std::vector<Symbol> symbols;
  size_t offset = 0;
  while (offset < text.size()) {
    size_t n = utf8_lead_length(static_cast<uint8_t>(text[offset]));
    if (n > text.size() - offset) n = text.size() - offset;
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({static_cast<uint32_t>(offset), static_cast<uint32_t>(n), index - 1,
                       offset + n == text.size() ? -1 : index + 1});
    offset += n;
  }
  return symbols;
}

// Merges symbols of `text` in place. `priority(left_text, right_text)` gives
// the pair's priority (higher merges first) or nullopt when the pair cannot
// merge.
template <class PriorityFn>
void merge_symbols(std::string_view text, std::vector<Symbol>* symbols, PriorityFn&& priority) {
  struct Candidate {
    double priority;
    int32_t left;
    int32_t right;
    uint32_t length;
  };
  struct Worse {
    bool operator()(const Candidate& a, const Candidate& b) const {
      return a.priority < b.priority || (a.priority == b.priority && a.left > b.left);
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, Worse> queue;
  std::vector<Symbol>& sym = *symbols;
  auto consider = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const std::string_view l = text.substr(sym[left].begin, sym[left].length);
    const std::string_view r = text.substr(sym[right].begin, sym[right].length);
    if (std::optional<double> p = priority(l, r)) {
      queue.push({*p, left, right, sym[left].length + sym[right].length});
    }
  };
  for (int32_t i = 1; i < static_cast<int32_t>(sym.size()); ++i) consider(i - 1, i);
  while (!queue.empty()) {
    const Candidate best = queue.top();
    queue.pop();
    Symbol& left = sym[best.left];
    Symbol& right = sym[best.right];
    if (left.length == 0 || right.length == 0 || left.length + right.length != best.length) continue;
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) sym[right.next].prev = best.left;
    consider(left.prev, best.left);
    consider(best.left, left.next);
  }
}

}  // namespace omnibus::tokenizer_internal
