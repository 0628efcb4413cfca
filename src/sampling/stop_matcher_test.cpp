#include "sampling/stop_matcher.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace omnibus {
namespace {

// Feeds the pieces in order; returns everything emitted (plus finish() if no
// stop hit) and whether a stop string hit.
std::pair<std::string, bool> run(StopMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const std::string& p : pieces) {
    StopMatcher::Step step = m.feed(p);
    out += step.text;
    if (step.stopped) return {out, true};
  }
  return {out + m.finish(), false};
}

TEST(StopMatcherTest, StopSplitAcrossThreePieces) {
  StopMatcher m({"<|end|>"});
  EXPECT_EQ(m.feed("Hello <|").text, "Hello ");
  EXPECT_EQ(m.held_bytes(), 2u);
  StopMatcher::Step s = m.feed("en");
  EXPECT_EQ(s.text, "");
  EXPECT_FALSE(s.stopped);
  s = m.feed("d|> trailing");
  EXPECT_EQ(s.text, "");
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(m.matched_stop(), "<|end|>");
  EXPECT_TRUE(m.feed("more").stopped);
  EXPECT_EQ(m.finish(), "");
}

TEST(StopMatcherTest, PartialMatchThatIsNotAStopIsEmitted) {
  StopMatcher n({"STOP"});
  EXPECT_EQ(n.feed("a ST").text, "a ");
  EXPECT_EQ(n.feed("OR").text, "STOR");  // not a stop after all
  EXPECT_EQ(n.feed("Y S").text, "Y ");
  EXPECT_EQ(n.finish(), "S");  // held tail is flushed at the end
}

TEST(StopMatcherTest, TextBeforeStopInSamePieceIsEmitted) {
  StopMatcher m({"\n\n"});
  auto [text, stopped] = run(m, {"line one\n", "\nline two"});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(text, "line one");
}

TEST(StopMatcherTest, MultipleStopStringsFirstToCompleteWins) {
  StopMatcher a({"abcd", "bc"});
  auto [text_a, stopped_a] = run(a, {"xabcd"});
  EXPECT_TRUE(stopped_a);
  EXPECT_EQ(text_a, "xa");  // "bc" completes before "abcd"
  EXPECT_EQ(a.matched_stop(), "bc");
  // Same answer fed one byte at a time.
  StopMatcher b({"abcd", "bc"});
  auto [text_b, stopped_b] = run(b, {"x", "a", "b", "c", "d"});
  EXPECT_TRUE(stopped_b);
  EXPECT_EQ(text_b, "xa");
  StopMatcher c({"world", "lo w"});
  auto [text_c, stopped_c] = run(c, {"hel", "lo wor", "ld"});
  EXPECT_TRUE(stopped_c);
  EXPECT_EQ(text_c, "hel");
  EXPECT_EQ(c.matched_stop(), "lo w");
}

TEST(StopMatcherTest, StopAtVeryStart) {
  StopMatcher m({"User:"});
  auto [text, stopped] = run(m, {"Us", "er: hi"});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(text, "");
}

TEST(StopMatcherTest, NoStopsPassesEverythingThrough) {
  StopMatcher m({"", ""});
  EXPECT_EQ(m.feed("abc").text, "abc");
  EXPECT_EQ(m.held_bytes(), 0u);
  EXPECT_EQ(m.finish(), "");
}

TEST(StopMatcherTest, HoldsIncompleteUtf8UntilCharacterCompletes) {
  StopMatcher m({});
  // "é" is C3 A9; "€" is E2 82 AC; split inside each.
  EXPECT_EQ(m.feed("caf\xC3").text, "caf");
  EXPECT_EQ(m.feed("\xA9 \xE2\x82").text, "\xC3\xA9 ");
  EXPECT_EQ(m.feed("\xAC!").text, "\xE2\x82\xAC!");
  EXPECT_EQ(incomplete_utf8_tail("ok"), 0u);
  EXPECT_EQ(incomplete_utf8_tail("\xF0\x9F\x98"), 3u);
  EXPECT_EQ(incomplete_utf8_tail("\xF0\x9F\x98\x80"), 0u);
  EXPECT_EQ(incomplete_utf8_tail("\x80\x80"), 0u);  // stray continuation: not ours to fix
}

TEST(StopMatcherTest, MultiByteStopStringSplitInsideCharacter) {
  StopMatcher m({"→END"});  // E2 86 92 'E' 'N' 'D'
  EXPECT_EQ(m.feed("x \xE2").text, "x ");
  EXPECT_EQ(m.feed("\x86\x92").text, "");
  EXPECT_EQ(m.feed("EN").text, "");
  EXPECT_EQ(m.feed("X").text, "→ENX");
  EXPECT_EQ(m.feed("→").text, "");
  StopMatcher::Step s = m.feed("END");
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.text, "");
}

TEST(StopMatcherTest, FinishFlushesHeldTextIncludingPartialUtf8) {
  StopMatcher m({"###"});
  EXPECT_EQ(m.feed("a ##").text, "a ");
  EXPECT_EQ(m.finish(), "##");
  StopMatcher n({"###"});
  EXPECT_EQ(n.feed("z\xC3").text, "z");
  EXPECT_EQ(n.finish(), "\xC3");
}

}  // namespace
}  // namespace omnibus
