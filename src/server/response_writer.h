// Writing a response to a client's socket from a worker thread: the status
// line and headers, then the body, or the chunks of a streaming (SSE)
// response as its content provider makes them.
//
// The socket is non-blocking; every wait for room in it must end within
// the stall timeout, so a client that stops reading frees its worker. A
// client that is gone (a reset, an error on the socket) makes the next
// write fail; a client that only shut down its sending side is not gone.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "third_party/httplib_include.h"

namespace omnibus::server {

class SocketWriter {
 public:
  SocketWriter(int fd, std::chrono::milliseconds stall_timeout) : fd_(fd), stall_timeout_(stall_timeout) {}

  // All of `bytes`, or false (and every later call false): the client is
  // gone, or took nothing for the stall timeout.
  bool write(std::string_view bytes);
  // False once a write failed or the socket reports an error or hang-up.
  bool alive();
  // As much of `bytes` as the socket takes now, without waiting: the count
  // sent, or nullopt (and every later call fails) when the client is gone.
  std::optional<size_t> write_now(std::string_view bytes);

 private:
  int fd_;
  std::chrono::milliseconds stall_timeout_;
  bool failed_ = false;
};

// As much of `bytes` as the socket `fd` takes now, without waiting: the
// count sent (less than all when its buffer is full), or nullopt when the
// client is gone (a reset, a closed socket).
std::optional<size_t> send_without_waiting(int fd, std::string_view bytes);

// The reason phrase of an HTTP status ("Not Found"); "Unknown" for others.
const char* reason_phrase(int status);

// Writes `res` (a body, or a chunked content provider driven until it
// says done or fails; its resource releaser is called once either way,
// and cleared). The response says "Connection: close" unless
// framing.keep_alive, and a handler's own "Connection: close" wins. Returns whether the connection may serve
// another request: everything was written and it is kept alive.
struct ResponseFraming {
  bool keep_alive = true;
  bool head_only = false;  // a HEAD request: headers only
  bool http10 = false;     // an HTTP/1.0 client: a stream is close-delimited, not chunked
};
bool write_response(SocketWriter& out, httplib::Response& res, const ResponseFraming& framing);

// Whether `res` is a stream (a chunked content provider), which only
// write_response() can send.
bool is_streaming(const httplib::Response& res);
// A whole response that is not a stream, as bytes: the head, then the body
// unless framing.head_only. `keep_alive` comes out as the head says it
// (framing.keep_alive, unless the handler asked to close).
std::string serialize_response(const httplib::Response& res, const ResponseFraming& framing, bool& keep_alive);

// The status line and headers of `res` (Content-Length, or chunked; the
// Connection header from `keep_alive`, which a handler's "Connection:
// close" turns false).
std::string response_head(const httplib::Response& res, bool chunked, bool& keep_alive);
// A whole non-streaming response that closes the connection, as bytes.
std::string serialize_closing_response(const httplib::Response& res);

}  // namespace omnibus::server
