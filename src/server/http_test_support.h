// Test harness for the HTTP layer: a FakeInferenceService behind an
// HttpServer on a free port, served from a background thread, plus small
// client helpers (JSON requests, SSE parsing, a raw socket for hanging up
// mid-stream). Header only; tests only.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/log.h"
#include "server/fake_inference_service.h"
#include "server/http_server.h"
#include "third_party/httplib_include.h"

namespace omnibus::server::testing {

using Json = nlohmann::json;

struct HttpReply {
  int status = 0;  // 0: no response (connection failed)
  std::string body;
  httplib::Headers headers;
  std::string header(const std::string& key) const {
    auto it = headers.find(key);
    return it == headers.end() ? std::string() : it->second;
  }
  Json json() const { return Json::parse(body, nullptr, /*allow_exceptions=*/false); }
};

class ServerHarness {
 public:
  explicit ServerHarness(HttpServerOptions options = {}) : ServerHarness(nullptr, std::move(options)) {}
  // front: the service the server talks to, if not the fake itself (e.g. a
  // DeferredService that later forwards to service()).
  explicit ServerHarness(InferenceService* front, HttpServerOptions options = {}) {
    set_log_level(LogLevel::kWarn);
    options.host = "127.0.0.1";
    options.port = 0;
    server_ = std::make_unique<HttpServer>(front != nullptr ? *front : service_, std::move(options));
    Status s = server_->bind();
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    thread_ = std::thread([this] { server_->serve(); });
  }
  ~ServerHarness() { stop(); }

  void stop() {
    if (!thread_.joinable()) return;
    server_->stop();
    thread_.join();
  }

  FakeInferenceService& service() { return service_; }
  HttpServer& server() { return *server_; }
  int port() const { return server_->port(); }

  std::unique_ptr<httplib::Client> client() const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port());
    c->set_read_timeout(10, 0);
    c->set_connection_timeout(5, 0);
    return c;
  }

  HttpReply post(const std::string& path, const std::string& body, const httplib::Headers& headers = {}) const {
    return to_reply(client()->Post(path.c_str(), headers, body, "application/json"));
  }
  HttpReply post(const std::string& path, const Json& body, const httplib::Headers& headers = {}) const {
    return post(path, body.dump(), headers);
  }
  HttpReply get(const std::string& path, const httplib::Headers& headers = {}) const {
    return to_reply(client()->Get(path.c_str(), headers));
  }

  static HttpReply to_reply(const httplib::Result& r) {
    HttpReply reply;
    if (!r) return reply;
    reply.status = r->status;
    reply.body = r->body;
    reply.headers = r->headers;
    return reply;
  }

 private:
  FakeInferenceService service_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
};

// The data fields of an SSE body, in order ("[DONE]" included).
inline std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) end = body.size();
    const std::string event = body.substr(pos, end - pos);
    if (event.rfind("data: ", 0) == 0) out.push_back(event.substr(6));
    pos = end + 2;
  }
  return out;
}

// A TCP connection to the server driven by hand, to hang up mid-response.
class RawConnection {
 public:
  explicit RawConnection(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) close();
    timeval tv{5, 0};
    if (fd_ >= 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~RawConnection() { close(); }
  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }

  bool send_post(const std::string& path, const std::string& body) {
    const std::string request = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
                                "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    return ::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size());
  }
  // Reads until `marker` has been seen (or the peer closes / times out).
  std::string read_until(const std::string& marker) {
    std::string got;
    char buf[4096];
    while (got.find(marker) == std::string::npos) {
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
    return got;
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// Polls `condition` every millisecond for up to `limit`.
template <class F>
bool eventually(F condition, std::chrono::milliseconds limit = std::chrono::milliseconds(1000)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return condition();
}

}  // namespace omnibus::server::testing
