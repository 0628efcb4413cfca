#include "server/connection_loop.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "base/log.h"
#include "server/response_writer.h"

namespace omnibus::server {
namespace {

constexpr int kListenBacklog = 1024;
constexpr size_t kReadChunk = 16 << 10;
constexpr int kReadsPerEvent = 8;  // then other connections get their turn
constexpr std::chrono::milliseconds kSweepInterval{100};
constexpr std::chrono::milliseconds kLingerTime{2'000};
// Descriptors kept free of connections: the model file, logs, the
// listening socket, epoll, pipes of a child process.
constexpr size_t kReservedDescriptors = 64;

void set_nodelay(int fd) {
  int yes = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
}

void peer_of(int fd, std::string& addr, int& port) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return;
  char host[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    port = ntohs(in->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    port = ntohs(in6->sin6_port);
  }
  addr = host;
}

// Sends what the socket takes now; a refusal is small and a fresh socket's
// buffer holds it.
void send_now(int fd, const std::string& bytes) { (void)send_without_waiting(fd, bytes); }

// The soft open-file limit raised to the hard one; returns the soft limit.
size_t raise_open_file_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return 1024;
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  return lim.rlim_cur == RLIM_INFINITY ? size_t{1} << 20 : static_cast<size_t>(lim.rlim_cur);
}

}  // namespace

Connection::Connection(int fd, std::string peer_addr, int peer_port, std::atomic<int64_t>& open_count,
                       HttpParseLimits limits)
    : fd_(fd), peer_addr_(std::move(peer_addr)), peer_port_(peer_port), open_count_(open_count), parser_(limits) {
  open_count_.fetch_add(1);
}

Connection::~Connection() {
  ::close(fd_);
  open_count_.fetch_sub(1);
}

ConnectionLoop::ConnectionLoop(ConnectionLimits limits, Handlers handlers)
    : limits_(limits), handlers_(std::move(handlers)) {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
}

ConnectionLoop::~ConnectionLoop() {
  connections_.clear();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  ::close(wake_fd_);
  ::close(epoll_fd_);
}

Status ConnectionLoop::bind(const std::string& host, int port) {
  const size_t fd_limit = raise_open_file_limit();
  if (fd_limit < limits_.max_connections + kReservedDescriptors) {
    const size_t fit = fd_limit > 2 * kReservedDescriptors ? fd_limit - kReservedDescriptors : kReservedDescriptors;
    log_warn("the open-file limit ({}) allows {} connections, not {}: raise it (ulimit -n) for more", fd_limit, fit,
             limits_.max_connections);
    limits_.max_connections = fit;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found) != 0 || !found) {
    return Status::io_error(fmt::format("cannot listen on {}:{} (the host name does not resolve)", host, port));
  }
  int fd = -1;
  for (addrinfo* ai = found; ai; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    // SO_REUSEADDR only: SO_REUSEPORT would let a second server bind the
    // same port and silently share its connections.
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, kListenBacklog) == 0) break;
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(found);
  if (fd < 0) {
    return Status::io_error(fmt::format("cannot listen on {}:{} (the port is in use, or the address is not one of "
                                        "this machine's)", host, port));
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  port_ = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                   : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  listen_fd_ = fd;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listen_fd_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  return Status::ok();
}

void ConnectionLoop::wake() {
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof(one));
}

void ConnectionLoop::stop() {
  stopping_.store(true);
  wake();
}

void ConnectionLoop::finish_writing(std::unique_ptr<Connection> connection, std::string rest, bool keep_alive) {
  connection->outgoing_ = std::move(rest);
  connection->close_after_write_ = !keep_alive;
  resume(std::move(connection));
}

void ConnectionLoop::resume(std::unique_ptr<Connection> connection) {
  {
    MutexLock lock(resumed_mu_);
    resumed_.push_back(std::move(connection));
  }
  wake();
}

ConnectionLoop::Counters ConnectionLoop::counters() const {
  Counters c;
  c.open = open_.load();
  c.accepted = accepted_.load();
  c.refused_over_cap = refused_over_cap_.load();
  c.timed_out_requests = timed_out_requests_.load();
  c.idle_closed = idle_closed_.load();
  c.refused_over_buffer = refused_over_buffer_.load();
  c.finished_by_loop = finished_by_loop_.load();
  c.write_timed_out = write_timed_out_.load();
  c.buffered_bytes = buffered_bytes_.load();
  return c;
}

void ConnectionLoop::run() {
  constexpr int kMaxEvents = 256;
  epoll_event events[kMaxEvents];
  Clock::time_point next_sweep = Clock::now() + kSweepInterval;
  while (!stopping_.load()) {
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_sweep - Clock::now()).count();
    const int n = ::epoll_wait(epoll_fd_, events, kMaxEvents, static_cast<int>(std::max<int64_t>(0, wait)));
    if (n < 0 && errno != EINTR) {
      log_error("epoll_wait failed: {}", std::strerror(errno));
      break;
    }
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_fd_) {
        uint64_t count = 0;
        [[maybe_unused]] const ssize_t r = ::read(wake_fd_, &count, sizeof(count));
        take_back_resumed();
      } else if (fd == listen_fd_) {
        accept_all();
      } else if (auto it = connections_.find(fd); it != connections_.end()) {
        if (it->second->phase_ == Connection::Phase::kWrite) {
          write_to(*it->second);
        } else {
          read_from(*it->second);
        }
      }
    }
    if (Clock::now() >= next_sweep) {
      sweep_deadlines();
      next_sweep = Clock::now() + kSweepInterval;
    }
  }
  connections_.clear();
  MutexLock lock(resumed_mu_);
  resumed_.clear();
}

