#include "grammar/regex_grammar.h"

#include "grammar/regex_charset.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace omnibus {
namespace {

using regex_internal::append_utf8;
using regex_internal::CharSet;
using regex_internal::decode_utf8;
using regex_internal::json_escaped_chars;
using regex_internal::kMaxCodePoint;
using regex_internal::surrogates;
constexpr uint64_t kUnbounded = std::numeric_limits<uint64_t>::max();
// Deeper group nesting is refused, so parsing and emitting (both recursive)
// cannot exhaust the stack.
constexpr int kMaxGroupDepth = 32;
// The grammar parser expands x{m,n} into copies of x, so the pattern's size
// with every repetition written out is capped; a larger one is refused.
constexpr uint64_t kMaxExpandedSize = 100000;

uint64_t saturating_add(uint64_t a, uint64_t b) { return a > kUnbounded - b ? kUnbounded : a + b; }
uint64_t saturating_mul(uint64_t a, uint64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > kUnbounded / b ? kUnbounded : a * b;
}

// A parsed pattern. An empty kSeq is the empty string.
struct Node {
  enum class Kind { kChars, kSeq, kAlt, kRepeat, kStart, kEnd };
  Kind kind = Kind::kSeq;
  CharSet chars;           // kChars (never empty, no surrogates)
  std::vector<Node> kids;  // kSeq, kAlt: the parts; kRepeat: the one repeated
  uint64_t min = 0;        // kRepeat
  uint64_t max = 0;        // kRepeat; kUnbounded for no limit
};

Node chars_node(const CharSet& set) {
  Node n;
  n.kind = Node::Kind::kChars;
  n.chars = set.minus(surrogates());
  return n;
}

Node repeat_node(Node child, uint64_t min, uint64_t max) {
  Node n;
  n.kind = Node::Kind::kRepeat;
  n.min = min;
  n.max = max;
  n.kids.push_back(std::move(child));
  return n;
}

CharSet digit_set() { return CharSet::of('0', '9'); }
CharSet word_set() {
  CharSet s = CharSet::of('a', 'z');
  s.add('A', 'Z');
  s.add('0', '9');
  s.add('_', '_');
  return s;
}
CharSet space_set() {  // ECMAScript's WhiteSpace and LineTerminator
  CharSet s = CharSet::of('\t', '\r');
  for (uint32_t c : {0x20u, 0xA0u, 0x1680u, 0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u, 0xFEFFu}) s.add(c, c);
  s.add(0x2000, 0x200A);
  return s;
}
CharSet dot_set() {  // everything but line terminators
  CharSet s;
  for (uint32_t c : {0x0Au, 0x0Du, 0x2028u, 0x2029u}) s.add(c, c);
  return s.complement();
}

int hex_value(char32_t c) {
  if (c >= '0' && c <= '9') return static_cast<int>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<int>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<int>(c - 'A' + 10);
  return -1;
}

// Recursive descent over ECMAScript pattern syntax (the subset in the header).
class RegexParser {
 public:
  explicit RegexParser(std::u32string pattern) : p_(std::move(pattern)) {}

  Result<Node> parse() {
    OMNIBUS_ASSIGN_OR_RETURN(Node n, parse_alternation(0));
    if (pos_ < p_.size()) return error(pos_, "unmatched ')'");
    return n;
  }

 private:
  // A class member: one code point (usable as a range end) or a set (\d ...).
  struct ClassAtom {
    CharSet set;
    int64_t single = -1;
  };

