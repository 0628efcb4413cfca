// ConnectionLoop: the HTTP server's one network thread. It accepts
// connections and reads every one of them, non-blocking, over epoll, until
// it holds a whole request; only then does a worker thread see the
// connection (on_request). So a client that trickles its headers, stalls in
// its body or idles on keep-alive costs a socket and a small buffer, never
// a thread (docs/design/http-transport.md).
//
// Deadlines are per phase and whole, not per read: the request head must
// arrive within header_timeout of its first byte (of the accept, for a
// connection's first request), the body within body_timeout of the head,
// and a kept-alive connection may idle idle_timeout between requests. A
// request that misses its deadline gets 408; an idle connection is closed.
// Beyond max_connections open connections, a new one gets 503 and is
// closed. Refusals close the sending side and read what the client still
// sends for a moment ("lingering close"), so the client reads the answer
// instead of a reset.
//
// Once a request is complete the loop stops reading its connection: a
// client that half-closes after its request still gets the answer.
//
// A response the socket would not take at once (the client reads slowly,
// or pipelines requests and reads nothing) comes back to the loop
// (finish_writing), which writes it as the client reads, within
// write_timeout: a worker never waits on a client for a whole answer.
//
// Threads: run() on one thread; stop(), resume() and the counters from
// any. Handlers run on the loop thread and must not block.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "server/http_request_parser.h"