void ConnectionLoop::accept_all() {
  while (true) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: stop polling the listening socket (it would
        // wake us at once, forever) until the next sweep.
        log_warn("cannot accept a connection: {} ({} open)", std::strerror(errno), open_.load());
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
        accept_paused_ = true;
      }
      return;
    }
    accepted_.fetch_add(1);
    set_nodelay(fd);  // SSE chunks are small; Nagle plus delayed ACKs would hold each one back
    std::string addr;
    int port = -1;
    peer_of(fd, addr, port);
    auto c = std::make_unique<Connection>(fd, std::move(addr), port, open_, limits_.parse);
    if (static_cast<size_t>(open_.load()) > limits_.max_connections) {
      refused_over_cap_.fetch_add(1);
      const std::string response = handlers_.on_refusal(
          503, fmt::format("too many open connections (the limit is {}); retry shortly", limits_.max_connections),
          nullptr);
      send_now(fd, response);
      ::shutdown(fd, SHUT_WR);
      continue;  // closed as `c` goes: a lingering close would hold the descriptor we have too few of
    }
    c->deadline_ = Clock::now() + limits_.header_timeout;
    watch(std::move(c), EPOLLIN | EPOLLRDHUP);
  }
}

void ConnectionLoop::watch(std::unique_ptr<Connection> c, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = c->fd();
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c->fd(), &ev) != 0) return;  // closed as `c` goes
  const int fd = c->fd();
  connections_[fd] = std::move(c);
}

void ConnectionLoop::rearm(Connection& c, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = c.fd();
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd(), &ev) != 0) close_connection(c.fd());
}

std::unique_ptr<Connection> ConnectionLoop::unwatch(int fd) {
  auto it = connections_.find(fd);
  if (it == connections_.end()) return nullptr;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  std::unique_ptr<Connection> c = std::move(it->second);
  connections_.erase(it);
  return c;
}

void ConnectionLoop::release_request(Connection& c) {
  buffered_bytes_.fetch_sub(c.buffered_);
  c.buffered_ = 0;
}

void ConnectionLoop::account(Connection& c) {
  const size_t now = c.parser_.buffered_bytes() + c.pending_.size();
  buffered_bytes_.fetch_add(now - c.buffered_);  // wraps correctly when it shrinks
  c.buffered_ = now;
}

void ConnectionLoop::close_connection(int fd) {
  if (std::unique_ptr<Connection> c = unwatch(fd)) release_request(*c);
}

