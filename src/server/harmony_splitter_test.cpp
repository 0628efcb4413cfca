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
  // The model left the format: no header at all, even with a marker later.
  expect_split("Hello there", "", "Hello there");
  expect_split("<b>bold</b>", "", "<b>bold</b>");
  expect_split("Hi<|message|>x", "", "Hi<|message|>x");
  // A "header" far longer than any real one, with or without a <|message|>
  // past the limit (or straddling it).
  const std::string runaway = "<|" + std::string(300, 'x');
  expect_split(runaway, "", runaway);
  for (const size_t length : {250, 252, 255, 256, 257, 258, 262, 300}) {
    const std::string text = "<|channel|>final" + std::string(length - 16, ' ') + "<|message|>x";
    const bool header = length <= 256;
    expect_split(text, "", header ? "x" : text);
  }
}

TEST(HarmonySplitterTest, AMessageOpenedWithoutEndClosesTheLastOne) {
  // The model forgot <|end|>: the next <|start|> still begins a message.
  expect_split("<|channel|>analysis<|message|>think<|start|>assistant<|channel|>final<|message|>answer", "think",
               "answer");
  expect_split("<|channel|>analysis<|message|>a <|sta b<|start|>assistant<|channel|>final<|message|>c", "a <|sta b",
               "c");
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
