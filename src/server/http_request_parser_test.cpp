#include "server/http_request_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace omnibus::server {
namespace {

using State = HttpRequestParser::State;

// Feeds `bytes` in pieces of `piece` bytes; returns the requests completed
// and leaves the parser's final state in `parser`.
std::vector<ParsedHttpRequest> feed_all(HttpRequestParser& parser, const std::string& bytes, size_t piece) {
  std::vector<ParsedHttpRequest> out;
  size_t pos = 0;
  while (pos < bytes.size() && parser.state() != State::kError) {
    std::string_view chunk = std::string_view(bytes).substr(pos, std::min(piece, bytes.size() - pos));
    while (!chunk.empty() && parser.state() != State::kError) {
      const size_t used = parser.feed(chunk);
      chunk.remove_prefix(used);
      pos += used;
      if (parser.state() == State::kComplete) out.push_back(parser.take());
      else if (used == 0 && parser.state() != State::kError) ADD_FAILURE() << "no progress at " << pos;
    }
  }
  return out;
}

ParsedHttpRequest parse_one(const std::string& bytes, HttpParseLimits limits = {}) {
  HttpRequestParser parser(limits);
  std::vector<ParsedHttpRequest> got = feed_all(parser, bytes, bytes.size());
  EXPECT_EQ(got.size(), 1u) << bytes;
  return got.empty() ? ParsedHttpRequest{} : got.front();
}

// The status a request is refused with (0: not refused).
int refusal(const std::string& bytes, HttpParseLimits limits = {}) {
  HttpRequestParser parser(limits);
  feed_all(parser, bytes, bytes.size());
  return parser.state() == State::kError ? parser.error_status() : 0;
}

TEST(HttpRequestParser, GetWithHeadersAndKeepAliveRules) {
  ParsedHttpRequest r = parse_one("GET /v1/models?x=1 HTTP/1.1\r\nHost: a\r\nX-Thing:  spaced value \t\r\n\r\n");
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.path, "/v1/models");
  EXPECT_EQ(r.query, "x=1");
  EXPECT_EQ(r.target, "/v1/models?x=1");
  EXPECT_EQ(r.header("x-thing"), "spaced value");
  EXPECT_EQ(r.header("absent"), "");
  EXPECT_TRUE(r.keep_alive);
  EXPECT_FALSE(r.has_body);
  EXPECT_FALSE(parse_one("GET / HTTP/1.1\r\nConnection: close\r\n\r\n").keep_alive);
  EXPECT_FALSE(parse_one("GET / HTTP/1.0\r\n\r\n").keep_alive);
  EXPECT_TRUE(parse_one("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keep_alive);
  // Bare LF line ends are accepted.
  EXPECT_EQ(parse_one("GET /health HTTP/1.1\nHost: a\n\n").path, "/health");
}

TEST(HttpRequestParser, PathIsPercentDecodedOnce) {
  EXPECT_EQ(parse_one("GET /v1/models/a%20b%2Fc HTTP/1.1\r\n\r\n").path, "/v1/models/a b/c");
  EXPECT_EQ(parse_one("GET /x%0d%0aforged HTTP/1.1\r\n\r\n").path, "/x\r\nforged");
  EXPECT_EQ(parse_one("GET /bad%zz%4 HTTP/1.1\r\n\r\n").path, "/bad%zz%4");
}

TEST(HttpRequestParser, ContentLengthBodyAtEverySplit) {
  const std::string body = R"({"prompt":"hi","max_tokens":3})";
  const std::string request = "POST /v1/completions HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) +
                              "\r\nExpect: 100-continue\r\n\r\n" + body;
  for (size_t piece = 1; piece <= request.size(); ++piece) {
    HttpRequestParser parser;
    std::vector<ParsedHttpRequest> got = feed_all(parser, request, piece);
    ASSERT_EQ(got.size(), 1u) << piece;
    EXPECT_EQ(got[0].body, body);
    EXPECT_TRUE(got[0].expect_continue);
    EXPECT_FALSE(parser.started());
  }
}

TEST(HttpRequestParser, ChunkedBodyWithExtensionsAndTrailersAtEverySplit) {
  const std::string request =
      "POST /tokenize HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;name=value\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n";
  for (size_t piece = 1; piece <= request.size(); ++piece) {
    HttpRequestParser parser;
    std::vector<ParsedHttpRequest> got = feed_all(parser, request, piece);
    ASSERT_EQ(got.size(), 1u) << piece;
    EXPECT_EQ(got[0].body, "hello 0123456789");
  }
}

TEST(HttpRequestParser, PipelinedRequestsAndBlankLinesBetween) {
  HttpRequestParser parser;
  const std::string two =
      "POST /a HTTP/1.1\r\nContent-Length: 2\r\n\r\nok\r\nGET /b HTTP/1.1\r\n\r\nGET /c HTTP/1.1\r\n";
  std::vector<ParsedHttpRequest> got = feed_all(parser, two, two.size());
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].body, "ok");
  EXPECT_EQ(got[1].path, "/b");
  EXPECT_TRUE(parser.started());  // /c's head is not complete
  EXPECT_EQ(parser.state(), State::kHead);
  HttpRequestParser blank;
  feed_all(blank, "\r\n\r\n", 4);
  EXPECT_FALSE(blank.started());
}

