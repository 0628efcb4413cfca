// GrammarAutomaton: a grammar (grammar.h) run as a deterministic automaton
// over bytes, built lazily as text reaches new states.
//
// Underneath is a pushdown recogniser: a parse position is a stack of
// grammar positions (the innermost frame on top, always at a character
// class), and the recogniser keeps the set of all stacks the text so far
// allows. Stacks are interned as shared-tail lists (one node per frame:
// position and parent), so equal stacks have equal ids and a set is a sorted
// vector of ids; frames whose rule has nothing left after the call are not
// kept (tail calls), so right-recursive repetitions run in constant depth.
//
// A state is one such set. Transitions are filled as they are asked for:
// an ASCII byte's in a 128-entry row per state, other code points' in a
// table of the intervals the state's classes cut the code space into (every
// code point of an interval goes to the same state), so after a few tokens
// the common paths (inside a string, between the keys of an object) cost an
// array load per character.
//
// Tokens are bytes and may end in the middle of a UTF-8 character: a
// GrammarPosition is a state plus the bytes of a character not yet complete,
// allowed only while some stack's class can still match a code point that
// starts with them.
//
// Memory is bounded: past kMaxStates states the automaton starts over from
// the one state its owner still needs (restart_from). Not thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "grammar/grammar.h"

namespace omnibus {

// Where a text has got to: an automaton state and, when the text ends
// inside a UTF-8 character, that character's bits so far.
struct GrammarPosition {
  int32_t state = -1;
  uint32_t partial = 0;  // 0, or (length << 28) | (bytes still missing << 24) | bits
  bool operator==(const GrammarPosition&) const = default;
};

class GrammarAutomaton {
 public:
  static constexpr int32_t kDead = -1;
  static constexpr size_t kMaxStates = size_t{1} << 14;
  // Stack frames one character may expand. A grammar that needs more (only
  // a pathological one: deep nests of parts that can match nothing) is
  // treated as refusing the character, so one client's grammar cannot
  // stall the engine thread that computes every sequence's masks.
  static constexpr int64_t kMaxExpansions = int64_t{1} << 16;

  explicit GrammarAutomaton(std::shared_ptr<const Grammar> grammar);

  const Grammar& grammar() const { return *grammar_; }
  GrammarPosition start() const { return {start_, 0}; }

  // The state after an ASCII character or a whole code point; kDead when no
  // parse allows it.
  int32_t next_ascii(int32_t state, uint8_t c) {
    const int32_t to = ascii_[static_cast<size_t>(state) * 128 + c];
    return to != kUnknown ? to : compute_ascii(state, c);
  }
  int32_t next_code_point(int32_t state, uint32_t cp);
  // Whether some code point in [lo, hi] can come next in `state`.
  bool can_match_range(int32_t state, uint32_t lo, uint32_t hi) const;

  // The one state that every ASCII byte of `bytes` (a 128-bit set: bit b
  // of word b / 64) leads to from `state`, and with `non_ascii` every code
  // point from U+0080 up too; kDead when they part ways or die. Inside a
  // JSON string it is the state itself for almost every character (the
  // next state along, in a string of bounded length), which lets the token
  // walk allow whole subtrees of the vocabulary at once (token_mask.cpp).
  int32_t common_successor(int32_t state, const uint64_t (&bytes)[2], bool non_ascii);

  // Moves `at` past `bytes`; false (with `at` left anywhere) when a byte is
  // refused.
  bool advance(GrammarPosition& at, std::string_view bytes);
  bool advance_byte(GrammarPosition& at, uint8_t byte);

  // The text so far is a whole sentence of the grammar.
  bool can_end(GrammarPosition at) const { return at.partial == 0 && states_[static_cast<size_t>(at.state)].can_end; }
  // Some continuation is still possible (a stack is not finished).
  bool can_continue(GrammarPosition at) const {
    return at.partial != 0 || states_[static_cast<size_t>(at.state)].can_continue;
  }

  size_t state_count() const { return states_.size(); }
  size_t transitions_computed() const { return transitions_computed_; }
  bool over_budget() const { return states_.size() > kMaxStates; }
  // Forgets every state but `keep`'s, which gets a new id; states handed out
  // before are invalid after.
  GrammarPosition restart_from(GrammarPosition keep);

