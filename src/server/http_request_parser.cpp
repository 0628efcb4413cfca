#include "server/http_request_parser.h"

#include <algorithm>

#include <fmt/format.h>

namespace omnibus::server {
namespace {

constexpr size_t kMaxTargetBytes = 16 << 10;
constexpr size_t kMaxChunkLineBytes = 1024;

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// RFC 9110 tchar: the characters of a method or a header name.
bool is_tchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar); }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Calls `fn` on each element of a comma-separated header value, trimmed;
// empty elements are skipped (RFC 9110 5.6.1).
template <typename Fn>
void for_each_element(std::string_view value, Fn&& fn) {
  while (true) {
    const size_t comma = value.find(',');
    const std::string_view element = trim(value.substr(0, comma));
    if (!element.empty()) fn(element);
    if (comma == std::string_view::npos) return;
    value.remove_prefix(comma + 1);
  }
}

bool has_control_byte(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\t') || u == 0x7f;
  });
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX sequences decoded; a malformed one is kept as sent.
std::string percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

std::string_view ParsedHttpRequest::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (iequals(key, name)) return value;
  }
  return {};
}

HttpRequestParser::HttpRequestParser(HttpParseLimits limits) : limits_(limits) {}

void HttpRequestParser::fail(int status, std::string message) {
  state_ = State::kError;
  error_status_ = status;
  error_message_ = std::move(message);
}

size_t HttpRequestParser::feed(std::string_view bytes) {
  size_t used = 0;
  while (used < bytes.size() && (state_ == State::kHead || state_ == State::kBody)) {
    const std::string_view rest = bytes.substr(used);
    used += state_ == State::kHead ? feed_head(rest) : feed_body(rest);
  }
  // A request with no body completes with its head, even at the end of
  // the bytes.
  return used;
}

size_t HttpRequestParser::feed_head(std::string_view bytes) {
  size_t used = 0;
  if (head_.empty()) {
    // Blank lines before a request line are ignored (RFC 9112 2.2): some
    // clients send a CRLF after a POST body.
    while (used < bytes.size() && (bytes[used] == '\r' || bytes[used] == '\n')) ++used;
    if (used == bytes.size()) return used;
  }
  started_ = true;
  const size_t old = head_.size();
  const size_t room = limits_.max_head_bytes - old;
  const size_t take = std::min(bytes.size() - used, room);
  head_.append(bytes.data() + used, take);
  // The head ends at an empty line: "\n\n" or "\n\r\n". A terminator may
  // straddle the previous feed, so look back two bytes.
  size_t end = 0;
  for (size_t i = old >= 2 ? old - 2 : 0; i < head_.size(); ++i) {
    if (head_[i] != '\n') continue;
    if (i + 1 < head_.size() && head_[i + 1] == '\n') {
      end = i + 2;
      break;
    }
    if (i + 2 < head_.size() && head_[i + 1] == '\r' && head_[i + 2] == '\n') {
      end = i + 3;
      break;
    }
  }
  if (end == 0) {
    if (head_.size() >= limits_.max_head_bytes) {
      const bool line_ended = head_.find('\n') != std::string::npos;
      fail(line_ended ? 431 : 414, line_ended ? fmt::format("the request head is larger than {} bytes",
                                                            limits_.max_head_bytes)
                                              : fmt::format("the request line is longer than {} bytes",
                                                            limits_.max_head_bytes));
    }
    return used + take;
  }
  const size_t consumed = used + (end - old);
  head_.resize(end);
  parse_head();
  return consumed;
}

void HttpRequestParser::parse_head() {
  std::string_view rest(head_);
  bool first = true;
  size_t header_lines = 0;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (first) {
      if (!parse_request_line(line)) return;
      first = false;
      continue;
    }
    if (line.empty()) break;  // the end of the head
    if (++header_lines > limits_.max_header_lines) {
      return fail(431, fmt::format("more than {} header lines", limits_.max_header_lines));
    }
    if (!parse_header_line(line)) return;
  }
  head_parsed_ = true;
  if (!decide_framing()) return;
  state_ = request_.has_body ? State::kBody : State::kComplete;
}

