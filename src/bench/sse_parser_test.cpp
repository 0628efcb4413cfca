#include "bench/sse_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace omnibus::bench {
namespace {

std::vector<std::string> parse_in_pieces(const std::string& stream, size_t piece) {
  std::vector<std::string> events;
  SseParser p([&](const std::string& d) { events.push_back(d); });
  for (size_t i = 0; i < stream.size(); i += piece) p.feed(std::string_view(stream).substr(i, piece));
  p.finish();
  return events;
}

TEST(SseParser, EventsSurviveAnySplit) {
  const std::string stream =
      ": comment\r\n"
      "data: {\"a\":1}\r\n\r\n"
      "event: message\nid: 7\ndata: line one\ndata: line two\n\n"
      "data:no-space\r\r"
      "data: [DONE]\n\n";
  const std::vector<std::string> expected = {"{\"a\":1}", "line one\nline two", "no-space", "[DONE]"};
  for (size_t piece = 1; piece <= stream.size(); ++piece) {
    EXPECT_EQ(parse_in_pieces(stream, piece), expected) << "piece " << piece;
  }
}

TEST(SseParser, UnterminatedLastEventIsDeliveredAtFinish) {
  EXPECT_EQ(parse_in_pieces("data: x\n\ndata: tail", 4), (std::vector<std::string>{"x", "tail"}));
  EXPECT_TRUE(parse_in_pieces("\n\n\n: only comments\n\n", 3).empty());
}

}  // namespace
}  // namespace omnibus::bench
