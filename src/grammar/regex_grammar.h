// Converts a JSON Schema `pattern` (an ECMAScript regular expression) into a
// GBNF expression over the JSON text of a string's contents, for the schema
// converter (json_schema_grammar.h).
//
// Semantics are those of JSON Schema: the pattern is searched for, so it is
// anchored only where it says ^ or $ (each top-level alternative on its own).
// The expression matches the JSON-escaped contents (between the quotes) of
// exactly the strings the pattern matches, written in one canonical way:
// characters are raw UTF-8 except ", \ and control characters, which take
// their JSON escapes (\" \\ \b \f \n \r \t or \u00XX); \/ is also accepted
// for '/'. Other \uXXXX spellings of a character are not accepted. So every
// text it accepts is valid, though not every valid spelling is accepted.
//
// Supported: literals, escapes (\d \w \s \D \W \S \t \n \r \f \v \0 \xHH
// \uHHHH and escaped punctuation), classes [a-z] [^...] (with \d \w \s
// inside), `.`, groups ( ) (?: ) (?<name> ), alternation, quantifiers * + ?
// {m} {m,} {m,n} (lazy forms too; laziness does not change what matches),
// and ^ $ at the start and end. Refused with a message: backreferences,
// lookarounds, \b \B, \p{..}, \cX, anchors elsewhere, an unbounded repetition
// of a part that can match the empty string, and repetitions that would
// expand past a size limit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace omnibus {

struct RegexGbnf {
  // A GBNF expression (no rule definitions; may be empty, meaning the empty
  // string) that can stand inside a rule body in parentheses.
  std::string expression;
  // Bounds on the length, in code points, of the decoded strings it matches;
  // no max_length when unbounded.
  size_t min_length = 0;
  std::optional<size_t> max_length;
};

// The expression for `pattern` (UTF-8), or invalid_argument naming what is
// not supported and where ("regex: backreference is unsupported at offset
// 4"). Pure function; thread-safe.
Result<RegexGbnf> regex_to_gbnf(std::string_view pattern);

// The same for the strings of `pattern` that are `min_length` to
// `max_length` code points long (JSON Schema's minLength/maxLength beside a
// pattern or format), exactly. Where the pattern's own bounds imply them,
// as above; otherwise only a pattern that is a sequence of fixed-length
// parts and one repetition of a fixed-length part (^[a-z][a-z0-9-]*$) can
// be cut, by narrowing that repetition; anything else is refused.
Result<RegexGbnf> regex_to_gbnf(std::string_view pattern, uint64_t min_length, std::optional<uint64_t> max_length);

// A GBNF string literal that matches `text` (UTF-8) exactly: "..." with
// ", \ and control characters escaped.
std::string gbnf_literal(std::string_view text);

// `atom` (one GBNF element: a name, class or group) repeated `min` to `max`
// times (no max: unbounded) in postfix syntax: a? a* a+ a{m} a{m,} a{m,n};
// empty when max is 0.
std::string gbnf_repeat(const std::string& atom, uint64_t min, std::optional<uint64_t> max);

// The non-empty `parts` joined by `separator` (" | " for alternatives).
std::string join_nonempty(const std::vector<std::string>& parts, const std::string& separator);

// One character of a JSON string: its code point and canonical spelling.
struct JsonChar {
  uint32_t code_point = 0;
  std::string spelling;  // a, or an escape such as \n or \u001f
};
// The characters of UTF-8 `text`; nothing when it is malformed.
std::optional<std::vector<JsonChar>> json_chars(std::string_view text);
// A GBNF expression (one atom) for one character of a string's contents,
// spelled as above, that is none of `excluded`.
std::string json_char_not_in(const std::vector<uint32_t>& excluded);

}  // namespace omnibus