namespace omnibus::server {

struct ConnectionLimits {
  size_t max_connections = 4096;
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds body_timeout{60'000};
  std::chrono::milliseconds idle_timeout{15'000};
  // A response handed to finish_writing() must be taken within this, or
  // the connection is closed.
  std::chrono::milliseconds write_timeout{30'000};
  // Request bytes held for all connections together, from their first
  // byte until a worker is done with the request (release_request()):
  // heads and bodies still arriving, and whole requests waiting for or in
  // a handler; a request that would pass it gets 503. Each connection may
  // hold up to parse.max_body_bytes, and a handler may need many times its
  // body (a tokenizer's working set), so many large bodies at once would
  // otherwise add up to more memory than the machine has.
  size_t max_buffered_bytes = size_t{128} << 20;
  HttpParseLimits parse;
};

// A client connection. Owned by the loop while it reads, by one worker
// while its request is handled; closing it is destroying it.
class Connection {
 public:
  Connection(int fd, std::string peer_addr, int peer_port, std::atomic<int64_t>& open_count,
             HttpParseLimits limits);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  int fd() const { return fd_; }
  const std::string& peer_addr() const { return peer_addr_; }
  int peer_port() const { return peer_port_; }
  // The client shut down its sending side (it may still read).
  bool read_closed() const { return read_closed_; }

 private:
  friend class ConnectionLoop;
  enum class Phase { kFirstRequest, kIdle, kHead, kBody, kWrite, kLinger };

  int fd_;
  std::string peer_addr_;
  int peer_port_;
  std::atomic<int64_t>& open_count_;
  HttpRequestParser parser_;
  std::string pending_;  // read, not yet parsed (pipelined after a request)
  bool read_closed_ = false;
  bool head_checked_ = false;
  size_t buffered_ = 0;  // this connection's share of the loop's buffered_bytes_ (atomic: the loop's, then a worker's)
  Phase phase_ = Phase::kFirstRequest;
  std::string outgoing_;  // kWrite: the rest of a response
  bool close_after_write_ = false;
  std::chrono::steady_clock::time_point deadline_;
};

class ConnectionLoop {
 public:
  using Clock = std::chrono::steady_clock;
  struct Handlers {
    // A whole request. The connection is the callee's: hand it back with
    // resume() to keep it alive, or drop it to close it.
    std::function<void(std::unique_ptr<Connection>, ParsedHttpRequest)> on_request;
    // A head whose body has not been read yet: nullopt to go on, or the
    // bytes of a whole response to send before closing (e.g. a body too
    // large for its route).
    std::function<std::optional<std::string>(const ParsedHttpRequest& head)> on_head;
    // The bytes of a whole response refusing a request the loop cannot
    // hand on: a parse error or missed deadline (its head when parsed,
    // else null), or a connection over the cap (503).
    std::function<std::string(int status, const std::string& message, const ParsedHttpRequest* head)> on_refusal;
  };
  struct Counters {
    int64_t open = 0;
    uint64_t accepted = 0;
    uint64_t refused_over_cap = 0;
    uint64_t timed_out_requests = 0;  // 408s
    uint64_t idle_closed = 0;
    uint64_t refused_over_buffer = 0;  // 503s: too many request bytes held at once
    uint64_t finished_by_loop = 0;     // responses the loop wrote the rest of (finish_writing)
    uint64_t write_timed_out = 0;      // of those, closed for not reading within write_timeout
    size_t buffered_bytes = 0;
  };

  ConnectionLoop(ConnectionLimits limits, Handlers handlers);
  ~ConnectionLoop();
  ConnectionLoop(const ConnectionLoop&) = delete;
  ConnectionLoop& operator=(const ConnectionLoop&) = delete;

  // Opens the listening socket (host may be a name or an address; port 0:
  // any free port). Raises this process's open-file limit to its hard
  // limit and lowers max_connections to fit it, with a warning.
  Status bind(const std::string& host, int port);
  int port() const { return port_; }
  size_t max_connections() const { return limits_.max_connections; }

  // Serves until stop(); then closes the listening socket and every
  // connection it holds. Returns at once if stop() came first.
  void run();
  void stop();
  // A worker is done with the request `connection` carried: its bytes
  // leave the budget. Call before resume() or dropping the connection.
  void release_request(Connection& connection);
  // A connection back from a worker, for its next request (keep-alive).
  // After stop() it is closed.
  void resume(std::unique_ptr<Connection> connection);
  // A connection whose response's `rest` the socket would not take now:
  // the loop writes it as the client reads (write_timeout), then serves
  // the connection's next request if `keep_alive`, else closes it. Call
  // after release_request().
  void finish_writing(std::unique_ptr<Connection> connection, std::string rest, bool keep_alive);

  Counters counters() const;

 private:
  void accept_all();
  void read_from(Connection& c);
  void write_to(Connection& c);
  // Reading `c` again after a response: its next request (pipelined bytes
  // may hold it whole already), or a close if the client sent its last.
  void await_next_request(Connection& c);
  // Parses what `c` has read: dispatches a whole request, refuses a bad
  // one. False when `c` left the loop (dispatched or closed).
  bool advance(Connection& c);
  void refuse(Connection& c, int status, const std::string& message, const ParsedHttpRequest* head);
  void linger(Connection& c, const std::string& response);
  // Shuts the sending side and drains what the client still sends for a
  // moment (kLinger), so it reads the answer already sent, not a reset.
  void close_gracefully(Connection& c);
  void take_back_resumed();
  void sweep_deadlines();
  void watch(std::unique_ptr<Connection> c, uint32_t events);
  void rearm(Connection& c, uint32_t events);
  std::unique_ptr<Connection> unwatch(int fd);
  void close_connection(int fd);
  // Brings buffered_bytes_ up to date with what `c`'s parser holds.
  void account(Connection& c);
  void wake();

  ConnectionLimits limits_;
  Handlers handlers_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  int port_ = 0;
  bool accept_paused_ = false;  // out of file descriptors: retried at the next sweep
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> open_{0};
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> refused_over_cap_{0};
  std::atomic<uint64_t> timed_out_requests_{0};
  std::atomic<uint64_t> idle_closed_{0};
  std::atomic<uint64_t> refused_over_buffer_{0};
  std::atomic<uint64_t> finished_by_loop_{0};
  std::atomic<uint64_t> write_timed_out_{0};
  std::atomic<size_t> buffered_bytes_{0};  // written by the loop thread only
  // The loop thread's own: connections it reads, by descriptor.
  std::unordered_map<int, std::unique_ptr<Connection>> connections_;
  Mutex resumed_mu_;
  std::vector<std::unique_ptr<Connection>> resumed_ GUARDED_BY(resumed_mu_);
};

}  // namespace omnibus::server
