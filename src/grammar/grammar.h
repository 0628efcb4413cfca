// A context-free grammar over Unicode code points, parsed from llama.cpp's
// GBNF syntax and kept in the flat form the automaton (grammar_automaton.h) walks.
//
// GBNF, as accepted here:
//   root ::= "{" ws pair ("," ws pair)* "}"      # one rule per definition
//   name ::= [a-zA-Z0-9-]+                       # rule names, no underscores
//   literals "a\n\"\x41\u00e9\U0001F600"; classes [a-z_], [^"\\]; . (any)
//   grouping ( ... ), alternation |, postfix * + ? {m} {m,} {m,n}; # comments
// A definition ends at a newline that is not inside parentheses or right
// after `|` or `::=`. The start rule is `root`.
//
// Repetitions become helper rules that recurse on the right (x* is
// R ::= x R | ε), which the matcher runs in constant stack depth. Left
// recursion (a rule that can reach itself without consuming a character,
// including a repeated part that can match nothing, as in ("a"?)*) is refused
// at parse time: the matcher could not expand it.
//
// Immutable once parsed; share it across threads freely.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace omnibus {

// One symbol of an alternative.
struct GrammarElement {
  enum class Kind : uint8_t {
    kEnd,    // closes an alternative
    kChars,  // one code point from a character class
    kRule,   // a reference to a rule
  };
  Kind kind = Kind::kEnd;
  uint32_t index = 0;  // kChars: class id; kRule: rule id
};

struct CodePointRange {
  uint32_t lo = 0;  // inclusive
  uint32_t hi = 0;  // inclusive
};

class Grammar {
 public:
  static constexpr uint32_t kMaxCodePoint = 0x10FFFF;
  // Repetitions and literals expand into elements; a grammar larger than
  // this is refused rather than allowed to take the memory it asks for.
  static constexpr size_t kMaxElements = size_t{1} << 20;

  uint32_t root() const { return root_; }
  size_t rule_count() const { return rule_alternatives_.size(); }
  const std::string& rule_name(uint32_t rule) const { return rule_names_[rule]; }
  // Positions (indices into elements) where the rule's alternatives start.
  std::span<const uint32_t> alternatives(uint32_t rule) const { return rule_alternatives_[rule]; }
  const GrammarElement& at(uint32_t position) const { return elements_[position]; }
  size_t element_count() const { return elements_.size(); }

  // Whether class `cls` matches code point `cp`.
  bool class_matches(uint32_t cls, uint32_t cp) const;
  // Whether class `cls` matches some code point in [lo, hi].
  bool class_intersects(uint32_t cls, uint32_t lo, uint32_t hi) const;
  std::span<const CodePointRange> class_ranges(uint32_t cls) const { return classes_[cls]; }
  size_t class_count() const { return classes_.size(); }

 private:
  friend class GbnfParser;
  std::vector<GrammarElement> elements_;
  std::vector<std::vector<uint32_t>> rule_alternatives_;
  std::vector<std::string> rule_names_;               // helper rules: "<name>~<n>", a name no grammar can write
  std::vector<std::vector<CodePointRange>> classes_;  // sorted, disjoint, merged
  uint32_t root_ = 0;
};

// The grammar, or invalid_argument naming the problem and where it is
// ("line 3, column 7: undefined rule 'value'").
Result<Grammar> parse_gbnf(std::string_view text);

}  // namespace omnibus