 private:
  struct Node {
    uint32_t position;  // the next element of this frame
    int32_t parent;     // -1: the outermost frame
  };
  struct State {
    int32_t set;  // into sets_
    bool can_end;
    bool can_continue;
  };
  // The code points from 0x80 up, cut where any of the state's classes
  // starts or stops matching: intervals [starts[i], starts[i + 1]).
  struct CodePointTable {
    std::vector<uint32_t> starts;
    std::vector<int32_t> next;  // kUnknown until asked
  };
  // A state's ASCII transitions known so far, grouped by where they lead
  // (a handful of groups: letters, a quote, a backslash, ...), and the
  // state every code point past ASCII leads to (kUnknown: not yet asked;
  // kDead: they part ways or die).
  struct ByteGroup {
    int32_t to;
    uint64_t bytes[2];
  };
  struct Successors {
    std::vector<ByteGroup> groups;
    int32_t non_ascii = kUnknown;
  };
  struct VectorHash {
    size_t operator()(const std::vector<int32_t>& v) const;
  };
  static constexpr int32_t kUnknown = -2;
  static constexpr int32_t kFinished = -1;  // the stack id of a finished parse

  int32_t intern_node(uint32_t position, int32_t parent);
  // Pushes the stacks that `position` in frame `parent` expands to.
  void expand(uint32_t position, int32_t parent, std::vector<int32_t>& out);
  int32_t intern_set(std::vector<int32_t>& stacks);  // sorts and dedupes
  int32_t intern_state(int32_t set);
  // The state after code point `cp`, computed; kDead when none.
  int32_t advance_set(int32_t set, uint32_t cp);
  // Computes c's entry and those of every byte the same classes take
  // (they lead to the same state): one advance_set for, say, all the
  // letters inside a string.
  int32_t compute_ascii(int32_t state, uint8_t c);
  int32_t non_ascii_successor(int32_t state);
  void build_code_point_table(int32_t state);
  int32_t start_state();

  std::shared_ptr<const Grammar> grammar_;
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, int32_t> node_ids_;
  std::vector<std::vector<int32_t>> sets_;
  std::unordered_map<std::vector<int32_t>, int32_t, VectorHash> set_ids_;
  std::vector<State> states_;  // state i holds set i's transitions
  std::unordered_map<int32_t, int32_t> state_of_set_;
  std::vector<int32_t> ascii_;                                // 128 per state
  std::vector<std::unique_ptr<CodePointTable>> code_points_;  // per state, built on first use
  std::vector<Successors> successors_;                        // per state
  std::vector<std::array<uint64_t, 2>> class_ascii_;          // per class: the ASCII bytes it takes
  std::vector<int32_t> scratch_;
  std::unordered_set<uint64_t> expanded_;              // (rule, frame) pairs expanded in this step
  std::vector<std::pair<uint32_t, int32_t>> pending_;  // expand()'s work list
  int64_t expansions_ = 0;                             // in this step
  bool overflowed_ = false;                            // past kMaxExpansions in this step
  int32_t start_ = kDead;
  size_t transitions_computed_ = 0;  // advance_set calls, over the automaton's life
};

// UTF-8 helpers shared with the token walk (token_mask.cpp).
namespace utf8_partial {
// The partial character a lead byte starts; 0 for a byte that cannot start
// one (ASCII, a continuation byte, C0, C1, F5..FF).
uint32_t start(uint8_t lead);
// Adds a continuation byte; 0 if `byte` is not one.
uint32_t extend(uint32_t partial, uint8_t byte);
inline bool complete(uint32_t partial) { return ((partial >> 24) & 0xF) == 0; }
// The code point of a complete partial, or kInvalid (overlong, surrogate,
// past U+10FFFF).
inline constexpr uint32_t kInvalid = ~0u;
uint32_t code_point(uint32_t partial);
// The valid code points that begin with an incomplete partial's bytes.
void span(uint32_t partial, uint32_t& lo, uint32_t& hi);
}  // namespace utf8_partial

// Whether the whole of `text` is a sentence of the grammar.
bool grammar_accepts(const Grammar& grammar, std::string_view text);

}  // namespace omnibus