bool HttpRequestParser::parse_request_line(std::string_view line) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    fail(400, "malformed request line (expected: METHOD /path HTTP/1.1)");
    return false;
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!is_token(method)) {
    fail(400, "malformed request method");
    return false;
  }
  if (target.size() > kMaxTargetBytes) {
    fail(414, fmt::format("the request target is longer than {} bytes", kMaxTargetBytes));
    return false;
  }
  std::string_view path_part = target;
  // Absolute form (RFC 9112 3.2.2), as a proxy sends it: the path is what
  // follows the authority.
  for (const std::string_view scheme : {"http://", "https://"}) {
    if (target.size() > scheme.size() && iequals(target.substr(0, scheme.size()), scheme)) {
      const size_t slash = target.find('/', scheme.size());
      path_part = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
    }
  }
  if (method == "OPTIONS" && target == "*") path_part = "*";  // asterisk form
  const bool target_ok = !path_part.empty() && (path_part.front() == '/' || (path_part == "*" && method == "OPTIONS")) &&
                         std::none_of(target.begin(), target.end(), [](char c) {
                           return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f;
                         });
  if (!target_ok) {
    fail(400, "the request target must be a path starting with '/' (or an absolute URL), without spaces or "
              "control bytes");
    return false;
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    const bool looks_http = version.size() == 8 && version.substr(0, 5) == "HTTP/";
    fail(looks_http ? 505 : 400, looks_http ? "only HTTP/1.0 and HTTP/1.1 are supported" : "malformed HTTP version");
    return false;
  }
  request_.method = std::string(method);
  request_.target = std::string(target);
  request_.version = std::string(version);
  const size_t q = path_part.find('?');
  request_.path = percent_decode(path_part.substr(0, q));
  if (q != std::string_view::npos) request_.query = std::string(path_part.substr(q + 1));
  return true;
}

bool HttpRequestParser::parse_header_line(std::string_view line) {
  if (line.front() == ' ' || line.front() == '\t') {
    fail(400, "folded header lines are not accepted");
    return false;
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) {
    fail(400, "malformed header line");
    return false;
  }
  const std::string_view value = trim(line.substr(colon + 1));
  const bool clean = std::none_of(value.begin(), value.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\t') || u == 0x7f;
  });
  if (!clean) {
    fail(400, "a header value holds a control byte");
    return false;
  }
  request_.headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  return true;
}

bool HttpRequestParser::decide_framing() {
  bool has_length = false;
  uint64_t length = 0;
  bool has_coding = false;
  std::string bad_coding;
  size_t codings = 0;
  const bool http10 = request_.version == "HTTP/1.0";
  request_.keep_alive = !http10;
  for (const auto& [name, value] : request_.headers) {
    if (iequals(name, "Content-Length")) {
      bool ok = true;
      for_each_element(value, [&](std::string_view element) {
        if (!std::all_of(element.begin(), element.end(), [](char c) { return c >= '0' && c <= '9'; })) {
          ok = false;
          return;
        }
        // More than 19 digits: too large for any limit (saturated, not wrapped).
        uint64_t n = element.size() > 19 ? UINT64_MAX : 0;
        if (element.size() <= 19) {
          for (char c : element) n = n * 10 + static_cast<uint64_t>(c - '0');
        }
        if (has_length && n != length) ok = false;
        has_length = true;
        length = n;
      });
      if (!ok || !has_length || trim(value).empty()) {
        fail(400, "malformed or conflicting Content-Length");
        return false;
      }
    } else if (iequals(name, "Transfer-Encoding")) {
      has_coding = true;
      for_each_element(value, [&](std::string_view element) {
        ++codings;
        if (!iequals(element, "chunked") && bad_coding.empty()) bad_coding = std::string(element);
      });
    } else if (iequals(name, "Connection")) {
      for_each_element(value, [&](std::string_view element) {
        if (iequals(element, "close")) request_.keep_alive = false;
        if (iequals(element, "keep-alive") && http10) request_.keep_alive = true;
      });
    } else if (iequals(name, "Expect")) {
      if (!iequals(trim(value), "100-continue")) {
        fail(417, "only 'Expect: 100-continue' is supported");
        return false;
      }
      request_.expect_continue = !http10;
    }
  }
  if (has_coding && has_length) {
    fail(400, "a request may not have both Content-Length and Transfer-Encoding");
    return false;
  }
  if (has_coding && http10) {
    // RFC 9112 6.1: a 1.0 message with Transfer-Encoding is faulty framing.
    fail(400, "HTTP/1.0 requests may not use Transfer-Encoding");
    return false;
  }
  if (has_coding) {
    if (!bad_coding.empty() || codings != 1) {
      fail(501, bad_coding.empty() ? "only one 'chunked' transfer coding is supported"
                                   : fmt::format("transfer coding '{}' is not supported", bad_coding.substr(0, 40)));
      return false;
    }
    chunked_ = true;
    chunk_step_ = ChunkStep::kSize;
    request_.has_body = true;
    return true;
  }
  if (length > limits_.max_body_bytes) {
    fail(413, fmt::format("the request body is larger than the limit of {} bytes", limits_.max_body_bytes));
    return false;
  }
  remaining_ = length;
  // No reserve(length): an announced length costs memory only as it arrives.
  request_.has_body = length > 0;
  return true;
}

