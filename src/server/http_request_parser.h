// HttpRequestParser: an incremental, strict HTTP/1.1 request parser. Bytes
// go in as they arrive from the socket (any split); out come whole requests
// or one refusal with its HTTP status. No I/O, no clocks: the connection
// loop owns those.
//
// Strict where leniency has been exploited (request smuggling, header
// injection): a request with both Content-Length and Transfer-Encoding, two
// different Content-Lengths, a transfer coding other than "chunked", a
// folded header line, a control byte in a header value, or whitespace
// before a header's colon is refused with 400 (501 for an unknown coding).
// Lines may end in CRLF or a bare LF, as RFC 9112 allows a recipient to
// accept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace omnibus::server {

struct HttpParseLimits {
  size_t max_head_bytes = 64 << 10;  // request line + headers (+ chunked trailers)
  size_t max_header_lines = 100;
  size_t max_body_bytes = 8 << 20;
};

struct ParsedHttpRequest {
  std::string method;
  std::string target;  // as sent, e.g. "/v1/models/a%20b?x=1"
  std::string path;    // the target before '?', percent-decoded
  std::string query;   // after '?', as sent
  std::string version;  // "HTTP/1.1" or "HTTP/1.0"
  std::vector<std::pair<std::string, std::string>> headers;  // names as sent
  std::string body;     // de-chunked
  bool keep_alive = true;
  bool expect_continue = false;
  bool has_body = false;  // Content-Length > 0 or chunked

  // The first value of a header (names compare case-insensitively); empty
  // when absent.
  std::string_view header(std::string_view name) const;
};

class HttpRequestParser {
 public:
  enum class State { kHead, kBody, kComplete, kError };

  explicit HttpRequestParser(HttpParseLimits limits = {});

  // Consumes a prefix of `bytes` and returns its length. Stops at the end
  // of a request (the rest belongs to the next, pipelined, one) or at an
  // error. Call again with the unconsumed bytes after take().
  size_t feed(std::string_view bytes);

  State state() const { return state_; }
  // Some byte of a request has arrived (blank lines between requests do
  // not count).
  bool started() const { return started_; }
  // The request line and headers are parsed (also in kError, when the
  // refusal came from them as a whole, e.g. a body over the limit).
  bool head_parsed() const { return head_parsed_; }
  const ParsedHttpRequest& head() const { return request_; }
  // In kError: the status to answer (400, 408, 413, 414, 417, 431, 501,
  // 505) and why.
  int error_status() const { return error_status_; }
  const std::string& error_message() const { return error_message_; }

  // Bytes the parser holds for the request in progress (head, body).
  size_t buffered_bytes() const { return head_.size() + request_.body.size() + line_.size(); }

  // In kComplete: the request; the parser is then ready for the next one.
  ParsedHttpRequest take();

 private:
  enum class ChunkStep { kSize, kData, kDataEnd, kTrailer };

  size_t feed_head(std::string_view bytes);
  size_t feed_body(std::string_view bytes);
  size_t feed_chunked(std::string_view bytes);
  void parse_head();
  bool parse_request_line(std::string_view line);
  bool parse_header_line(std::string_view line);
  bool decide_framing();
  // Takes a line from `bytes` into line_ (bounded by `limit` bytes in
  // all); returns the bytes used, and sets `complete` when the line ended.
  size_t take_line(std::string_view bytes, size_t limit, bool& complete);
  void fail(int status, std::string message);

  HttpParseLimits limits_;
  State state_ = State::kHead;
  bool started_ = false;
  bool head_parsed_ = false;
  ParsedHttpRequest request_;
  std::string head_;  // the head's bytes so far
  std::string line_;  // a chunk-size or trailer line being collected
  bool chunked_ = false;
  uint64_t remaining_ = 0;  // body bytes still due (Content-Length or this chunk)
  ChunkStep chunk_step_ = ChunkStep::kSize;
  size_t trailer_bytes_ = 0;
  int error_status_ = 0;
  std::string error_message_;
};

}  // namespace omnibus::server
