#include "server/harmony_splitter.h"

#include <gtest/gtest.h>

#include <string>

#include "server/splitter_test_util.h"

namespace omnibus::server {
namespace {

void expect_split(std::string_view text, std::string_view reasoning, std::string_view content) {
  testing::expect_split_everywhere([] { return HarmonySplitter(); }, text, reasoning, content);
}

TEST(HarmonySplitterTest, AnalysisThenFinal) {
  expect_split(
      "<|channel|>analysis<|message|>User greets. Reply.<|end|><|start|>assistant<|channel|>final"
      "<|message|>Hello! How can I help?",
      "User greets. Reply.", "Hello! How can I help?");
}

TEST(HarmonySplitterTest, FinalOnlyIsAllContent) { expect_split("<|channel|>final<|message|>4", "", "4"); }

TEST(HarmonySplitterTest, SeveralAnalysisMessagesAndCommentary) {
  // Thoughts in two messages; a commentary message (a preamble) is content.
  expect_split(
      "<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>analysis<|message|>b<|end|>"
      "<|start|>assistant<|channel|>commentary<|message|>c<|end|><|start|>assistant<|channel|>final"
      "<|message|>d",
      "ab", "cd");
}

TEST(HarmonySplitterTest, TextLikeAMarkerStaysInTheBody) {
  expect_split("<|channel|>analysis<|message|>x <| y <|en z<|end|><|start|>assistant<|channel|>final<|message|>1<2",
               "x <| y <|en z", "1<2");
}

TEST(HarmonySplitterTest, PlainTextIsContent) {
  // The model left the format: no header at all.
  expect_split("Hello there", "", "Hello there");
  expect_split("<b>bold</b>", "", "<b>bold</b>");
  // A "header" far longer than any real one.
  const std::string runaway = "<|" + std::string(300, 'x');
  expect_split(runaway, "", runaway);
}

TEST(HarmonySplitterTest, CutOffAnswers) {
  // Cut off while thinking: what came is thought; cut off inside a header:
  // the markup is dropped.
  expect_split("<|channel|>analysis<|message|>still thinking", "still thinking", "");
  expect_split("<|channel|>analysis<|message|>done<|end|><|start|>assistant<|chan", "done", "");
  expect_split("", "", "");
}

}  // namespace
}  // namespace omnibus::server
