#include "server/reasoning_splitter.h"

#include <gtest/gtest.h>

#include <string>

#include "server/splitter_test_util.h"

namespace omnibus::server {
namespace {

ReasoningPiece split_whole(std::string_view text) {
  ReasoningSplitter s;
  ReasoningPiece out = s.feed(text);
  ReasoningPiece rest = s.finish();
  out.reasoning += rest.reasoning;
  out.content += rest.content;
  return out;
}

// The same answer whole, cut in two at every byte, then one byte at a
// time: a tag or the newlines around it may straddle any boundary.
void expect_split(std::string_view text, std::string_view reasoning, std::string_view content) {
  const ReasoningPiece whole = split_whole(text);
  EXPECT_EQ(whole.reasoning, reasoning) << text;
  EXPECT_EQ(whole.content, content) << text;
  testing::expect_split_everywhere([] { return ReasoningSplitter(); }, text, reasoning, content);
}

TEST(ReasoningSplitterTest, ThinkBlockThenAnswer) {
  expect_split("<think>\nadd them\n</think>\n\n4", "add them", "4");
  expect_split("<think>\n\n</think>\n\nHi", "", "Hi");
  expect_split("  \n<think>x</think>y", "x", "y");
  expect_split("<think>\nline one\n\nline two\n</think>\n\nanswer\n\nmore", "line one\n\nline two", "answer\n\nmore");
}

TEST(ReasoningSplitterTest, NoThinkBlockIsAllContent) {
  expect_split("plain answer", "", "plain answer");
  expect_split("  indented", "", "  indented");
  expect_split("<thi", "", "<thi");
  expect_split("x<think>y</think>z", "", "x<think>y</think>z");
  expect_split("", "", "");
}

TEST(ReasoningSplitterTest, CutOffWhileThinkingIsAllThought) {
  expect_split("<think>\nstill going", "still going", "");
  expect_split("<think>\nends on a partial tag </thi", "ends on a partial tag </thi", "");
}

TEST(ReasoningSplitterTest, LookalikeTagsStayInTheThought) {
  expect_split("<think>a</thinking>b</think>c", "a</thinking>b", "c");
  expect_split("<think>a <think> b</think>\nc", "a <think> b", "c");
}

// A thinking-only model's prompt opened the block: the answer starts inside it.
TEST(ReasoningSplitterTest, PromptThatOpenedTheThought) {
  for (size_t cut = 0; cut <= 30; ++cut) {
    const std::string text = "weigh it\n</think>\n\nIt is 4.";
    ReasoningSplitter s(/*in_thought=*/true);
    ReasoningPiece a = s.feed(std::string_view(text).substr(0, std::min(cut, text.size())));
    ReasoningPiece b = s.feed(std::string_view(text).substr(std::min(cut, text.size())));
    ReasoningPiece c = s.finish();
    EXPECT_EQ(a.reasoning + b.reasoning + c.reasoning, "weigh it") << cut;
    EXPECT_EQ(a.content + b.content + c.content, "It is 4.") << cut;
  }
}

TEST(ReasoningSplitterTest, PiecesComeOutAsSoonAsTheyAreKnown) {
  ReasoningSplitter s;
  EXPECT_EQ(s.feed("<thi").reasoning, "");
  EXPECT_EQ(s.feed("nk>\nab").reasoning, "ab");
  EXPECT_EQ(s.feed("c\n").reasoning, "c");  // the newline may be the block's last: held
  EXPECT_EQ(s.feed("d</").reasoning, "\nd");
  ReasoningPiece p = s.feed("think>\n\nThe answer");
  EXPECT_EQ(p.reasoning, "");
  EXPECT_EQ(p.content, "The answer");
  EXPECT_EQ(s.feed(" is 4").content, " is 4");
}

}  // namespace
}  // namespace omnibus::server
