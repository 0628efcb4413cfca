#include "grammar/token_mask.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace omnibus {
namespace {

std::shared_ptr<const Grammar> grammar_of(const std::string& text) {
  Result<Grammar> g = parse_gbnf(text);
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  return std::make_shared<const Grammar>(g.is_ok() ? std::move(g).value() : Grammar());
}

// A vocabulary with every byte, common multi-byte pieces, pieces that split
// a UTF-8 character, duplicates and empty (special) tokens.
std::vector<std::string> test_vocabulary() {
  std::vector<std::string> v = {"", "<eos>"};
  v[1].clear();  // a special token: no text
  for (int b = 1; b < 256; ++b) v.emplace_back(1, static_cast<char>(b));
  for (const char* piece :
       {"{\"", "\":", "\"",  "\",",   "\"}",  "true",     "false",        "null", "nu",       "ll",  "12",
        "3.5", "e+",  "\\n", "\\u00", "ab",   "abc",      "name",         "age",  " {",       "}\n", "\n",
        "  ",  "[1",  ",2]", "\xC3",  "\xA9", "\xC3\xA9", "\xE4\xB8\xAD", "\xE4", "\xB8\xAD", "abc"}) {
    v.emplace_back(piece);
  }
  return v;
}

const char* kJsonGrammar = R"(root ::= object
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}"
array ::= "[" ws ( value ("," ws value)* )? "]"
string ::= "\"" ( [^"\\\x00-\x1f] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\""
number ::= "-"? ([0-9] | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)?
ws ::= | " " | "\n" [ \t]{0,4}
)";

// The mask, token by token, against feeding each token's text to a fresh
// automaton: the trie walk must allow exactly the tokens that parse.
void expect_mask_matches_brute_force(GrammarMatcher& matcher, const TokenTrie& trie,
                                     std::shared_ptr<const Grammar> grammar, const std::string& prefix) {
  GrammarAutomaton reference(grammar);
  GrammarPosition at = reference.start();
  ASSERT_TRUE(reference.advance(at, prefix)) << prefix;
  const std::span<const uint64_t> mask = matcher.allowed_tokens();
  for (int32_t id = 0; id < trie.vocab_size(); ++id) {
    const bool allowed = (mask[static_cast<size_t>(id) / 64] >> (id % 64)) & 1;
    const std::string& text = trie.token_text(id);
    GrammarPosition after = at;
    const bool parses = !text.empty() && reference.advance(after, text);
    EXPECT_EQ(allowed, parses) << "after '" << prefix << "', token " << id << " '" << text << "'";
  }
}

std::vector<int32_t> allowed_ids(GrammarMatcher& matcher, const TokenTrie& trie) {
  const std::span<const uint64_t> mask = matcher.allowed_tokens();
  std::vector<int32_t> allowed;
  for (int32_t id = 0; id < trie.vocab_size(); ++id)
    if ((mask[static_cast<size_t>(id) / 64] >> (id % 64)) & 1) allowed.push_back(id);
  return allowed;
}

TEST(TokenMaskTest, MaskIsExactlyTheTokensThatParse) {
  auto grammar = grammar_of(kJsonGrammar);
  auto trie = std::make_shared<const TokenTrie>(test_vocabulary());
  GrammarMatcher matcher(grammar, trie);
  std::string prefix;
  // A document fed token by token, the mask checked before each.
  const std::vector<std::string> pieces = {"{\"", "name", "\":", " ",  "\"",  "ab",  "\xC3", "\xA9", "\\u00", "e", "9",
                                           "\",", "\n",   "  ",  "\"", "age", "\":", "3.5",  "e+",   "1",     "}"};
  for (const std::string& piece : pieces) {
    expect_mask_matches_brute_force(matcher, *trie, grammar, prefix);
    ASSERT_TRUE(matcher.accept_text(piece)) << prefix << " + " << piece;
    prefix += piece;
    EXPECT_FALSE(matcher.can_end() && piece != "}") << prefix;
  }
  EXPECT_TRUE(matcher.can_end());
  EXPECT_FALSE(matcher.can_continue());
  expect_mask_matches_brute_force(matcher, *trie, grammar, prefix);
}

TEST(TokenMaskTest, RandomWalksAgreeWithTheAutomaton) {
  auto grammar = grammar_of(kJsonGrammar);
  auto trie = std::make_shared<const TokenTrie>(test_vocabulary());
  std::mt19937 rng(7);
  for (int walk = 0; walk < 20; ++walk) {
    GrammarMatcher matcher(grammar, trie);
    std::string prefix;
    for (int step = 0; step < 40 && matcher.can_continue(); ++step) {
      expect_mask_matches_brute_force(matcher, *trie, grammar, prefix);
      const std::vector<int32_t> allowed = allowed_ids(matcher, *trie);
      ASSERT_FALSE(allowed.empty()) << prefix;
      const int32_t pick = allowed[rng() % allowed.size()];
      ASSERT_TRUE(matcher.accept_token(pick));
      prefix += trie->token_text(pick);
    }
  }
}

// A vocabulary big enough for subtrees the walk allows whole: random
// tokens of letters, JSON punctuation, escapes, whole non-ASCII characters
// and pieces of them (byte-level BPE cuts characters), so some subtrees
// loop inside a string and some hold a quote, an escape or a broken
// character below.
std::vector<std::string> random_vocabulary(uint32_t seed, size_t size) {
  const std::vector<std::string> pieces = {"a",
                                           "b",
                                           "e",
                                           "n",
                                           "x",
                                           "0",
                                           "7",
                                           " ",
                                           "\"",
                                           ",",
                                           ":",
                                           "{",
                                           "}",
                                           "[",
                                           "]",
                                           "\\",
                                           "\n",
                                           "\t",
                                           "u",
                                           "\xC3\xA9",
                                           "\xC3",
                                           "\xA9",
                                           "\xE4\xB8\xAD",
                                           "\xE4",
                                           "\xB8",
                                           "\xF0\x9F\x98\x80",
                                           "\xFF",
                                           "\x01",
                                           "-",
                                           ".",
                                           "ab",
                                           "name"};
  std::mt19937 rng(seed);
  std::vector<std::string> v = {""};  // and a special token
  for (size_t i = 0; i < size; ++i) {
    std::string token;
    const size_t parts = 1 + rng() % 5;
    // Mostly letters, so that big subtrees hold only string characters.
    for (size_t p = 0; p < parts; ++p) token += pieces[rng() % 4 == 0 ? rng() % pieces.size() : rng() % 5];
    v.push_back(token);
  }
  return v;
}

TEST(TokenMaskTest, WholeSubtreeShortcutAgreesWithTheAutomaton) {
  // Strings whose characters loop (JSON), strings that count (a bounded
  // length: no state loops) and a class that takes only some non-ASCII
  // characters (non-ASCII bytes below must not be allowed whole).
  const std::vector<std::string> grammars = {
      kJsonGrammar,
      "root ::= \"{\\\"k\\\": \\\"\" [a-z0-9 ]{0,6} \"\\\"}\"\n",
      "root ::= \"[\" ( \"\\\"\" [a-z\\u00e9 ]* \"\\\"\" ) (\",\" [0-9]+)* \"]\"\n",
  };
  auto trie = std::make_shared<const TokenTrie>(random_vocabulary(11, 3000));
  std::mt19937 rng(5);
  for (const std::string& text : grammars) {
    auto grammar = grammar_of(text);
    for (int walk = 0; walk < 6; ++walk) {
      GrammarMatcher matcher(grammar, trie);
      std::string prefix;
      for (int step = 0; step < 16 && matcher.can_continue(); ++step) {
        expect_mask_matches_brute_force(matcher, *trie, grammar, prefix);
        const std::vector<int32_t> allowed = allowed_ids(matcher, *trie);
        if (allowed.empty()) break;  // the random vocabulary may lack the one closing piece
        // Leave strings now and then: prefer a token with a quote in it.
        std::vector<int32_t> quoting;
        for (int32_t id : allowed)
          if (trie->token_text(id).find('"') != std::string::npos) quoting.push_back(id);
        const std::vector<int32_t>& from = !quoting.empty() && rng() % 3 == 0 ? quoting : allowed;
        const int32_t pick = from[rng() % from.size()];
        ASSERT_TRUE(matcher.accept_token(pick));
        prefix += trie->token_text(pick);
      }
    }
  }
}

TEST(TokenMaskTest, RefusedTokensChangeNothing) {
  auto trie = std::make_shared<const TokenTrie>(test_vocabulary());
  GrammarMatcher matcher(grammar_of("root ::= \"ab\" \"c\"?\n"), trie);
  EXPECT_FALSE(matcher.accept_text("x"));
  EXPECT_FALSE(matcher.accept_token(0));   // no text
  EXPECT_FALSE(matcher.accept_token(-3));  // not a token
  EXPECT_FALSE(matcher.accept_token(1 << 20));
  EXPECT_FALSE(matcher.can_end());
  EXPECT_TRUE(matcher.accept_text("ab"));
  EXPECT_TRUE(matcher.can_end());
  EXPECT_TRUE(matcher.can_continue());
  EXPECT_FALSE(matcher.accept_text("abc"));
  EXPECT_TRUE(matcher.accept_text("c"));
  EXPECT_FALSE(matcher.can_continue());
  const std::span<const uint64_t> mask = matcher.allowed_tokens();
  for (uint64_t word : mask) EXPECT_EQ(word, 0u);
}

TEST(TokenMaskTest, MasksAreCachedPerState) {
  auto trie = std::make_shared<const TokenTrie>(test_vocabulary());
  GrammarMatcher matcher(grammar_of(kJsonGrammar), trie);
  ASSERT_TRUE(matcher.accept_text("{\"a"));
  const std::vector<uint64_t> first(matcher.allowed_tokens().begin(), matcher.allowed_tokens().end());
  ASSERT_TRUE(matcher.accept_text("b"));  // inside the string: the same state
  EXPECT_EQ(matcher.cached_masks(), 1u);
  const std::vector<uint64_t> again(matcher.allowed_tokens().begin(), matcher.allowed_tokens().end());
  EXPECT_EQ(first, again);
  EXPECT_EQ(matcher.cached_masks(), 1u);
}

TEST(TokenMaskTest, TrieKeepsDuplicatesAndSkipsEmptyTokens) {
  const TokenTrie trie({"", "a", "ab", "a", "b", ""});
  GrammarMatcher matcher(grammar_of("root ::= \"a\" \"b\"?\n"), std::make_shared<const TokenTrie>(trie));
  const std::span<const uint64_t> mask = matcher.allowed_tokens();
  EXPECT_EQ(mask[0], 0b001110u);  // both "a"s and "ab"; never the empty ones
}

}  // namespace
}  // namespace omnibus
