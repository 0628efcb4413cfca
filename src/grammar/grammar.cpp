#include "grammar/grammar.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

namespace omnibus {

bool Grammar::class_matches(uint32_t cls, uint32_t cp) const {
  const std::vector<CodePointRange>& ranges = classes_[cls];
  // The first range whose hi is >= cp; the classes are sorted and disjoint.
  auto it =
      std::lower_bound(ranges.begin(), ranges.end(), cp, [](const CodePointRange& r, uint32_t v) { return r.hi < v; });
  return it != ranges.end() && it->lo <= cp;
}

bool Grammar::class_intersects(uint32_t cls, uint32_t lo, uint32_t hi) const {
  const std::vector<CodePointRange>& ranges = classes_[cls];
  auto it =
      std::lower_bound(ranges.begin(), ranges.end(), lo, [](const CodePointRange& r, uint32_t v) { return r.hi < v; });
  return it != ranges.end() && it->lo <= hi;
}

namespace {

using Sequence = std::vector<GrammarElement>;
using Alternatives = std::vector<Sequence>;

// Sorted, merged, disjoint; `negate` takes the complement in [0, max].
std::vector<CodePointRange> subtract_surrogates(std::vector<CodePointRange> ranges) {
  std::vector<CodePointRange> out;
  for (const CodePointRange& r : ranges) {
    if (r.hi < 0xD800 || r.lo > 0xDFFF) {
      out.push_back(r);
      continue;
    }
    if (r.lo < 0xD800) out.push_back({r.lo, 0xD7FF});
    if (r.hi > 0xDFFF) out.push_back({0xE000, r.hi});
  }
  return out;
}

std::vector<CodePointRange> normalize_ranges(std::vector<CodePointRange> ranges, bool negate) {
  std::sort(ranges.begin(), ranges.end(), [](const auto& a, const auto& b) { return a.lo < b.lo; });
  std::vector<CodePointRange> merged;
  for (const CodePointRange& r : ranges) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  if (!negate) return merged;
  std::vector<CodePointRange> complement;
  uint32_t next = 0;
  for (const CodePointRange& r : merged) {
    if (r.lo > next) complement.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= Grammar::kMaxCodePoint) complement.push_back({next, Grammar::kMaxCodePoint});
  return complement;
}

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

// Recursive descent over the GBNF text; builds rules with nested sequences,
// then checks and flattens them into a Grammar.
class GbnfParser {
 public:
  explicit GbnfParser(std::string_view text) : text_(text) {}

  Result<Grammar> parse() {
    while (ok_) {
      skip_space(true);
      if (at_end()) break;
      parse_definition();
    }
    if (!ok_) return error_;
    return finish();
  }

