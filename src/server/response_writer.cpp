#include "server/response_writer.h"

#include <poll.h>
#include <sys/socket.h>

#include <cctype>
#include <cerrno>
#include <string>

#include <fmt/format.h>

namespace omnibus::server {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

// Header values come from our handlers, but a byte below 0x20 in one
// would split the header; make it a space.
std::string header_safe(std::string_view value) {
  std::string out(value);
  for (char& c : out) {
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) c = ' ';
  }
  return out;
}

}  // namespace

const char* reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

bool SocketWriter::write(std::string_view bytes) {
  while (!failed_ && !bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      const int ready = ::poll(&p, 1, static_cast<int>(stall_timeout_.count()));
      if (ready > 0 && (p.revents & POLLOUT)) continue;
      if (ready < 0 && errno == EINTR) continue;
    }
    failed_ = true;  // gone (EPIPE, ECONNRESET, POLLERR) or stalled
  }
  return !failed_;
}

std::optional<size_t> send_without_waiting(int fd, std::string_view bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      break;
    } else {
      return std::nullopt;
    }
  }
  return sent;
}

std::optional<size_t> SocketWriter::write_now(std::string_view bytes) {
  if (failed_) return std::nullopt;
  const std::optional<size_t> sent = send_without_waiting(fd_, bytes);
  failed_ = !sent.has_value();
  return sent;
}

bool SocketWriter::alive() {
  if (failed_) return false;
  pollfd p{fd_, 0, 0};  // POLLERR and POLLHUP are reported whatever is asked
  if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL))) failed_ = true;
  return !failed_;
}

std::string response_head(const httplib::Response& res, bool chunked, bool& keep_alive) {
  const int status = res.status < 0 ? 200 : res.status;
  std::string head = fmt::format("HTTP/1.1 {} {}\r\n", status, reason_phrase(status));
  for (const auto& [name, value] : res.headers) {
    if (iequals(name, "Connection")) {
      if (iequals(value, "close")) keep_alive = false;
      continue;
    }
    if (iequals(name, "Content-Length") || iequals(name, "Transfer-Encoding")) continue;
    head += fmt::format("{}: {}\r\n", name, header_safe(value));
  }
  // A 204 (a CORS preflight's answer) has no body and must not say its length.
  if (chunked) {
    head += "Transfer-Encoding: chunked\r\n";
  } else if (status != 204) {
    head += fmt::format("Content-Length: {}\r\n", res.body.size());
  }
  head += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  return head;
}

std::string serialize_closing_response(const httplib::Response& res) {
  bool keep_alive = false;
  return response_head(res, /*chunked=*/false, keep_alive) + res.body;
}

bool is_streaming(const httplib::Response& res) {
  return static_cast<bool>(res.content_provider_) && res.is_chunked_content_provider_;
}

std::string serialize_response(const httplib::Response& res, const ResponseFraming& framing, bool& keep_alive) {
  keep_alive = framing.keep_alive;
  std::string bytes = response_head(res, /*chunked=*/false, keep_alive);
  if (!framing.head_only) bytes += res.body;  // HEAD: the headers a GET would get
  return bytes;
}

bool write_response(SocketWriter& out, httplib::Response& res, const ResponseFraming& framing) {
  bool keep_alive = framing.keep_alive;
  const bool provider = static_cast<bool>(res.content_provider_) && res.is_chunked_content_provider_;
  // An HTTP/1.0 client knows no chunked coding: its stream ends when the
  // connection does.
  const bool chunked = provider && !framing.http10;
  if (provider && framing.http10) keep_alive = false;
  std::string head = response_head(res, chunked, keep_alive);
  if (provider && framing.http10) {
    const std::string length_line = fmt::format("Content-Length: {}\r\n", res.body.size());
    head.erase(head.find(length_line), length_line.size());
  }
  if (!provider || framing.head_only) {
    if (!out.write(head)) return false;
    // HEAD: the headers a GET would get, no body.
    const bool ok = framing.head_only || out.write(res.body);
    if (provider) {
      res.content_provider_ = nullptr;
      res.content_provider_resource_releaser_ = nullptr;  // (no route streams on GET)
    }
    return ok && keep_alive;
  }

  bool ok = out.write(head);
  bool done = false;
  httplib::DataSink sink;
  sink.write = [&](const char* data, size_t size) {
    if (size == 0) return ok;  // a zero-size chunk would end the body
    if (!chunked) return ok = ok && out.write(std::string_view(data, size));
    ok = ok && out.write(fmt::format("{:x}\r\n", size)) && out.write(std::string_view(data, size)) &&
         out.write("\r\n");
    return ok;
  };
  sink.is_writable = [&] { return ok && out.alive(); };
  sink.done = [&] { done = true; };
  size_t offset = 0;
  while (ok && !done) {
    if (!res.content_provider_(offset, 0, sink)) ok = false;
  }
  if (ok && done && chunked) ok = out.write("0\r\n\r\n");
  if (res.content_provider_resource_releaser_) {
    // Once: ~Response() would call it again (a second log line, metrics counted twice).
    auto release = std::move(res.content_provider_resource_releaser_);
    res.content_provider_resource_releaser_ = nullptr;
    release(ok && done);
  }
  return ok && done && keep_alive;
}

}  // namespace omnibus::server
