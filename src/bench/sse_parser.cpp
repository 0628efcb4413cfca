#include "bench/sse_parser.h"

namespace omnibus::bench {

void SseParser::feed(std::string_view bytes) {
  for (char c : bytes) {
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') continue;  // the LF of a CRLF
    }
    if (c == '\r' || c == '\n') {
      after_cr_ = c == '\r';
      line(pending_);
      pending_.clear();
    } else {
      pending_ += c;
    }
  }
}

void SseParser::finish() {
  if (!pending_.empty()) line(pending_);
  pending_.clear();
  dispatch();
}

void SseParser::line(std::string_view text) {
  if (text.empty()) {
    dispatch();
    return;
  }
  if (text.front() == ':') return;  // comment
  const size_t colon = text.find(':');
  const std::string_view field = text.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view{} : text.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field != "data") return;
  if (has_data_) data_ += '\n';
  data_ += value;
  has_data_ = true;
}

void SseParser::dispatch() {
  if (!has_data_) return;
  std::string data = std::move(data_);
  data_.clear();
  has_data_ = false;
  on_data_(data);
}

}  // namespace omnibus::bench