 private:
  static constexpr uint32_t kMaxRepetition = 10000;
  static constexpr int kMaxNesting = 256;  // parentheses; each level is a recursive call

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void fail(const std::string& message) {
    if (!ok_) return;
    ok_ = false;
    size_t line = 1, column = 1;
    for (size_t i = 0; i < std::min(pos_, text_.size()); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    error_ = Status::invalid_argument("grammar: line " + std::to_string(line) + ", column " + std::to_string(column) +
                                      ": " + message);
  }

  void skip_space(bool newline_ok) {
    while (!at_end()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || (newline_ok && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (!at_end() && is_name_char(text_[pos_])) ++pos_;
    if (pos_ == start) fail("expected a rule name");
    return std::string(text_.substr(start, pos_ - start));
  }

  uint32_t rule_id(const std::string& name) {
    auto [it, inserted] = rule_ids_.emplace(name, static_cast<uint32_t>(rules_.size()));
    if (inserted) {
      rules_.emplace_back();
      names_.push_back(name);
      defined_.push_back(false);
      first_use_.push_back(pos_);
    }
    return it->second;
  }

  uint32_t new_helper_rule(uint32_t parent) {
    // Named after the rule they serve, for error messages; the base is cut
    // short so a long name repeated 10,000 times cannot take gigabytes.
    const std::string name = names_[parent].substr(0, 48) + "~" + std::to_string(++helper_count_[parent]);
    const uint32_t id = rule_id(name);
    defined_[id] = true;
    return id;
  }

  void parse_definition() {
    const std::string name = parse_name();
    if (!ok_) return;
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") return fail("expected '::=' after rule name '" + name + "'");
    pos_ += 3;
    skip_space(true);
    const uint32_t id = rule_id(name);
    if (defined_[id]) return fail("rule '" + name + "' is defined twice");
    defined_[id] = true;
    Alternatives alts = parse_alternatives(id, false);
    if (!ok_) return;
    skip_space(false);
    if (!at_end() && peek() != '\n' && peek() != '\r') return fail(std::string("unexpected '") + peek() + "'");
    rules_[id] = std::move(alts);
  }

  Alternatives parse_alternatives(uint32_t rule, bool nested) {
    Alternatives alts;
    alts.push_back(parse_sequence(rule, nested));
    while (ok_ && peek() == '|') {
      ++pos_;
      skip_space(true);
      alts.push_back(parse_sequence(rule, nested));
    }
    return alts;
  }

  Sequence parse_sequence(uint32_t rule, bool nested) {
    Sequence seq;
    constexpr size_t kNone = ~size_t{0};
    size_t last_item = kNone;  // where the last item's elements start
    while (ok_) {
      skip_space(nested);
      const char c = peek();
      if (c == '"') {
        ++pos_;
        last_item = seq.size();
        while (ok_ && !at_end() && peek() != '"') {
          const std::optional<uint32_t> cp = parse_char(/*in_class=*/false);
          if (cp) seq.push_back(chars({{*cp, *cp}}, false));
        }
        if (ok_ && at_end()) fail("unterminated literal");
        ++pos_;
      } else if (c == '[') {
        last_item = seq.size();
        seq.push_back(parse_class());
      } else if (c == '.') {
        ++pos_;
        last_item = seq.size();
        seq.push_back(chars({{0, Grammar::kMaxCodePoint}}, false));
      } else if (is_name_char(c)) {
        last_item = seq.size();
        const std::string name = parse_name();
        seq.push_back({GrammarElement::Kind::kRule, rule_id(name)});
      } else if (c == '(') {
        if (++depth_ > kMaxNesting) {
          fail("parentheses nested deeper than " + std::to_string(kMaxNesting));
          break;
        }
        ++pos_;
        skip_space(true);
        const uint32_t group = new_helper_rule(rule);
        Alternatives alts = parse_alternatives(rule, true);
        skip_space(true);
        if (ok_ && peek() != ')') fail("expected ')'");
        ++pos_;
        rules_[group] = std::move(alts);
        --depth_;
        last_item = seq.size();
        seq.push_back({GrammarElement::Kind::kRule, group});
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (last_item == kNone) {
          fail(std::string("'") + c + "' has nothing before it to repeat");
          break;
        }
        apply_repetition(rule, seq, last_item);
        last_item = kNone;  // "x**" is an error, as in llama.cpp
      } else {
        break;
      }
      if (elements_in_rules_ + seq.size() > Grammar::kMaxElements) fail("grammar is too large");
    }
    elements_in_rules_ += seq.size() + 1;
    return seq;
  }

  // One character of a literal or class: UTF-8 or an escape. A surrogate
  // pair written as two \u escapes (as JSON writes an emoji) is the one
  // character it stands for; a lone surrogate is no character (UTF-8 has
  // none) and is refused, except as a class's range end (the class then
  // leaves the surrogates out).
  std::optional<uint32_t> parse_char(bool in_class) {
    const auto byte = static_cast<unsigned char>(text_[pos_]);
    if (byte == '\n' || byte == '\r') {
      fail("a literal or class is not closed on its line (write a newline as \\n)");
      return std::nullopt;
    }
    if (byte == '\\') {
      ++pos_;
      const char e = peek();
      ++pos_;
      switch (e) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^':
        case '/':
        case '\'': return static_cast<uint32_t>(e);
        case 'x': return parse_hex(2);
        case 'u': {
          const std::optional<uint32_t> unit = parse_hex(4);
          if (!unit || *unit < 0xD800 || *unit > 0xDFFF) return unit;
          if (*unit <= 0xDBFF && text_.compare(pos_, 2, "\\u") == 0) {
            const size_t before = pos_;
            pos_ += 2;
            const std::optional<uint32_t> low = parse_hex(4);
            if (low && *low >= 0xDC00 && *low <= 0xDFFF) return 0x10000 + ((*unit - 0xD800) << 10) + (*low - 0xDC00);
            if (!ok_) return std::nullopt;
            pos_ = before;
          }
          if (in_class) return unit;
          pos_ -= 6;
          fail(std::string("lone surrogate \\u")
                   .append(text_.substr(pos_ + 2, 4))
                   .append(" (no character; write the character itself, a surrogate pair, or \\U and its code point)"));
          return std::nullopt;
        }
        case 'U': {
          const std::optional<uint32_t> cp = parse_hex(8);
          if (cp && *cp >= 0xD800 && *cp <= 0xDFFF && !in_class) {
            pos_ -= 10;
            fail("surrogate code point (no character in UTF-8)");
            return std::nullopt;
          }
          return cp;
        }
        default:
          --pos_;
          fail(std::string("unknown escape '\\") + e + "'");
          return std::nullopt;
      }
    }
    int length = byte < 0x80 ? 1 : (byte >> 5) == 0x6 ? 2 : (byte >> 4) == 0xE ? 3 : (byte >> 3) == 0x1E ? 4 : 0;
    if (length == 0 || pos_ + static_cast<size_t>(length) > text_.size()) {
      fail("invalid UTF-8 in the grammar");
      return std::nullopt;
    }
    uint32_t cp = length == 1 ? byte : byte & (0x7F >> length);
    for (int i = 1; i < length; ++i) {
      const auto b = static_cast<unsigned char>(text_[pos_ + static_cast<size_t>(i)]);
      if ((b & 0xC0) != 0x80) {
        fail("invalid UTF-8 in the grammar");
        return std::nullopt;
      }
      cp = (cp << 6) | (b & 0x3F);
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) {
      fail("invalid UTF-8 in the grammar (an encoded surrogate)");
      return std::nullopt;
    }
    pos_ += static_cast<size_t>(length);
    return cp;
  }

  std::optional<uint32_t> parse_hex(int digits) {
    uint32_t value = 0;
    for (int i = 0; i < digits; ++i) {
      const int h = hex_value(peek());
      if (h < 0) {
        fail("expected " + std::to_string(digits) + " hex digits");
        return std::nullopt;
      }
      value = value * 16 + static_cast<uint32_t>(h);
      ++pos_;
    }
    if (value > Grammar::kMaxCodePoint) {
      fail("code point past U+10FFFF");
      return std::nullopt;
    }
    return value;
  }

  GrammarElement parse_class() {
    ++pos_;  // '['
    bool negate = false;
    if (peek() == '^') {
      negate = true;
      ++pos_;
    }
    std::vector<CodePointRange> ranges;
    while (ok_ && !at_end() && peek() != ']') {
      const std::optional<uint32_t> lo = parse_char(/*in_class=*/true);
      if (!lo) break;
      uint32_t hi = *lo;
      if (peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
        ++pos_;
        const std::optional<uint32_t> end = parse_char(/*in_class=*/true);
        if (!end) break;
        if (*end < *lo) {
          fail("character range is backwards");
          break;
        }
        hi = *end;
      }
      ranges.push_back({*lo, hi});
    }
    if (ok_ && at_end()) fail("unterminated character class");
    const size_t start = pos_;
    ++pos_;
    GrammarElement element = chars(std::move(ranges), negate);
    if (ok_ && classes_[element.index].empty()) {
      pos_ = start;
      fail("character class matches no character");
    }
    return element;
  }

  GrammarElement chars(std::vector<CodePointRange> ranges, bool negate) {
    // Surrogates are no characters: a class never takes them.
    std::vector<CodePointRange> normal = subtract_surrogates(normalize_ranges(std::move(ranges), negate));
    std::vector<std::pair<uint32_t, uint32_t>> key;
    for (const CodePointRange& r : normal) key.emplace_back(r.lo, r.hi);
    auto [it, inserted] = class_ids_.emplace(std::move(key), static_cast<uint32_t>(classes_.size()));
    if (inserted) classes_.push_back(std::move(normal));
    return {GrammarElement::Kind::kChars, it->second};
  }

  uint32_t parse_count() {
    uint64_t value = 0;
    const size_t start = pos_;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      value = value * 10 + static_cast<uint64_t>(peek() - '0');
      if (value > kMaxRepetition) {
        fail("repetition count above " + std::to_string(kMaxRepetition));
        return 0;
      }
      ++pos_;
    }
    if (pos_ == start) fail("expected a number");
    return static_cast<uint32_t>(value);
  }

  // x* / x+ / x? / x{m} / x{m,} / x{m,n} on seq[start..]: the item is
  // written out min times, then a right-recursive rule for the rest.
  void apply_repetition(uint32_t rule, Sequence& seq, size_t start) {
    const Sequence item(seq.begin() + static_cast<std::ptrdiff_t>(start), seq.end());
    seq.resize(start);
    uint32_t min = 0;
    std::optional<uint32_t> max;  // unset: unbounded
    const char op = peek();
    ++pos_;
    if (op == '+') {
      min = 1;
    } else if (op == '?') {
      max = 1;
    } else if (op == '{') {
      skip_space(false);
      min = parse_count();
      skip_space(false);
      if (peek() == ',') {
        ++pos_;
        skip_space(false);
        if (peek() != '}') max = parse_count();
      } else {
        max = min;
      }
      skip_space(false);
      if (ok_ && peek() != '}') fail("expected '}'");
      ++pos_;
      if (ok_ && max && *max < min) fail("repetition maximum below its minimum");
    }
    if (!ok_) return;
    if (item.size() * (static_cast<size_t>(max.value_or(min)) + 1) + elements_in_rules_ > Grammar::kMaxElements) {
      return fail("grammar is too large");
    }
    for (uint32_t i = 0; i < min; ++i) seq.insert(seq.end(), item.begin(), item.end());
    if (!max) {
      // R ::= item R | ε
      const uint32_t star = new_helper_rule(rule);
      Sequence again = item;
      again.push_back({GrammarElement::Kind::kRule, star});
      rules_[star] = {again, {}};
      elements_in_rules_ += again.size() + 2;
      seq.push_back({GrammarElement::Kind::kRule, star});
      return;
    }
    // (max - min) optional items, nested: O1 ::= item O2 | ε, ..., On ::= item | ε
    std::optional<uint32_t> next;
    for (uint32_t i = min; i < *max; ++i) {
      const uint32_t optional = new_helper_rule(rule);
      Sequence body = item;
      if (next) body.push_back({GrammarElement::Kind::kRule, *next});
      rules_[optional] = {body, {}};
      elements_in_rules_ += body.size() + 2;
      next = optional;
    }
    if (next) seq.push_back({GrammarElement::Kind::kRule, *next});
  }

  // Undefined rules, a missing root, left recursion; then the flat form.
  Result<Grammar> finish() {
    for (size_t r = 0; r < rules_.size(); ++r) {
      if (!defined_[r]) {
        pos_ = first_use_[r];
        fail("undefined rule '" + names_[r] + "'");
        return error_;
      }
    }
    auto root = rule_ids_.find("root");
    if (root == rule_ids_.end()) return Status::invalid_argument("grammar: no rule named 'root'");
    if (Status s = check_left_recursion(); !s) return s;

    Grammar g;
    g.root_ = root->second;
    g.rule_names_ = names_;
    g.classes_ = std::move(classes_);
    g.rule_alternatives_.resize(rules_.size());
    for (size_t r = 0; r < rules_.size(); ++r) {
      for (const Sequence& seq : rules_[r]) {
        g.rule_alternatives_[r].push_back(static_cast<uint32_t>(g.elements_.size()));
        g.elements_.insert(g.elements_.end(), seq.begin(), seq.end());
        g.elements_.push_back({GrammarElement::Kind::kEnd, 0});
      }
    }
    return g;
  }

  Status check_left_recursion() const {
    const size_t n = rules_.size();
    // Nullable rules by a work list (linear in the grammar's size): an
    // alternative is nullable once every element in it is; `waiting`
    // counts the elements still in doubt.
    std::vector<char> nullable(n, 0);
    std::vector<std::vector<std::pair<uint32_t, uint32_t>>> used_in(n);  // rule -> (rule, alternative)
    std::vector<std::vector<uint32_t>> waiting(n);
    std::vector<uint32_t> work;
    for (size_t r = 0; r < n; ++r) {
      waiting[r].resize(rules_[r].size());
      for (size_t a = 0; a < rules_[r].size(); ++a) {
        const Sequence& seq = rules_[r][a];
        const bool has_chars = std::any_of(
            seq.begin(), seq.end(), [](const GrammarElement& e) { return e.kind != GrammarElement::Kind::kRule; });
        if (has_chars) {
          waiting[r][a] = ~0u;  // never nullable
          continue;
        }
        waiting[r][a] = static_cast<uint32_t>(seq.size());
        for (const GrammarElement& e : seq) used_in[e.index].emplace_back(static_cast<uint32_t>(r), a);
        if (seq.empty() && !nullable[r]) {
          nullable[r] = 1;
          work.push_back(static_cast<uint32_t>(r));
        }
      }
    }
    while (!work.empty()) {
      const uint32_t r = work.back();
      work.pop_back();
      for (const auto& [user, alt] : used_in[r]) {
        if (waiting[user][alt] == ~0u || --waiting[user][alt] != 0 || nullable[user]) continue;
        nullable[user] = 1;
        work.push_back(user);
      }
    }
    // Rules each rule can start with, then a cycle search over them.
    std::vector<std::vector<uint32_t>> left(n);
    for (size_t r = 0; r < n; ++r) {
      for (const Sequence& seq : rules_[r]) {
        for (const GrammarElement& e : seq) {
          if (e.kind != GrammarElement::Kind::kRule) break;
          left[r].push_back(e.index);
          if (!nullable[e.index]) break;
        }
      }
    }
    std::vector<char> color(n, 0);  // 0 new, 1 on the path, 2 done
    std::vector<std::pair<uint32_t, size_t>> path;
    for (size_t start = 0; start < n; ++start) {
      if (color[start] != 0) continue;
      path.emplace_back(static_cast<uint32_t>(start), 0);
      color[start] = 1;
      while (!path.empty()) {
        auto& [r, next] = path.back();
        if (next == left[r].size()) {
          color[r] = 2;
          path.pop_back();
          continue;
        }
        const uint32_t to = left[r][next++];
        if (color[to] == 1) {
          return Status::invalid_argument("grammar: rule '" + names_[to] +
                                          "' is left-recursive (it can reach itself without matching a character, "
                                          "as a repeated part that can match nothing does)");
        }
        if (color[to] == 0) {
          color[to] = 1;
          path.emplace_back(to, 0);
        }
      }
    }
    return Status::ok();
  }

  std::string_view text_;
  size_t pos_ = 0;
  bool ok_ = true;
  Status error_;
  std::vector<Alternatives> rules_;
  std::vector<std::string> names_;
  std::vector<char> defined_;
  std::vector<size_t> first_use_;
  std::map<std::string, uint32_t> rule_ids_;
  std::map<uint32_t, int> helper_count_;
  std::vector<std::vector<CodePointRange>> classes_;
  std::map<std::vector<std::pair<uint32_t, uint32_t>>, uint32_t> class_ids_;
  size_t elements_in_rules_ = 0;
  int depth_ = 0;
};

Result<Grammar> parse_gbnf(std::string_view text) { return GbnfParser(text).parse(); }

}  // namespace omnibus