  bool at_end() const { return pos_ >= p_.size(); }
  char32_t peek(size_t ahead = 0) const { return pos_ + ahead < p_.size() ? p_[pos_ + ahead] : 0; }
  bool accept(char32_t c) {
    if (at_end() || p_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  static Status error(size_t at, const std::string& what) {
    return Status::invalid_argument("regex: " + what + " at offset " + std::to_string(at));
  }

  Result<Node> parse_alternation(int depth) {
    Node alt;
    alt.kind = Node::Kind::kAlt;
    do {
      OMNIBUS_ASSIGN_OR_RETURN(Node seq, parse_sequence(depth));
      alt.kids.push_back(std::move(seq));
    } while (accept('|'));
    if (alt.kids.size() == 1) return std::move(alt.kids[0]);
    return alt;
  }

  Result<Node> parse_sequence(int depth) {
    Node seq;
    while (!at_end() && peek() != '|' && peek() != ')') {
      OMNIBUS_ASSIGN_OR_RETURN(Node atom, parse_atom(depth));
      OMNIBUS_RETURN_IF_ERROR(parse_quantifier(atom));
      seq.kids.push_back(std::move(atom));
    }
    if (seq.kids.size() == 1) return std::move(seq.kids[0]);
    return seq;
  }

  Result<Node> parse_atom(int depth) {
    const size_t at = pos_;
    const char32_t c = p_[pos_++];
    Node anchor;
    switch (c) {
      case '^': anchor.kind = Node::Kind::kStart; return anchor;
      case '$': anchor.kind = Node::Kind::kEnd; return anchor;
      case '.': return chars_node(dot_set());
      case '(': return parse_group(at, depth);
      case '[': {
        OMNIBUS_ASSIGN_OR_RETURN(CharSet set, parse_class(at));
        return chars_node(set);
      }
      case '\\': {
        OMNIBUS_ASSIGN_OR_RETURN(ClassAtom a, parse_escape(at, /*in_class=*/false));
        return chars_node(a.set);
      }
      case '*':
      case '+':
      case '?': return error(at, "nothing to repeat");
      case '{': return error(at, "unescaped '{' (write \\{ for a brace)");
      default: return chars_node(CharSet::of(c, c));
    }
  }

  Result<Node> parse_group(size_t at, int depth) {
    if (depth >= kMaxGroupDepth) return error(at, "groups nested deeper than " + std::to_string(kMaxGroupDepth));
    if (accept('?')) {
      if (peek() == '=' || peek() == '!' || (peek() == '<' && (peek(1) == '=' || peek(1) == '!'))) {
        return error(at, "lookaround assertion is unsupported");
      }
      if (accept('<')) {  // (?<name>...): a capturing group, the name is irrelevant here
        while (!at_end() && peek() != '>') ++pos_;
        if (!accept('>')) return error(at, "unterminated group name");
      } else if (!accept(':')) {
        return error(at, "unsupported group syntax '(?'");
      }
    }
    OMNIBUS_ASSIGN_OR_RETURN(Node inner, parse_alternation(depth + 1));
    if (!accept(')')) return error(at, "missing ')'");
    return inner;
  }

  // After '['. `[^]` is any character; `[]` matches nothing and is refused.
  Result<CharSet> parse_class(size_t at) {
    const bool negated = accept('^');
    CharSet set;
    while (!accept(']')) {
      if (at_end()) return error(at, "missing ']'");
      OMNIBUS_ASSIGN_OR_RETURN(ClassAtom lo, parse_class_atom());
      if (peek() == '-' && peek(1) != ']' && peek(1) != 0) {
        const size_t dash = pos_++;
        OMNIBUS_ASSIGN_OR_RETURN(ClassAtom hi, parse_class_atom());
        if (lo.single < 0 || hi.single < 0) return error(dash, "class escape used as a range end");
        if (lo.single > hi.single) return error(dash, "range out of order in character class");
        set.add(static_cast<uint32_t>(lo.single), static_cast<uint32_t>(hi.single));
      } else {
        set.add(lo.set);
      }
    }
    if (negated) set = set.complement();
    if (set.minus(surrogates()).empty()) return error(at, "character class matches nothing");
    return set;
  }

  Result<ClassAtom> parse_class_atom() {
    const size_t at = pos_;
    const char32_t c = p_[pos_++];
    if (c == '\\') return parse_escape(at, /*in_class=*/true);
    return ClassAtom{CharSet::of(c, c), c};
  }

  static ClassAtom one(uint32_t c) { return ClassAtom{CharSet::of(c, c), c}; }

  // After '\'.
  Result<ClassAtom> parse_escape(size_t at, bool in_class) {
    if (at_end()) return error(at, "pattern ends with '\\'");
    const char32_t c = p_[pos_++];
    switch (c) {
      case 'd': return ClassAtom{digit_set()};
      case 'D': return ClassAtom{digit_set().complement()};
      case 'w': return ClassAtom{word_set()};
      case 'W': return ClassAtom{word_set().complement()};
      case 's': return ClassAtom{space_set()};
      case 'S': return ClassAtom{space_set().complement()};
      case 't': return one('\t');
      case 'n': return one('\n');
      case 'r': return one('\r');
      case 'f': return one('\f');
      case 'v': return one('\v');
      case 'b':
        if (in_class) return one('\b');
        return error(at, "word boundary \\b is unsupported");
      case 'B': return error(at, "word boundary \\B is unsupported");
      case '0':
        if (peek() >= '0' && peek() <= '9') return error(at, "octal escape is unsupported");
        return one(0);
      case 'x': return parse_hex_escape(at, 2);
      case 'u': return parse_unicode_escape(at);
      case 'c': return error(at, "control escape \\c is unsupported");
      case 'k': return error(at, "named backreference is unsupported");
      case 'p':
      case 'P': return error(at, "unicode property escape is unsupported");
      default: break;
    }
    if (c >= '1' && c <= '9') return error(at, "backreference is unsupported");
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
      return error(at, "unknown escape '\\" + std::string(1, static_cast<char>(c)) + "'");
    }
    return one(c);  // \. \* \\ \/ \- and the like stand for themselves
  }

  Result<ClassAtom> parse_hex_escape(size_t at, int digits) {
    uint32_t value = 0;
    for (int i = 0; i < digits; ++i) {
      const int h = hex_value(peek());
      if (h < 0) return error(at, "malformed hex escape");
      value = value * 16 + static_cast<uint32_t>(h);
      ++pos_;
    }
    return one(value);
  }

  // \uHHHH, joining an escaped surrogate pair into one code point.
  Result<ClassAtom> parse_unicode_escape(size_t at) {
    if (peek() == '{') return error(at, "\\u{...} escape is unsupported");
    OMNIBUS_ASSIGN_OR_RETURN(ClassAtom high, parse_hex_escape(at, 4));
    const auto h = static_cast<uint32_t>(high.single);
    if (h < 0xD800 || h > 0xDFFF) return high;
    if (h <= 0xDBFF && peek() == '\\' && peek(1) == 'u') {
      pos_ += 2;
      OMNIBUS_ASSIGN_OR_RETURN(ClassAtom low, parse_hex_escape(at, 4));
      const auto l = static_cast<uint32_t>(low.single);
      if (l >= 0xDC00 && l <= 0xDFFF) return one(0x10000 + ((h - 0xD800) << 10) + (l - 0xDC00));
    }
    return error(at, "lone surrogate escape");
  }

  // A postfix quantifier, if one follows; wraps `atom` in a kRepeat.
  Status parse_quantifier(Node& atom) {
    const size_t at = pos_;
    uint64_t min = 0;
    uint64_t max = kUnbounded;
    if (accept('+')) {
      min = 1;
    } else if (accept('?')) {
      max = 1;
    } else if (accept('{')) {
      if (!parse_count(min)) return error(at, "malformed quantifier '{'");
      max = min;
      if (accept(',')) max = parse_count(max) ? max : kUnbounded;
      if (!accept('}')) return error(at, "malformed quantifier '{'");
      if (min > max) return error(at, "quantifier {m,n} with m > n");
    } else if (!accept('*')) {
      return Status::ok();
    }
    if (atom.kind == Node::Kind::kStart || atom.kind == Node::Kind::kEnd) {
      return error(at, "quantifier after an anchor");
    }
    accept('?');  // lazy: the same strings match
    if (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{') return error(pos_, "nothing to repeat");
    atom = repeat_node(std::move(atom), min, max);
    return Status::ok();
  }

  // Decimal digits, saturating far above any count we accept.
  bool parse_count(uint64_t& out) {
    if (peek() < '0' || peek() > '9') return false;
    out = 0;
    while (peek() >= '0' && peek() <= '9') out = std::min<uint64_t>(out * 10 + (p_[pos_++] - '0'), 1ull << 40);
    return true;
  }

  std::u32string p_;
  size_t pos_ = 0;
};

uint64_t min_length(const Node& n) {
  switch (n.kind) {
    case Node::Kind::kChars: return 1;
    case Node::Kind::kStart:
    case Node::Kind::kEnd: return 0;
    case Node::Kind::kRepeat: return saturating_mul(min_length(n.kids[0]), n.min);
    case Node::Kind::kAlt: {
      uint64_t m = kUnbounded;
      for (const Node& k : n.kids) m = std::min(m, min_length(k));
      return m;
    }
    case Node::Kind::kSeq: {
      uint64_t m = 0;
      for (const Node& k : n.kids) m = saturating_add(m, min_length(k));
      return m;
    }
  }
  return 0;
}

uint64_t max_length(const Node& n) {
  switch (n.kind) {
    case Node::Kind::kChars: return 1;
    case Node::Kind::kStart:
    case Node::Kind::kEnd: return 0;
    case Node::Kind::kRepeat: return saturating_mul(max_length(n.kids[0]), n.max);
    case Node::Kind::kAlt:
    case Node::Kind::kSeq: {
      uint64_t m = 0;
      for (const Node& k : n.kids) {
        m = n.kind == Node::Kind::kAlt ? std::max(m, max_length(k)) : saturating_add(m, max_length(k));
      }
      return m;
    }
  }
  return 0;
}

// The pattern's size with every repetition written out at its largest.
uint64_t expanded_size(const Node& n) {
  if (n.kind == Node::Kind::kChars) return 1;
  if (n.kind == Node::Kind::kRepeat) {
    const uint64_t copies = n.max == kUnbounded ? std::max<uint64_t>(n.min, 1) : n.max;
    return saturating_mul(expanded_size(n.kids[0]), copies);
  }
  uint64_t total = 0;
  for (const Node& k : n.kids) total = saturating_add(total, expanded_size(k));
  return total;
}

bool has_anchor(const Node& n) {
  if (n.kind == Node::Kind::kStart || n.kind == Node::Kind::kEnd) return true;
  return std::any_of(n.kids.begin(), n.kids.end(), has_anchor);
}

// JSON Schema searches for the pattern: an alternative without ^ may start
// anywhere (any text before it) and one without $ may end anywhere.
Result<Node> apply_anchors(Node root) {
  std::vector<Node> alternatives;
  if (root.kind == Node::Kind::kAlt) {
    alternatives = std::move(root.kids);
  } else {
    alternatives.push_back(std::move(root));
  }
  const Node any_text = repeat_node(chars_node(CharSet::of(0, kMaxCodePoint)), 0, kUnbounded);
  Node out;
  out.kind = Node::Kind::kAlt;
  for (Node& alt : alternatives) {
    std::vector<Node> items;
    if (alt.kind == Node::Kind::kSeq) {
      items = std::move(alt.kids);
    } else {
      items.push_back(std::move(alt));
    }
    const bool at_start = !items.empty() && items.front().kind == Node::Kind::kStart;
    if (at_start) items.erase(items.begin());
    const bool at_end = !items.empty() && items.back().kind == Node::Kind::kEnd;
    if (at_end) items.pop_back();
    if (std::any_of(items.begin(), items.end(), has_anchor)) {
      return Status::invalid_argument("regex: '^' and '$' are supported only at the start and end of the pattern");
    }
    Node seq;
    if (!at_start) seq.kids.push_back(any_text);
    const bool only_any = !at_start && items.empty();
    for (Node& item : items) seq.kids.push_back(std::move(item));
    if (!at_end && !only_any) seq.kids.push_back(any_text);
    out.kids.push_back(std::move(seq));
  }
  if (out.kids.size() == 1) return std::move(out.kids[0]);
  return out;
}

// A fragment of GBNF; empty text matches the empty string. `atom` means a
// postfix operator may follow it directly.
struct Piece {
  std::string text;
  bool atom = true;
};

// The canonical JSON spelling of one code point inside a string.
std::string json_encode(uint32_t c) {
  switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: break;
  }
  std::string out;
  if (c < 0x20) {
    static const char kHex[] = "0123456789abcdef";
    out = "\\u00";
    out += kHex[c >> 4];
    out += kHex[c & 0xF];
  } else {
    append_utf8(c, out);
  }
  return out;
}

std::string class_char(uint32_t c) {
  static const char kHex[] = "0123456789ABCDEF";
  if (c == '\\' || c == ']' || c == '[' || c == '-' || c == '^') return std::string("\\") + static_cast<char>(c);
  if (c >= 0x20 && c < 0x7F) return std::string(1, static_cast<char>(c));
  const int digits = c < 0x80 ? 2 : c <= 0xFFFF ? 4 : 8;
  std::string out = digits == 2 ? "\\x" : digits == 4 ? "\\u" : "\\U";
  for (int i = digits - 1; i >= 0; --i) out += kHex[(c >> (4 * i)) & 0xF];
  return out;
}

// A GBNF character class; written negated when that is shorter.
std::string bracket(const CharSet& set) {
  const bool negate = set.contains(kMaxCodePoint);
  const CharSet shown = negate ? set.complement().minus(surrogates()) : set;
  std::string out = negate ? "[^" : "[";
  for (const auto& [lo, hi] : shown.ranges()) {
    out += class_char(lo);
    if (hi > lo + 1) out += '-';
    if (hi > lo) out += class_char(hi);
  }
  return out + "]";
}

Piece literal_piece(const std::string& text) {
  std::u32string cps;
  decode_utf8(text, cps);
  return Piece{gbnf_literal(text), cps.size() == 1};
}

// Every JSON spelling we accept of the code points in `set`: raw characters,
// the two-character escapes, and \u00XX for control characters.
Piece set_piece(const CharSet& set) {
  if (set.single() >= 0) return literal_piece(json_encode(static_cast<uint32_t>(set.single())));
  std::vector<std::string> alternatives;
  const CharSet raw = set.minus(json_escaped_chars());
  if (!raw.empty()) alternatives.push_back(bracket(raw));
  CharSet short_escapes;  // the letters after the backslash
  for (const auto& [c, letter] : std::vector<std::pair<char, char>>{
           {'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'\b', 'b'}, {'\f', 'f'}, {'\n', 'n'}, {'\r', 'r'}, {'\t', 't'}}) {
    if (set.contains(static_cast<uint8_t>(c))) short_escapes.add(letter, letter);
  }
  if (short_escapes.single() >= 0) {
    alternatives.push_back(gbnf_literal(std::string("\\") + static_cast<char>(short_escapes.single())));
  } else if (!short_escapes.empty()) {
    alternatives.push_back(gbnf_literal("\\") + " " + bracket(short_escapes));
  }
  for (uint32_t high = 0; high < 2; ++high) {  // \u000X and \u001X
    CharSet nibbles;
    for (uint32_t low = 0; low < 16; ++low) {
      if (!set.contains(high * 16 + low)) continue;
      nibbles.add(low < 10 ? '0' + low : 'a' + low - 10, low < 10 ? '0' + low : 'a' + low - 10);
      if (low >= 10) nibbles.add('A' + low - 10, 'A' + low - 10);
    }
    if (!nibbles.empty()) alternatives.push_back(gbnf_literal(high ? "\\u001" : "\\u000") + " " + bracket(nibbles));
  }
  if (alternatives.size() == 1) return Piece{alternatives[0], alternatives[0][0] == '['};
  std::string text = "(";
  for (size_t i = 0; i < alternatives.size(); ++i) text += (i ? " | " : "") + alternatives[i];
  return Piece{text + ")", true};
}

std::string as_atom(const Piece& p) { return p.atom ? p.text : "(" + p.text + ")"; }

// A node whose Kleene star equals that of `n` but that cannot match the
// empty string: (a?)* is a*, (a|b?)* is (a|b)*. No value: n matches only
// the empty string. The grammar parser refuses a star over a part that can
// match nothing, so this runs before every unbounded repetition.
Result<std::vector<Node>> strip_empty(const Node& n) {
  if (min_length(n) > 0) return std::vector<Node>{n};
  if (max_length(n) == 0) return std::vector<Node>{};
  if (n.kind == Node::Kind::kRepeat) return strip_empty(n.kids[0]);
  if (n.kind == Node::Kind::kAlt) {
    Node alt;
    alt.kind = Node::Kind::kAlt;
    for (const Node& k : n.kids) {
      OMNIBUS_ASSIGN_OR_RETURN(std::vector<Node> s, strip_empty(k));
      for (Node& x : s) alt.kids.push_back(std::move(x));
    }
    if (alt.kids.size() == 1) return std::vector<Node>{std::move(alt.kids[0])};
    return std::vector<Node>{std::move(alt)};
  }
  return Status::invalid_argument(
      "regex: an unbounded repetition of a sequence that can match the empty string is unsupported");
}

Result<Piece> emit(const Node& n);

Result<Piece> emit_sequence(const Node& n) {
  std::vector<Piece> parts;
  std::string pending;  // consecutive single characters, written as one literal
  auto flush = [&] {
    if (!pending.empty()) parts.push_back(literal_piece(pending));
    pending.clear();
  };
  for (const Node& k : n.kids) {
    if (k.kind == Node::Kind::kChars && k.chars.single() >= 0) {
      pending += json_encode(static_cast<uint32_t>(k.chars.single()));
      continue;
    }
    flush();
    OMNIBUS_ASSIGN_OR_RETURN(Piece p, emit(k));
    if (!p.text.empty()) parts.push_back(std::move(p));
  }
  flush();
  if (parts.size() == 1) return parts[0];
  Piece out{"", false};
  for (const Piece& p : parts) out.text += (out.text.empty() ? "" : " ") + p.text;
  return out;
}

Result<Piece> emit_repeat(const Node& n) {
  const Node* child = &n.kids[0];
  uint64_t min = n.min;
  std::vector<Node> stripped;
  if (n.max == kUnbounded && min_length(*child) == 0) {
    OMNIBUS_ASSIGN_OR_RETURN(stripped, strip_empty(*child));
    if (stripped.empty()) return Piece{};
    child = &stripped[0];
    min = 0;
  }
  if (n.max == 0) return Piece{};
  OMNIBUS_ASSIGN_OR_RETURN(Piece p, emit(*child));
  if (p.text.empty()) return p;
  if (min == 1 && n.max == 1) return p;
  // Not an atom: a second postfix would be stacked on this one ("a"*?).
  return Piece{gbnf_repeat(as_atom(p), min, n.max == kUnbounded ? std::nullopt : std::optional(n.max)), false};
}

Result<Piece> emit(const Node& n) {
  switch (n.kind) {
    case Node::Kind::kChars: return set_piece(n.chars);
    case Node::Kind::kSeq: return emit_sequence(n);
    case Node::Kind::kRepeat: return emit_repeat(n);
    case Node::Kind::kAlt: {
      std::vector<std::string> texts;
      bool can_be_empty = false;
      for (const Node& k : n.kids) {
        OMNIBUS_ASSIGN_OR_RETURN(Piece p, emit(k));
        if (p.text.empty()) {
          can_be_empty = true;
        } else {
          texts.push_back(p.text);
        }
      }
      if (texts.empty()) return Piece{};
      std::string text = "(";
      for (size_t i = 0; i < texts.size(); ++i) text += (i ? " | " : "") + texts[i];
      return Piece{text + (can_be_empty ? ")?" : ")"), true};
    }
    case Node::Kind::kStart:
    case Node::Kind::kEnd: break;  // removed by apply_anchors
  }
  return Status::internal("regex: anchor left in the pattern");
}

// Narrows `root` to strings of min..max code points: nothing to do when its
// bounds imply them; else the one repetition of a fixed-length part among
// fixed-length parts takes the bounds (see the header).
Status fit_length(Node& root, uint64_t min, std::optional<uint64_t> max) {
  const uint64_t lo = min_length(root), hi = max_length(root);
  if (lo >= min && (!max || (hi != kUnbounded && hi <= *max))) return Status::ok();
  const Status unsupported = Status::invalid_argument(
      "minLength/maxLength with a pattern or format that does not imply them is unsupported (only a pattern of "
      "fixed-length parts and one repeated fixed-length part can be cut to a length)");
  std::vector<Node*> parts;
  if (root.kind == Node::Kind::kSeq) {
    for (Node& k : root.kids) parts.push_back(&k);
  } else {
    parts.push_back(&root);
  }
  uint64_t fixed = 0;
  Node* repeat = nullptr;
  for (Node* part : parts) {
    const uint64_t part_min = min_length(*part);
    if (part_min == max_length(*part)) {
      fixed = saturating_add(fixed, part_min);
      continue;
    }
    if (repeat != nullptr || part->kind != Node::Kind::kRepeat) return unsupported;
    const Node& child = part->kids[0];
    if (min_length(child) == 0 || min_length(child) != max_length(child)) return unsupported;
    repeat = part;
  }
  const Status empty = Status::invalid_argument("no string matches the pattern within minLength/maxLength");
  if (repeat == nullptr) return empty;  // one length, outside the bounds
  const uint64_t width = min_length(repeat->kids[0]);
  uint64_t count_min = repeat->min, count_max = repeat->max;
  if (min > fixed) count_min = std::max(count_min, (min - fixed + width - 1) / width);
  if (max) count_max = *max < fixed ? 0 : std::min(count_max, (*max - fixed) / width);
  if ((max && *max < fixed) || count_min > count_max) return empty;
  repeat->min = count_min;
  repeat->max = count_max;
  return Status::ok();
}

}  // namespace

Result<RegexGbnf> regex_to_gbnf(std::string_view pattern) { return regex_to_gbnf(pattern, 0, std::nullopt); }

Result<RegexGbnf> regex_to_gbnf(std::string_view pattern, uint64_t min_length_bound,
                                std::optional<uint64_t> max_length_bound) {
  std::u32string code_points;
  if (!decode_utf8(pattern, code_points)) return Status::invalid_argument("regex: pattern is not valid UTF-8");
  OMNIBUS_ASSIGN_OR_RETURN(Node parsed, RegexParser(std::move(code_points)).parse());
  OMNIBUS_ASSIGN_OR_RETURN(Node root, apply_anchors(std::move(parsed)));
  if (Status s = fit_length(root, min_length_bound, max_length_bound); !s) return s;
  if (expanded_size(root) > kMaxExpandedSize) {
    return Status::invalid_argument("regex: repetition counts expand the pattern past " +
                                    std::to_string(kMaxExpandedSize) + " characters");
  }
  OMNIBUS_ASSIGN_OR_RETURN(Piece piece, emit(root));
  RegexGbnf out;
  out.expression = std::move(piece.text);
  out.min_length = min_length(root);
  const uint64_t max = max_length(root);
  if (max != kUnbounded) out.max_length = max;
  return out;
}

std::string join_nonempty(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (const std::string& p : parts) {
    if (p.empty()) continue;
    if (!out.empty()) out += separator;
    out += p;
  }
  return out;
}

std::string gbnf_repeat(const std::string& atom, uint64_t min, std::optional<uint64_t> max) {
  if (max && *max == 0) return "";
  if (min == 1 && max == 1) return atom;
  if (min == 0 && max == 1) return atom + "?";
  if (!max) return atom + (min == 0 ? "*" : min == 1 ? "+" : "{" + std::to_string(min) + ",}");
  if (min == *max) return atom + "{" + std::to_string(min) + "}";
  return atom + "{" + std::to_string(min) + "," + std::to_string(*max) + "}";
}

std::optional<std::vector<JsonChar>> json_chars(std::string_view text) {
  std::u32string code_points;
  if (!decode_utf8(text, code_points)) return std::nullopt;
  std::vector<JsonChar> out;
  for (const char32_t c : code_points) out.push_back(JsonChar{c, json_encode(c)});
  return out;
}

std::string json_char_not_in(const std::vector<uint32_t>& excluded) {
  CharSet set;
  for (const uint32_t c : excluded) set.add(c, c);
  return as_atom(set_piece(set.complement().minus(surrogates())));
}

std::string gbnf_literal(std::string_view text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out = "\"";
  for (const char ch : text) {
    const auto c = static_cast<uint8_t>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out += "\\x";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

}  // namespace omnibus
