#include "grammar/grammar.h"

#include <gtest/gtest.h>

#include <string>

#include "grammar/grammar_automaton.h"

namespace omnibus {
namespace {

Grammar parse_ok(const std::string& text) {
  Result<Grammar> g = parse_gbnf(text);
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  return g.is_ok() ? std::move(g).value() : Grammar();
}

std::string parse_error(const std::string& text) {
  Result<Grammar> g = parse_gbnf(text);
  EXPECT_FALSE(g.is_ok()) << text;
  return g.is_ok() ? "" : g.status().message();
}

TEST(GbnfParseTest, LiteralsClassesAndRepetition) {
  const Grammar g = parse_ok(R"(root ::= "a" [b-d]+ x? ("e" | "f"){2,3} # comment
x ::= [^a-z]
)");
  EXPECT_TRUE(grammar_accepts(g, "abee"));
  EXPECT_TRUE(grammar_accepts(g, "abcdZfef"));
  EXPECT_FALSE(grammar_accepts(g, "aee"));     // [b-d]+ needs one
  EXPECT_FALSE(grammar_accepts(g, "abe"));     // {2,3}: one is too few
  EXPECT_FALSE(grammar_accepts(g, "abeeee"));  // four too many
  EXPECT_FALSE(grammar_accepts(g, "abzee"));   // z is in a-z
  EXPECT_FALSE(grammar_accepts(g, "abee "));   // nothing after
  EXPECT_FALSE(grammar_accepts(g, "ab"));
}

TEST(GbnfParseTest, EscapesAndUnicode) {
  const Grammar g = parse_ok(R"(root ::= "\x41\u00e9\n\t\"\\" [\u4e00-\u9fff]* "é" [\]\-]
)");
  EXPECT_TRUE(grammar_accepts(g, "A\xC3\xA9\n\t\"\\\xE4\xB8\xAD\xE6\x96\x87\xC3\xA9]"));
  EXPECT_TRUE(grammar_accepts(g, "A\xC3\xA9\n\t\"\\\xC3\xA9-"));
  EXPECT_FALSE(grammar_accepts(g, "A\xC3\xA9\n\t\"\\\xC3\xA9x"));
  // Overlong and surrogate encodings are never characters.
  const Grammar any = parse_ok("root ::= .*\n");
  EXPECT_TRUE(grammar_accepts(any, "\xF0\x9F\x98\x80 ok"));
  EXPECT_FALSE(grammar_accepts(any, "\xC0\x80"));
  EXPECT_FALSE(grammar_accepts(any, "\xE0\x80\x80"));
  EXPECT_FALSE(grammar_accepts(any, "\xED\xA0\x80"));
  EXPECT_FALSE(grammar_accepts(any, "\xE4\xB8"));  // a character cut short
}

TEST(GbnfParseTest, MultiLineAlternativesAndGroups) {
  const Grammar g = parse_ok(R"(
root ::= value
value ::= object | "null" |
  "true"
object ::= "{" (
    "a" |
    "b"
  )* "}"
)");
  EXPECT_TRUE(grammar_accepts(g, "{abba}"));
  EXPECT_TRUE(grammar_accepts(g, "true"));
  EXPECT_TRUE(grammar_accepts(g, "{}"));
  EXPECT_FALSE(grammar_accepts(g, "{c}"));
}

TEST(GbnfParseTest, RecursionOnTheRightIsFine) {
  const Grammar g = parse_ok(R"g(root ::= "(" root ")" | ""
)g");
  EXPECT_TRUE(grammar_accepts(g, ""));
  EXPECT_TRUE(grammar_accepts(g, "((()))"));
  EXPECT_FALSE(grammar_accepts(g, "(()"));
  std::string deep(500, '(');
  deep.append(500, ')');
  EXPECT_TRUE(grammar_accepts(g, deep));
}

TEST(GbnfParseTest, ErrorsNameTheProblemAndPlace) {
  EXPECT_NE(parse_error("root ::= value\n").find("undefined rule 'value'"), std::string::npos);
  EXPECT_NE(parse_error("start ::= \"a\"\n").find("no rule named 'root'"), std::string::npos);
  EXPECT_NE(parse_error("root ::= root \"a\" | \"b\"\n").find("left-recursive"), std::string::npos);
  EXPECT_NE(parse_error("root ::= (\"a\"?)*\n").find("left-recursive"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"a\"\nroot ::= \"b\"\n").find("defined twice"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"abc\n").find("line 1"), std::string::npos);
  EXPECT_NE(parse_error("root ::= [a-\n").find("line 1"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"a\"{3,1}\n").find("below its minimum"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"a\"{99999999}\n").find("repetition count"), std::string::npos);
  EXPECT_NE(parse_error("root ::= *\n").find("nothing before it"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"\\q\"\n").find("unknown escape"), std::string::npos);
  EXPECT_NE(parse_error("root = \"a\"\n").find("'::='"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"a\"\n  x ::= \"b\" )\n").find("unexpected"), std::string::npos);
  // A long literal repeated many times is written out: refused before it
  // takes the memory. (Nested groups are rules, so they stay small.)
  EXPECT_NE(parse_error("root ::= \"" + std::string(200, 'a') + "\"{10000}\n").find("too large"), std::string::npos);
  EXPECT_TRUE(parse_gbnf("root ::= ((\"a\"{1000}){1000}){1000}\n").is_ok());
}

TEST(GbnfParseTest, AmbiguousGrammarsStayCheap) {
  // Each level doubles the ways to reach the same stack; expanding every
  // way would take 2^40 steps.
  std::string text = "root ::= r0 \"!\"\n";
  for (int i = 0; i < 40; ++i) {
    const std::string self = std::to_string(i), next = std::to_string(i + 1);
    text.append("r").append(self).append(" ::= r").append(next).append(" | r").append(next).append("\n");
  }
  text += "r40 ::= \"x\"\n";
  const Grammar g = parse_ok(text);
  EXPECT_TRUE(grammar_accepts(g, "x!"));
  EXPECT_FALSE(grammar_accepts(g, "xx"));
}

// Found by a hostile-input probe: each of these took the thread's stack or
// gigabytes before. Now each is refused, or runs within the limits.
// UTF-8 has no surrogates: a pair written as \u escapes (as JSON writes an
// emoji) is its character, a lone one is refused, a class leaves them out,
// and a class left with nothing is refused (a hostile probe got 200s with
// broken UTF-8 and with "" from these).
TEST(GbnfParseTest, SurrogatesAndEmptyClasses) {
  const Grammar pair = parse_ok("root ::= \"\\ud83d\\ude00 ok\"\n");
  EXPECT_TRUE(grammar_accepts(pair, "\xF0\x9F\x98\x80 ok"));
  EXPECT_NE(parse_error("root ::= \"\\ud83d ok\"\n").find("lone surrogate"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"\\ude00\"\n").find("lone surrogate"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"\\U0000D800\"\n").find("surrogate"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"\xED\xA0\x80\"\n").find("invalid UTF-8"), std::string::npos);
  const Grammar around = parse_ok("root ::= [\\uD7F0-\\uE010]\n");
  EXPECT_TRUE(grammar_accepts(around, "\xED\x9F\xB0"));   // U+D7F0
  EXPECT_TRUE(grammar_accepts(around, "\xEE\x80\x80"));   // U+E000
  EXPECT_FALSE(grammar_accepts(around, "\xED\xA0\x80"));  // D800, not UTF-8
  for (const char* empty : {"root ::= []\n", "root ::= [^\\x00-\\U0010FFFF]\n", "root ::= [\\uD800-\\uDFFF]\n",
                            "root ::= \"a\" | [^\\x00-\\U0010FFFF]\n"}) {
    EXPECT_NE(parse_error(empty).find("matches no character"), std::string::npos) << empty;
  }
}

TEST(GbnfParseTest, PathologicalGrammarsEndInAnAnswer) {
  std::string optional_nest = "root ::= ";
  for (int i = 0; i < 30; ++i) optional_nest.append("\"\"{0,10000} ");
  optional_nest.append("\"a\"\n");
  const Grammar nested = parse_ok(optional_nest);
  grammar_accepts(nested, "a");  // either answer; no crash

  const Grammar deep = parse_ok("root ::= \"x\" root b | \"y\"\nb ::= \"\" | \"z\"\n");
  std::string text(200000, 'x');
  text += "y";
  grammar_accepts(deep, text);  // past the expansion bound: refused, not a crash
  EXPECT_TRUE(grammar_accepts(deep, "xxxyzz"));

  std::string parens = "root ::= ";
  parens.append(40000, '(').append("\"a\"").append(40000, ')').append("\n");
  EXPECT_NE(parse_error(parens).find("nested deeper"), std::string::npos);

  const std::string long_name(100000, 'n');
  std::string named_text = "root ::= ";
  named_text.append(long_name).append("\n").append(long_name).append(" ::= (\"a\"){0,10000}\n");
  Result<Grammar> named = parse_gbnf(named_text);
  EXPECT_TRUE(named.is_ok()) << named.status().to_string();

  std::string chain;
  for (int i = 0; i < 20000; ++i)
    chain.append("r").append(std::to_string(i)).append(" ::= r").append(std::to_string(i + 1)).append("\n");
  chain.append("r20000 ::= \"\"\nroot ::= r0 \"a\"\n");
  EXPECT_TRUE(grammar_accepts(parse_ok(chain), "a"));
}

TEST(GrammarAutomatonTest, StatesAreReusedAndRestartKeepsTheParse) {
  auto g = std::make_shared<const Grammar>(parse_ok(R"(root ::= "[" item ("," item)* "]"
item ::= [a-z\u00e0-\u00ff]+
)"));
  GrammarAutomaton automaton(g);
  GrammarPosition at = automaton.start();
  ASSERT_TRUE(automaton.advance(at, "[abc,d\xC3\xA9"));
  const size_t states = automaton.state_count();
  GrammarPosition again = automaton.start();
  ASSERT_TRUE(automaton.advance(again, "[abc,d\xC3\xA9"));
  EXPECT_EQ(again, at);
  EXPECT_EQ(automaton.state_count(), states);
  EXPECT_FALSE(automaton.can_end(at));
  EXPECT_TRUE(automaton.can_continue(at));
  // Half a character: possible only while some class can still match it.
  GrammarPosition half = at;
  EXPECT_TRUE(automaton.advance(half, "\xC3"));
  EXPECT_FALSE(automaton.can_end(half));
  half = at;
  EXPECT_FALSE(automaton.advance(half, "\xE4"));  // U+4000..U+4FFF: no class has them
  at = automaton.restart_from(at);
  GrammarPosition one = at, two = at;
  ASSERT_TRUE(automaton.advance(one, "x,"));
  ASSERT_TRUE(automaton.advance(two, "x"));
  ASSERT_TRUE(automaton.advance(two, ","));
  EXPECT_EQ(one, two);
  GrammarPosition end = at;
  ASSERT_TRUE(automaton.advance(end, "]"));
  EXPECT_TRUE(automaton.can_end(end));
  EXPECT_FALSE(automaton.can_continue(end));
  EXPECT_FALSE(automaton.advance(end, "x"));
}

}  // namespace
}  // namespace omnibus
