// Server-sent events, incrementally: bytes in as they arrive from the
// socket (split anywhere), each complete event's `data:` payload out.
// Multi-line data joins with '\n'; comments (":...") and other fields
// (event:, id:, retry:) are skipped. LF, CRLF and CR line ends all work.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace omnibus::bench {

class SseParser {
 public:
  using OnData = std::function<void(const std::string& data)>;
  explicit SseParser(OnData on_data) : on_data_(std::move(on_data)) {}

  void feed(std::string_view bytes);
  // At end of stream: delivers an event the server did not end with a blank line.
  void finish();

 private:
  void line(std::string_view text);
  void dispatch();

  OnData on_data_;
  std::string pending_;  // a line not yet ended
  bool after_cr_ = false;  // the last byte was '\r' (a following '\n' belongs to it)
  std::string data_;
  bool has_data_ = false;
};

}  // namespace omnibus::bench