void ConnectionLoop::read_from(Connection& c) {
  char buf[kReadChunk];
  for (int round = 0; round < kReadsPerEvent; ++round) {
    const ssize_t n = ::recv(c.fd(), buf, sizeof(buf), 0);
    if (n > 0) {
      // Lingering after a refusal: what the client still sends is dropped.
      if (c.phase_ != Connection::Phase::kLinger) c.pending_.append(buf, static_cast<size_t>(n));
      if (static_cast<size_t>(n) < sizeof(buf)) break;
      continue;
    }
    if (n == 0) {
      c.read_closed_ = true;
      break;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    return close_connection(c.fd());  // reset by the peer
  }
  if (c.phase_ == Connection::Phase::kLinger) {
    if (c.read_closed_) close_connection(c.fd());
    return;
  }
  if (!advance(c)) return;
  // The client will send nothing more, and no whole request is here.
  if (c.read_closed_) close_connection(c.fd());
}

bool ConnectionLoop::advance(Connection& c) {
  using Phase = Connection::Phase;
  while (true) {
    const size_t used = c.parser_.feed(c.pending_);
    c.pending_.erase(0, used);
    account(c);
    const HttpRequestParser::State state = c.parser_.state();
    if (state != HttpRequestParser::State::kComplete && state != HttpRequestParser::State::kError &&
        buffered_bytes_.load() > limits_.max_buffered_bytes) {
      refused_over_buffer_.fetch_add(1);
      refuse(c, 503, "the server is receiving too many request bytes at once; retry shortly",
             c.parser_.head_parsed() ? &c.parser_.head() : nullptr);
      return false;
    }
    if (state == HttpRequestParser::State::kError) {
      refuse(c, c.parser_.error_status(), c.parser_.error_message(),
             c.parser_.head_parsed() ? &c.parser_.head() : nullptr);
      return false;
    }
    if (c.parser_.started() && (c.phase_ == Phase::kIdle)) {
      c.phase_ = Phase::kHead;
      c.deadline_ = Clock::now() + limits_.header_timeout;
    }
    const bool head_done = state == HttpRequestParser::State::kBody || state == HttpRequestParser::State::kComplete;
    if (head_done && !c.head_checked_ && c.parser_.head().has_body) {
      c.head_checked_ = true;
      if (std::optional<std::string> refusal = handlers_.on_head(c.parser_.head())) {
        linger(c, *refusal);
        return false;
      }
      if (state == HttpRequestParser::State::kBody) {
        c.phase_ = Phase::kBody;
        c.deadline_ = Clock::now() + limits_.body_timeout;
        if (c.parser_.head().expect_continue) send_now(c.fd(), "HTTP/1.1 100 Continue\r\n\r\n");
      }
    }
    if (state != HttpRequestParser::State::kComplete) return true;  // more to read
    // The request's bytes stay in the budget (c.buffered_) until the
    // worker's release_request(); what is pipelined behind it is not
    // counted meanwhile (at most one read burst).
    ParsedHttpRequest request = c.parser_.take();
    c.head_checked_ = false;
    std::unique_ptr<Connection> owned = unwatch(c.fd());
    handlers_.on_request(std::move(owned), std::move(request));
    return false;
  }
}

void ConnectionLoop::write_to(Connection& c) {
  const std::optional<size_t> sent = send_without_waiting(c.fd(), c.outgoing_);
  if (!sent) return close_connection(c.fd());  // gone
  c.outgoing_.erase(0, *sent);
  if (!c.outgoing_.empty()) return;  // the next EPOLLOUT
  c.outgoing_.shrink_to_fit();
  const int fd = c.fd();
  rearm(c, EPOLLIN | EPOLLRDHUP);
  if (!connections_.count(fd)) return;  // could not be rearmed: closed, `c` is gone
  // As a refusal closes: the client reads the answer, not a reset.
  if (c.close_after_write_) return close_gracefully(c);
  await_next_request(c);
}

void ConnectionLoop::await_next_request(Connection& c) {
  c.phase_ = Connection::Phase::kIdle;
  c.deadline_ = Clock::now() + limits_.idle_timeout;
  // A pipelined request may already be here whole.
  if (!c.pending_.empty() && !advance(c)) return;
  if (c.read_closed_) close_connection(c.fd());
}

void ConnectionLoop::refuse(Connection& c, int status, const std::string& message, const ParsedHttpRequest* head) {
  linger(c, handlers_.on_refusal(status, message, head));
}

void ConnectionLoop::linger(Connection& c, const std::string& response) {
  send_now(c.fd(), response);
  close_gracefully(c);
}

void ConnectionLoop::close_gracefully(Connection& c) {
  ::shutdown(c.fd(), SHUT_WR);
  c.phase_ = Connection::Phase::kLinger;
  c.pending_.clear();
  c.parser_ = HttpRequestParser(limits_.parse);  // what it held is not needed any more
  account(c);
  c.deadline_ = Clock::now() + kLingerTime;
  if (c.read_closed_) close_connection(c.fd());
}

void ConnectionLoop::take_back_resumed() {
  std::vector<std::unique_ptr<Connection>> back;
  {
    MutexLock lock(resumed_mu_);
    back.swap(resumed_);
  }
  for (std::unique_ptr<Connection>& c : back) {
    if (stopping_.load()) continue;  // closed as `back` goes
    Connection& ref = *c;
    const int fd = c->fd();
    if (!ref.outgoing_.empty()) {
      finished_by_loop_.fetch_add(1);
      ref.phase_ = Connection::Phase::kWrite;
      ref.deadline_ = Clock::now() + limits_.write_timeout;
      watch(std::move(c), EPOLLOUT);  // errors and hang-ups are reported too
      continue;
    }
    watch(std::move(c), EPOLLIN | EPOLLRDHUP);
    if (!connections_.count(fd)) continue;  // could not be watched: closed
    await_next_request(ref);
  }
}

void ConnectionLoop::sweep_deadlines() {
  const Clock::time_point now = Clock::now();
  std::vector<int> expired;
  for (const auto& [fd, c] : connections_) {
    if (c->deadline_ <= now) expired.push_back(fd);
  }
  for (int fd : expired) {
    Connection& c = *connections_[fd];
    using Phase = Connection::Phase;
    if (c.phase_ == Phase::kWrite) {
      write_timed_out_.fetch_add(1);
      close_connection(fd);
      continue;
    }
    if (c.phase_ == Phase::kLinger || !c.parser_.started()) {
      if (c.phase_ != Phase::kLinger) idle_closed_.fetch_add(1);
      close_connection(fd);
      continue;
    }
    timed_out_requests_.fetch_add(1);
    const bool in_body = c.phase_ == Phase::kBody;
    refuse(c, 408,
           in_body ? fmt::format("the request body did not arrive within {} ms", limits_.body_timeout.count())
                   : fmt::format("the request head did not arrive within {} ms", limits_.header_timeout.count()),
           c.parser_.head_parsed() ? &c.parser_.head() : nullptr);
  }
  if (accept_paused_ && listen_fd_ >= 0) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = listen_fd_;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev) == 0) accept_paused_ = false;
  }
}

}  // namespace omnibus::server