size_t HttpRequestParser::feed_body(std::string_view bytes) {
  if (chunked_) return feed_chunked(bytes);
  const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, bytes.size()));
  request_.body.append(bytes.data(), take);
  remaining_ -= take;
  if (remaining_ == 0) state_ = State::kComplete;
  return take;
}

size_t HttpRequestParser::take_line(std::string_view bytes, size_t limit, bool& complete) {
  const size_t nl = bytes.find('\n');
  complete = nl != std::string_view::npos;
  const size_t take = complete ? nl : bytes.size();
  // Bound the line as it grows (a line without end must not grow forever).
  line_.append(bytes.data(), std::min(take, limit + 2 - std::min(line_.size(), limit + 2)));
  if (complete && !line_.empty() && line_.back() == '\r') line_.pop_back();
  return complete ? nl + 1 : take;
}

size_t HttpRequestParser::feed_chunked(std::string_view bytes) {
  bool complete = false;
  switch (chunk_step_) {
    case ChunkStep::kSize: {
      const size_t used = take_line(bytes, kMaxChunkLineBytes, complete);
      if (line_.size() > kMaxChunkLineBytes) {
        fail(400, "malformed chunked body (chunk size line too long)");
        return used;
      }
      if (!complete) return used;
      if (has_control_byte(line_)) {
        fail(400, "malformed chunked body (a control byte in a chunk line)");
        return used;
      }
      uint64_t size = 0;
      size_t digits = 0;
      while (digits < line_.size() && line_[digits] == '0') ++digits;  // leading zeros say nothing
      const size_t first_significant = digits;
      while (digits < line_.size() && hex_value(line_[digits]) >= 0) {
        if (digits - first_significant == 15) {
          fail(413, fmt::format("the request body is larger than the limit of {} bytes", limits_.max_body_bytes));
          return used;
        }
        size = size * 16 + static_cast<uint64_t>(hex_value(line_[digits]));
        ++digits;
      }
      const std::string_view after = trim(std::string_view(line_).substr(digits));
      if (digits == 0 || (!after.empty() && after.front() != ';')) {
        fail(400, "malformed chunked body (bad chunk size)");
        return used;
      }
      line_.clear();
      if (size == 0) {
        chunk_step_ = ChunkStep::kTrailer;
      } else if (request_.body.size() + size > limits_.max_body_bytes) {
        fail(413, fmt::format("the request body is larger than the limit of {} bytes", limits_.max_body_bytes));
      } else {
        remaining_ = size;
        chunk_step_ = ChunkStep::kData;
      }
      return used;
    }
    case ChunkStep::kData: {
      const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, bytes.size()));
      request_.body.append(bytes.data(), take);
      remaining_ -= take;
      if (remaining_ == 0) chunk_step_ = ChunkStep::kDataEnd;
      return take;
    }
    case ChunkStep::kDataEnd: {
      const size_t used = take_line(bytes, 2, complete);
      if (complete ? !line_.empty() : (line_.size() > 1 || (line_.size() == 1 && line_[0] != '\r'))) {
        fail(400, "malformed chunked body (no line end after a chunk)");
        return used;
      }
      if (complete) chunk_step_ = ChunkStep::kSize;
      return used;
    }
    case ChunkStep::kTrailer: {
      const size_t used = take_line(bytes, limits_.max_head_bytes, complete);
      trailer_bytes_ += used;
      if (trailer_bytes_ > limits_.max_head_bytes) {
        fail(431, "the chunked body's trailers are too large");
        return used;
      }
      if (!complete) return used;
      // Trailers are dropped, but held to the rules of header lines.
      if (!line_.empty() && (line_.front() == ' ' || line_.front() == '\t' || has_control_byte(line_) ||
                             line_.find(':') == std::string::npos)) {
        fail(400, "malformed chunked body (a bad trailer line)");
        return used;
      }
      const bool end = line_.empty();
      line_.clear();
      if (end) state_ = State::kComplete;
      return used;
    }
  }
  return 0;
}

ParsedHttpRequest HttpRequestParser::take() {
  ParsedHttpRequest out = std::move(request_);
  request_ = ParsedHttpRequest{};
  state_ = State::kHead;
  started_ = false;
  head_parsed_ = false;
  head_.clear();
  line_.clear();
  chunked_ = false;
  remaining_ = 0;
  chunk_step_ = ChunkStep::kSize;
  trailer_bytes_ = 0;
  return out;
}

}  // namespace omnibus::server
