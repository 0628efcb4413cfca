#include "grammar/regex_grammar.h"

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/grammar_automaton.h"

namespace omnibus {
namespace {

// The JSON spelling of `text` between the quotes, as the grammar wants it.
std::string spelled(const std::string& text) {
  const std::optional<std::vector<JsonChar>> chars = json_chars(text);
  std::string out;
  for (const JsonChar& c : chars.value()) out += c.spelling;
  return out;
}

// A grammar whose root is the pattern's expression, over string contents.
Grammar pattern_grammar(const std::string& pattern) {
  Result<RegexGbnf> r = regex_to_gbnf(pattern);
  EXPECT_TRUE(r.is_ok()) << pattern << ": " << r.status().to_string();
  if (!r.is_ok()) return Grammar();
  const std::string text = "root ::= " + (r->expression.empty() ? "\"\"" : r->expression) + "\n";
  Result<Grammar> g = parse_gbnf(text);
  EXPECT_TRUE(g.is_ok()) << pattern << " -> " << text << ": " << g.status().to_string();
  return g.is_ok() ? std::move(g).value() : Grammar();
}

std::string refusal(const std::string& pattern) {
  Result<RegexGbnf> r = regex_to_gbnf(pattern);
  EXPECT_FALSE(r.is_ok()) << pattern << " gave " << (r.is_ok() ? r->expression : "");
  return r.is_ok() ? "" : r.status().message();
}

TEST(RegexGrammarTest, ExactTextForSmallPatterns) {
  EXPECT_EQ(regex_to_gbnf("^abc$")->expression, R"("abc")");
  EXPECT_EQ(regex_to_gbnf("^a+b?$")->expression, R"("a"+ "b"?)");
  EXPECT_EQ(regex_to_gbnf("^(?:ab|c){2,3}$")->expression, R"(("ab" | "c"){2,3})");
  EXPECT_EQ(regex_to_gbnf("^[a-c_]\\d{2}$")->expression, R"([_a-c] [0-9]{2})");
  EXPECT_EQ(regex_to_gbnf("^\"\\\\$")->expression, R"("\\\"\\\\")");  // JSON-escaped " and \ .
  EXPECT_EQ(regex_to_gbnf("^(a|)$")->expression, R"(("a")?)");
  EXPECT_EQ(regex_to_gbnf("^$")->expression, "");
}

TEST(RegexGrammarTest, LengthBounds) {
  Result<RegexGbnf> r = regex_to_gbnf("^[a-z]{2,5}(x|yy)$");
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->min_length, 3u);
  EXPECT_EQ(r->max_length, 7u);
  r = regex_to_gbnf("^a+$");
  EXPECT_EQ(r->min_length, 1u);
  EXPECT_FALSE(r->max_length.has_value());
  r = regex_to_gbnf("abc");  // unanchored: anything around it
  EXPECT_EQ(r->min_length, 3u);
  EXPECT_FALSE(r->max_length.has_value());
  r = regex_to_gbnf("^\\uD83D\\uDE00$");  // a surrogate pair is one character
  EXPECT_EQ(r->min_length, 1u);
  EXPECT_EQ(r->max_length, 1u);
}

struct PatternCase {
  std::string pattern;
  std::vector<std::string> matching;
  std::vector<std::string> other;
};

TEST(RegexGrammarTest, AcceptsExactlyTheMatchingStrings) {
  const std::vector<PatternCase> cases = {
      {"^[A-Z]{2}-\\d{3,4}$", {"AB-123", "ZZ-0000"}, {"AB-12", "ab-123", "AB-12345", "AB123", " AB-123"}},
      {"^(?:foo|bar)+$", {"foo", "barfoo", "foofoofoo"}, {"", "fo", "foob", "baz"}},
      {"ab", {"ab", "xaby", "\"ab\\"}, {"a", "ba", "a b"}},
      {"^ab", {"ab", "abc"}, {"xab", "a"}},
      {"ab$", {"ab", "cab"}, {"abc"}},
      {"^a|b$", {"a", "ax", "b", "xb"}, {"xa", "bx", ""}},
      {"^.{3}$", {"abc", "\"\\\t", "é中😀"}, {"ab", "a\nb", "abcd"}},
      {"^[^a-c]+$", {"xyz", "\"\n\x01", "é"}, {"", "xay", "c"}},
      {"^\\w+@\\w+\\.com$", {"joe_1@mail.com"}, {"joe@mail.org", "jo e@mail.com", "@mail.com"}},
      {"^\\s*\\S+\\s*$", {"x", " \tx\n", "\u00a0x"}, {"", " ", "x y"}},
      {"^[\\d.-]+$", {"1.5", "-2", "..--"}, {"1,5", ""}},
      {"^\\x41\\u00e9\\/\\.$", {"A\u00e9/."}, {"Ae/.", "A\u00e9/x"}},
      {"^(a?)*b$", {"b", "ab", "aaab"}, {"a", "bb"}},
      {"^(?<year>\\d{4})-(\\d\\d)$", {"2024-01"}, {"2024-1", "24-01"}},
      {"^[\\]\\-^]$", {"]", "-", "^"}, {"\\", "a"}},
      {"^a{2,}?$", {"aa", "aaaa"}, {"a"}},
      {"^[^]$", {"\n", "x"}, {"", "xy"}},
  };
  for (const PatternCase& c : cases) {
    const Grammar g = pattern_grammar(c.pattern);
    for (const std::string& s : c.matching) {
      EXPECT_TRUE(grammar_accepts(g, spelled(s))) << c.pattern << " should match '" << s << "'";
    }
    for (const std::string& s : c.other) {
      EXPECT_FALSE(grammar_accepts(g, spelled(s))) << c.pattern << " should not match '" << s << "'";
    }
  }
}

TEST(RegexGrammarTest, AcceptsOnlyCanonicalSpellings) {
  const Grammar g = pattern_grammar("^[^x]{2}$");
  EXPECT_TRUE(grammar_accepts(g, "\\n\\\""));
  EXPECT_TRUE(grammar_accepts(g, "\\u001f\\/"));      // controls also as \u00XX, / also as \/
  EXPECT_TRUE(grammar_accepts(g, "\\u001F\\u000A"));  // either case of hex digit
  EXPECT_FALSE(grammar_accepts(g, "\n\t"));           // raw control characters are not JSON
  EXPECT_FALSE(grammar_accepts(g, "\"a"));            // nor is a raw quote
  EXPECT_FALSE(grammar_accepts(g, "\\u0041a"));       // \u spelling of a printable character
  EXPECT_FALSE(grammar_accepts(g, "\\qa"));           // no such escape
}

// Random strings over a small alphabet, matched by std::regex (ECMAScript,
// search semantics) and by the grammar: both must agree.
TEST(RegexGrammarTest, AgreesWithStdRegexOnRandomStrings) {
  const std::vector<std::string> patterns = {
      "^a(b|c)*d?$", "b+c",        "^(ab|a)(bc|c)$", "^[a-c]{1,3}-?$", "^(?:a|b\\.)*\\d$",
      "^\\w\\W$",    "a$|^b",      "^.a.$",          "^[^ab]*$",       "^(a{2}|b{1,2}){2}$",
      "(?:)",        "^(a|b?)+c$", "^(a?){2,3}b$",   "^(a|b?){2}c?$",
  };
  const std::string alphabet = "abc1.d- \n\"\\";  // the first five are likelier
  std::mt19937 rng(1234);
  for (const std::string& p : patterns) {
    const Grammar g = pattern_grammar(p);
    const std::regex re(p, std::regex::ECMAScript);
    int matched = 0;
    for (int i = 0; i < 3000; ++i) {
      std::string s;
      const int length = static_cast<int>(rng() % 7);
      for (int k = 0; k < length; ++k) s += alphabet[rng() % (k < 3 ? 5 : alphabet.size())];
      const bool expected = std::regex_search(s, re);
      matched += expected;
      ASSERT_EQ(grammar_accepts(g, spelled(s)), expected) << p << " on '" << s << "' spelled '" << spelled(s) << "'";
    }
    EXPECT_GT(matched, 0) << p << ": the random strings never matched, the test checks little";
  }
}

// minLength/maxLength beside a pattern: the grammar must accept exactly the
// matching strings of an allowed length, every string up to 6 characters
// over a small alphabet checked.
TEST(RegexGrammarTest, LengthBoundsCutTheOneRepetition) {
  struct Case {
    std::string pattern;
    uint64_t min;
    std::optional<uint64_t> max;
  };
  const std::vector<Case> cases = {
      {"^[ab][ab1-]*$", 2, 4}, {"^a+$", 0, 3},         {"^(?:ab)*$", 3, 6},     {"^[ab]{1,5}$", 3, std::nullopt},
      {"^-[ab]?-$", 0, 2},     {"^a(?:b|1)+-$", 4, 5}, {"^[ab]+\\d{2}$", 0, 4},
  };
  const std::string alphabet = "ab1-";
  for (const Case& c : cases) {
    Result<RegexGbnf> r = regex_to_gbnf(c.pattern, c.min, c.max);
    ASSERT_TRUE(r.is_ok()) << c.pattern << ": " << r.status().to_string();
    Result<Grammar> g = parse_gbnf("root ::= " + (r->expression.empty() ? "\"\"" : r->expression) + "\n");
    ASSERT_TRUE(g.is_ok()) << c.pattern << " -> " << r->expression;
    const std::regex re(c.pattern, std::regex::ECMAScript);
    int matched = 0;
    std::vector<std::string> level = {""};
    for (size_t length = 0; length <= 6; ++length) {
      std::vector<std::string> next;
      for (const std::string& s : level) {
        const bool expected = std::regex_search(s, re) && length >= c.min && (!c.max || length <= *c.max);
        matched += expected;
        EXPECT_EQ(grammar_accepts(*g, s), expected) << c.pattern << " on '" << s << "'";
        for (char ch : alphabet) next.push_back(s + ch);
      }
      level = std::move(next);
    }
    EXPECT_GT(matched, 0) << c.pattern;
  }
  // Two parts that vary, an unanchored pattern, an alternation: refused.
  for (const char* pattern : {"^a+b+$", "abc", "^(?:a|bb)$"})
    EXPECT_NE(regex_to_gbnf(pattern, 2, 2).status().message().find("minLength/maxLength"), std::string::npos)
        << pattern;
  EXPECT_NE(regex_to_gbnf("^a{2}$", 3, 4).status().message().find("no string"), std::string::npos);
  EXPECT_NE(regex_to_gbnf("^ab[ab]*$", 0, 1).status().message().find("no string"), std::string::npos);
}

TEST(RegexGrammarTest, RefusesWhatItCannotExpress) {
  EXPECT_NE(refusal("(a)\\1").find("backreference"), std::string::npos);
  EXPECT_NE(refusal("a(?=b)").find("lookaround"), std::string::npos);
  EXPECT_NE(refusal("a(?<!b)").find("lookaround"), std::string::npos);
  EXPECT_NE(refusal("\\bword").find("word boundary"), std::string::npos);
  EXPECT_NE(refusal("a^b").find("start and end"), std::string::npos);
  EXPECT_NE(refusal("(^a|b)c").find("start and end"), std::string::npos);
  EXPECT_NE(refusal("(a$)b").find("start and end"), std::string::npos);
  EXPECT_NE(refusal("\\p{L}").find("unicode property"), std::string::npos);
  EXPECT_NE(refusal("\\u{1F600}").find("\\u{"), std::string::npos);
  EXPECT_NE(refusal("*a").find("nothing to repeat"), std::string::npos);
  EXPECT_NE(refusal("a**").find("nothing to repeat"), std::string::npos);
  EXPECT_NE(refusal("(a").find("missing ')'"), std::string::npos);
  EXPECT_NE(refusal("a)").find("unmatched ')'"), std::string::npos);
  EXPECT_NE(refusal("[a").find("missing ']'"), std::string::npos);
  EXPECT_NE(refusal("[z-a]").find("out of order"), std::string::npos);
  EXPECT_NE(refusal("[]").find("matches nothing"), std::string::npos);
  EXPECT_NE(refusal("a{3,2}").find("m > n"), std::string::npos);
  EXPECT_NE(refusal("a{2").find("malformed quantifier"), std::string::npos);
  EXPECT_NE(refusal("(a?b?)*").find("empty string"), std::string::npos);
  EXPECT_NE(refusal("(a{1000}){1000}").find("expand"), std::string::npos);
  EXPECT_NE(refusal("\\q").find("unknown escape"), std::string::npos);
  EXPECT_NE(refusal("\\uD800").find("surrogate"), std::string::npos);
  EXPECT_NE(refusal(std::string(40, '(') + std::string(40, ')')).find("nested deeper"), std::string::npos);
  EXPECT_NE(refusal("\xC3").find("UTF-8"), std::string::npos);
}

TEST(RegexGrammarTest, GbnfLiteralEscapes) {
  EXPECT_EQ(gbnf_literal("a\"b\\c\n\t\r\x01\x7F"), R"("a\"b\\c\n\t\r\x01\x7F")");
  EXPECT_EQ(gbnf_literal("é"), "\"é\"");
  const Grammar g = parse_gbnf("root ::= " + gbnf_literal("a\"\\\n\x01é") + "\n").value();
  EXPECT_TRUE(grammar_accepts(g, "a\"\\\n\x01é"));
}

}  // namespace
}  // namespace omnibus
