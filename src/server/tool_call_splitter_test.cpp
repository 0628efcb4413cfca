#include "server/tool_call_splitter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace omnibus::server {
namespace {

ToolCallSplitter make() { return ToolCallSplitter({"get_weather", "now"}, 42); }

struct Split {
  std::string content;
  std::vector<ToolCall> calls;
};

void add(Split& to, ToolCallPiece piece) {
  // A piece's content comes before its calls: content after a call never
  // shares its piece (except in finish()).
  to.content += piece.content;
  for (ToolCall& c : piece.calls) to.calls.push_back(std::move(c));
}

std::string names(const std::vector<ToolCall>& calls) {
  std::string out;
  for (const ToolCall& c : calls) out += c.name + c.arguments + ";";
  return out;
}

// The same answer whole, cut in two at every byte, and one byte at a time
// must give the same content and calls (a tag may straddle any boundary).
void expect_split(std::string_view text, std::string_view content, std::string_view calls) {
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    ToolCallSplitter s = make();
    Split out;
    add(out, s.feed(text.substr(0, cut)));
    add(out, s.feed(text.substr(cut)));
    add(out, s.finish());
    EXPECT_EQ(out.content, content) << text << " cut at " << cut;
    EXPECT_EQ(names(out.calls), calls) << text << " cut at " << cut;
  }
  ToolCallSplitter s = make();
  Split out;
  for (char ch : text) add(out, s.feed(std::string_view(&ch, 1)));
  add(out, s.finish());
  EXPECT_EQ(out.content, content) << text << " byte by byte";
  EXPECT_EQ(names(out.calls), calls) << text << " byte by byte";
}

TEST(ToolCallSplitterTest, PlainTextIsContent) {
  expect_split("Hello there", "Hello there", "");
  expect_split("a < b and <tool", "a < b and <tool", "");
  expect_split("ends with space \n", "ends with space \n", "");
  expect_split("", "", "");
}

TEST(ToolCallSplitterTest, CallsBecomeToolCalls) {
  expect_split(
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>", "",
      "get_weather{\"city\":\"Paris\",\"days\":2};");
  expect_split(
      "Let me check.\n<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
      "Let me check.", "now{};get_weather{\"city\":\"Oslo\"};");
  expect_split("<tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call>\n\nDone.", "Done.", "now{};");
}

TEST(ToolCallSplitterTest, MalformedOrCutOffCallsStayContent) {
  expect_split("x <tool_call>\nnot json\n</tool_call> y", "x <tool_call>\nnot json\n</tool_call> y", "");
  expect_split("<tool_call>{\"name\": \"unknown\", \"arguments\": {}}</tool_call>",
               "<tool_call>{\"name\": \"unknown\", \"arguments\": {}}</tool_call>", "");
  expect_split("<tool_call>{\"name\": \"now\", \"arguments\": \"{}\"}</tool_call>",
               "<tool_call>{\"name\": \"now\", \"arguments\": \"{}\"}</tool_call>", "");
  expect_split("ok\n<tool_call>\n{\"name\": \"now\", \"argu", "ok\n<tool_call>\n{\"name\": \"now\", \"argu", "");
  // Nested past the parser's depth limit: refused, not a crash.
  const std::string deep = "<tool_call>" + std::string(100, '[') + std::string(100, ']') + "</tool_call>";
  expect_split(deep, deep, "");
}

// A long call or a long run of whitespace fed a byte at a time is not
// rescanned from its start on every byte (this would take minutes).
TEST(ToolCallSplitterTest, LongAnswersFedByteByByteStayLinear) {
  const std::string city(200000, 'x');
  const std::string text = std::string(100000, '\n') +
                           "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"" + city +
                           "\"}}</tool_call>";
  ToolCallSplitter s = make();
  Split out;
  for (char ch : text) add(out, s.feed(std::string_view(&ch, 1)));
  add(out, s.finish());
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].arguments, "{\"city\":\"" + city + "\"}");
  // Whitespace beyond what is held back before a call stays content.
  EXPECT_EQ(out.content, std::string(100000 - 256, '\n'));
}

TEST(ToolCallSplitterTest, IdsAreUniqueAndShaped) {
  ToolCallSplitter s = make();
  Split out;
  add(out, s.feed("<tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"now\", "
                  "\"arguments\": {}}</tool_call>"));
  add(out, s.finish());
  ASSERT_EQ(out.calls.size(), 2u);
  EXPECT_EQ(s.calls_made(), 2);
  EXPECT_NE(out.calls[0].id, out.calls[1].id);
  for (const ToolCall& c : out.calls) {
    EXPECT_EQ(c.id.size(), 29u);
    EXPECT_EQ(c.id.rfind("call_", 0), 0u);
  }
}

TEST(ToolCallSplitterTest, ContentAfterACallWaitsForTheNextPiece) {
  ToolCallSplitter s = make();
  ToolCallPiece first = s.feed("<tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call> after");
  EXPECT_EQ(first.content, "");
  ASSERT_EQ(first.calls.size(), 1u);
  ToolCallPiece second = s.feed("");
  EXPECT_EQ(second.content, "after");
  EXPECT_TRUE(second.calls.empty());
}

}  // namespace
}  // namespace omnibus::server