TEST(HttpRequestParser, AmbiguousFramingIsRefused) {
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd"), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: 3, 4\r\n\r\nabcd"), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: +3\r\n\r\nabc"), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: 0x3\r\n\r\nabc"), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length:\r\n\r\n"), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length:\r\n\r\nab"), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), 501);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n"), 501);
  // The same length twice is one length.
  EXPECT_EQ(parse_one("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc").body, "abc");
}

TEST(HttpRequestParser, MalformedHeadsAreRefused) {
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nX: a\r\n folded\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nX : a\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nNoColon\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nX: a\rb\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nX: a\x01z\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/2.0\r\n\r\n"), 505);
  EXPECT_EQ(refusal("GET / HTTQ/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET  / HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET ftp://a/ HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(parse_one("GET http://a.example:8080/v1/models?x HTTP/1.1\r\n\r\n").path, "/v1/models");
  EXPECT_EQ(parse_one("GET HTTP://a.example HTTP/1.1\r\n\r\n").path, "/");
  EXPECT_EQ(parse_one("OPTIONS * HTTP/1.1\r\n\r\n").path, "*");
  EXPECT_EQ(refusal("GET * HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refusal("G(T / HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nExpect: 200-ok\r\n\r\n"), 417);
  EXPECT_EQ(refusal(std::string("GET /\0 HTTP/1.1\r\n\r\n", 20)), 400);
}

TEST(HttpRequestParser, LimitsAreEnforced) {
  HttpParseLimits small;
  small.max_head_bytes = 256;
  small.max_header_lines = 4;
  small.max_body_bytes = 10;
  EXPECT_EQ(refusal("GET /" + std::string(300, 'a'), small), 414);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nX: " + std::string(300, 'a'), small), 431);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\na: 1\r\nb: 1\r\nc: 1\r\nd: 1\r\ne: 1\r\n\r\n", small), 431);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n", small), 413);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", small), 413);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n5\r\nabcde\r\n", small),
            413);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n", small), 413);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(2000, '1'), small), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n", small), 400);
  EXPECT_EQ(refusal(std::string("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1;a\0b\r\nx\r\n", 57), small), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: a\x01\r\n\r\n", small), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n folded\r\n\r\n", small), 400);
  EXPECT_EQ(parse_one("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n00000000000000002\r\nab\r\n0\r\n\r\n",
                      small).body, "ab");
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n", small), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" + std::string(300, 'x'), small),
            431);
  // Within the limits: fine, and the error message names the limit.
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789", small), 0);
  HttpRequestParser parser(small);
  feed_all(parser, "POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n", 100);
  EXPECT_NE(parser.error_message().find("10 bytes"), std::string::npos) << parser.error_message();
  EXPECT_TRUE(parser.head_parsed());
}

}  // namespace
}  // namespace omnibus::server
