// The HTTP transport against hostile and careless clients, with the fake
// service behind it: deadlines, the connection cap, half-closed clients,
// pipelining, 100-continue, chunked bodies, authentication before routing,
// and that idle or slow connections hold no worker thread.
#include <dirent.h>
#include <poll.h>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/http_test_support.h"

namespace omnibus::server::testing {
namespace {

using std::chrono::milliseconds;

// A client socket driven by hand.
class Client {
 public:
  explicit Client(int port) : conn_(port) {}
  bool ok() const { return conn_.ok(); }
  bool send(const std::string& bytes) {
    return ::send(fd_of(), bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }
  // Everything until the server closes (or `limit` passes).
  std::string read_to_close(milliseconds limit = milliseconds(5000)) {
    std::string got;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    char buf[4096];
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_of(), POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const ssize_t n = ::recv(fd_of(), buf, sizeof(buf), 0);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
    return got;
  }
  std::string read_until(const std::string& marker) { return conn_.read_until(marker); }
  // The server closed the connection (a read gives end of file) within `limit`.
  bool closed_within(milliseconds limit) {
    pollfd p{fd_of(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(limit.count())) <= 0) return false;
    char c;
    return ::recv(fd_of(), &c, 1, MSG_PEEK) <= 0;
  }
  void shutdown_send() { ::shutdown(fd_of(), SHUT_WR); }
  int fd_for_test() const { return fd_of(); }
  void close() { conn_.close(); }

 private:
  int fd_of() const { return conn_.fd(); }
  RawConnection conn_;
};

int thread_count() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
    ::closedir(d);
  }
  return n;
}

std::string completion_request(const std::string& body, const std::string& extra_headers = "") {
  return "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra_headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

HttpServerOptions short_deadlines() {
  HttpServerOptions o;
  o.http_threads = 4;
  o.header_timeout = milliseconds(400);
  o.body_timeout = milliseconds(400);
  o.idle_timeout = milliseconds(300);
  return o;
}

TEST(HttpTransportTest, SlowHeadsAndStalledBodiesGet408AndHoldNoThread) {
  ServerHarness h(short_deadlines());
  ASSERT_EQ(h.get("/health").status, 200);
  const int threads_before = thread_count();
  // Far more slow connections than worker threads: trickling heads, and
  // bodies that stop halfway.
  std::vector<std::unique_ptr<Client>> slow;
  for (int i = 0; i < 40; ++i) {
    auto c = std::make_unique<Client>(h.port());
    ASSERT_TRUE(c->ok());
    ASSERT_TRUE(c->send(i % 2 ? "GET /health HTTP/1.1\r\nHost: x\r\n"
                              : "POST /v1/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"prompt\""));
    slow.push_back(std::move(c));
  }
  // Trickle one more header byte into the heads: per-read timeouts would restart.
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(milliseconds(50));
    for (size_t i = 1; i < slow.size(); i += 2) slow[i]->send("X");
  }
  // Meanwhile normal requests are answered at once.
  const auto start = std::chrono::steady_clock::now();
  HttpReply reply = h.post("/v1/completions", Json{{"prompt", "Hi"}, {"max_tokens", 2}});
  EXPECT_EQ(reply.status, 200) << reply.body;
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(300));
  EXPECT_LE(thread_count(), threads_before + 1);  // the httplib client's own
  for (auto& c : slow) {
    const std::string got = c->read_to_close();
    EXPECT_EQ(got.rfind("HTTP/1.1 408 ", 0), 0u) << got;
    EXPECT_NE(got.find("\"request_timeout\""), std::string::npos) << got;
  }
  const std::string metrics = h.get("/metrics").body;
  EXPECT_NE(metrics.find("omnibus_http_request_timeouts_total 40"), std::string::npos) << metrics;
}

TEST(HttpTransportTest, IdleKeepAliveConnectionsAreClosed) {
  ServerHarness h(short_deadlines());
  Client c(h.port());
  ASSERT_TRUE(c.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_NE(c.read_until("{\"status\":\"ok\"}").find("200 OK"), std::string::npos);
  EXPECT_FALSE(c.closed_within(milliseconds(100)));  // kept alive for a while
  EXPECT_TRUE(c.closed_within(milliseconds(1500)));
  // A connection that never sends a byte is closed at the head deadline.
  Client silent(h.port());
  EXPECT_TRUE(silent.closed_within(milliseconds(1500)));
}

TEST(HttpTransportTest, ConnectionsOverTheCapGet503) {
  HttpServerOptions o;
  o.max_connections = 8;
  ServerHarness h(o);
  std::vector<std::unique_ptr<Client>> held;
  for (int i = 0; i < 8; ++i) held.push_back(std::make_unique<Client>(h.port()));
  EXPECT_TRUE(eventually([&] { return h.server().port() > 0; }));
  std::this_thread::sleep_for(milliseconds(100));  // all eight accepted
  Client over(h.port());
  const std::string got = over.read_to_close();
  EXPECT_EQ(got.rfind("HTTP/1.1 503 ", 0), 0u) << got;
  EXPECT_NE(got.find("too many open connections"), std::string::npos) << got;
  EXPECT_NE(got.find("Retry-After: "), std::string::npos) << got;
  held.clear();  // room again
  EXPECT_TRUE(eventually([&] { return h.get("/health").status == 200; }, milliseconds(2000)));
  EXPECT_EQ(h.get("/metrics").body.find("omnibus_http_connections_refused_total 0"), std::string::npos);
}

TEST(HttpTransportTest, RequestBytesHeldAtOnceAreBounded) {
  HttpServerOptions o;
  o.limits.max_body_bytes = 60000;
  o.max_buffered_request_bytes = 64 << 10;  // raised to two bodies: 120,000 bytes
  ServerHarness h(o);
  // Bodies that stop short of their end: two fit, the third would pass the budget.
  const std::string head = "POST /v1/completions HTTP/1.1\r\nContent-Length: 60000\r\n\r\n";
  std::vector<std::unique_ptr<Client>> held;
  for (int i = 0; i < 2; ++i) {
    held.push_back(std::make_unique<Client>(h.port()));
    ASSERT_TRUE(held.back()->send(head + std::string(45000, ' ')));
  }
  std::this_thread::sleep_for(milliseconds(100));
  Client third(h.port());
  ASSERT_TRUE(third.send(head + std::string(45000, ' ')));
  const std::string got = third.read_to_close();
  EXPECT_EQ(got.rfind("HTTP/1.1 503 ", 0), 0u) << got.substr(0, 300);
  EXPECT_NE(got.find("too many request bytes"), std::string::npos) << got.substr(0, 300);
  // The first completes once it sends the rest; its bytes leave the budget after.
  const std::string rest = R"({"prompt":"Hi","max_tokens":2})";
  ASSERT_TRUE(held[0]->send(std::string(60000 - 45000 - rest.size(), ' ') + rest));
  EXPECT_NE(held[0]->read_until("}}").find("200 OK"), std::string::npos);
  held.clear();
  const auto buffered = [&] {
    const std::string metrics = h.get("/metrics").body;
    const size_t at = metrics.find("\nomnibus_http_buffered_request_bytes ");
    return at == std::string::npos ? -1L : std::stol(metrics.substr(at + 37));
  };
  EXPECT_TRUE(eventually([&] { return buffered() >= 0 && buffered() < 1000; }, milliseconds(2000)));  // this GET's own
  EXPECT_NE(h.get("/metrics").body.find("omnibus_http_buffer_refusals_total 1"), std::string::npos);
}

TEST(HttpTransportTest, HalfClosedClientsGetTheirAnswer) {
  ServerHarness h;
  for (const bool stream : {false, true}) {
    Client c(h.port());
    const std::string body = std::string(R"({"prompt":"Hi","max_tokens":3,"stream":)") + (stream ? "true" : "false") +
                             "}";
    ASSERT_TRUE(c.send(completion_request(body)));
    c.shutdown_send();
    const std::string got = c.read_to_close();
    EXPECT_EQ(got.rfind("HTTP/1.1 200 OK", 0), 0u) << got;
    EXPECT_NE(got.find(stream ? "data: [DONE]" : "\"completion_tokens\":3"), std::string::npos) << got;
  }
}

TEST(HttpTransportTest, PipelinedRequestsAnsweredInOrder) {
  ServerHarness h;
  Client c(h.port());
  const std::string tokenize = R"({"content":"Hello"})";
  ASSERT_TRUE(c.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\nPOST /tokenize HTTP/1.1\r\nContent-Length: " +
                     std::to_string(tokenize.size()) + "\r\n\r\n" + tokenize +
                     "GET /v1/models HTTP/1.1\r\nConnection: close\r\n\r\n"));
  const std::string got = c.read_to_close();
  const size_t health = got.find("{\"status\":\"ok\"}");
  const size_t tokens = got.find("\"tokens\"");
  const size_t models = got.find("\"object\":\"list\"");
  ASSERT_NE(health, std::string::npos) << got;
  ASSERT_NE(tokens, std::string::npos) << got;
  ASSERT_NE(models, std::string::npos) << got;
  EXPECT_LT(health, tokens);
  EXPECT_LT(tokens, models);
}

TEST(HttpTransportTest, ExpectContinueAndChunkedBodies) {
  ServerHarness h;
  Client c(h.port());
  const std::string body = R"({"prompt":"Hi","max_tokens":2})";
  ASSERT_TRUE(c.send("POST /v1/completions HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n"));
  EXPECT_EQ(c.read_until("\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(c.send(body));
  EXPECT_NE(c.read_until("}}").find("200 OK"), std::string::npos);

  Client chunked(h.port());
  ASSERT_TRUE(chunked.send("POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                           "a\r\n{\"prompt\":\r\n14\r\n\"Hi\",\"max_tokens\":2}\r\n0\r\n\r\n"));
  const std::string got = chunked.read_to_close();
  EXPECT_EQ(got.rfind("HTTP/1.1 200 OK", 0), 0u) << got;
}

TEST(HttpTransportTest, MalformedRequestsGetAClearErrorAndTheServerGoesOn) {
  ServerHarness h;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"GET / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", "400"},
      {"GET / HTTP/9.9\r\n\r\n", "505"},
      {"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", "501"},
      {"POST /v1/completions HTTP/1.1\r\nContent-Length: 999999999999\r\n\r\n", "413"},
      {"GET /" + std::string(70000, 'a') + " HTTP/1.1\r\n\r\n", "414"},
      {std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 15), "400"},  // a TLS hello
  };
  for (const auto& [bytes, status] : cases) {
    Client c(h.port());
    c.send(bytes);
    const std::string got = c.read_to_close();
    EXPECT_EQ(got.rfind("HTTP/1.1 " + status + " ", 0), 0u) << got.substr(0, 200);
    EXPECT_NE(got.find("\"error\""), std::string::npos) << got.substr(0, 200);
  }
  EXPECT_EQ(h.get("/health").status, 200);
}

TEST(HttpTransportTest, WithAKeyEveryPathButHealthIs401First) {
  HttpServerOptions o;
  o.api_key = "sekret";
  ServerHarness h(o);
  for (const std::string request : {"DELETE /v1/completions HTTP/1.1\r\n\r\n", "GET /v1/completions HTTP/1.1\r\n\r\n",
                                    "GET /no/such/route HTTP/1.1\r\n\r\n", "PUT /metrics HTTP/1.1\r\n\r\n",
                                    "GET /v1/models/x HTTP/1.1\r\n\r\n"}) {
    Client c(h.port());
    c.send(request);
    const std::string got = c.read_until("}}");
    EXPECT_EQ(got.rfind("HTTP/1.1 401 ", 0), 0u) << request << got;
  }
  const httplib::Headers key = {{"Authorization", "Bearer sekret"}};
  EXPECT_EQ(h.get("/health").status, 200);
  EXPECT_EQ(h.get("/v1/completions", key).status, 405);
  EXPECT_EQ(h.get("/no/such/route", key).status, 404);
  EXPECT_EQ(h.get("/v1/models", key).status, 200);
}

TEST(HttpTransportTest, WithAKeyABodyIsRefusedFromItsHead) {
  HttpServerOptions o;
  o.api_key = "sekret";
  ServerHarness h(o);
  Client c(h.port());
  ASSERT_TRUE(c.send("POST /v1/completions HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 8000000\r\n\r\n"));
  const std::string got = c.read_to_close(milliseconds(3000));
  EXPECT_EQ(got.rfind("HTTP/1.1 401 ", 0), 0u) << got;  // not "100 Continue", and at once
}

TEST(HttpTransportTest, StreamsAreLoggedAndCountedOnce) {
  ServerHarness h;
  for (int i = 0; i < 3; ++i) {
    Client c(h.port());
    ASSERT_TRUE(c.send(completion_request(R"({"prompt":"Hi","max_tokens":2,"stream":true})", "Connection: close\r\n")));
    EXPECT_NE(c.read_to_close().find("data: [DONE]"), std::string::npos);
  }
  const std::string metrics = h.get("/metrics").body;
  EXPECT_NE(metrics.find("omnibus_http_requests_in_flight 1\n"), std::string::npos) << metrics;  // this one
  EXPECT_NE(metrics.find("omnibus_http_responses_total{code=\"200\"} 3\n"), std::string::npos) << metrics;
}

TEST(HttpTransportTest, HeadGetsTheHeadersOnlyAndTheConnectionStaysInStep) {
  ServerHarness h;
  Client c(h.port());
  ASSERT_TRUE(c.send("HEAD /health HTTP/1.1\r\n\r\nGET /health HTTP/1.1\r\nConnection: close\r\n\r\n"));
  const std::string got = c.read_to_close();
  EXPECT_EQ(got.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << got;
  const size_t second = got.find("HTTP/1.1", 1);
  ASSERT_NE(second, std::string::npos) << got;
  EXPECT_EQ(got.substr(second - 4, 4), "\r\n\r\n") << got;  // no body between the two
  EXPECT_NE(got.find("Content-Length: 15"), std::string::npos) << got;
  EXPECT_NE(got.find("{\"status\":\"ok\"}", second), std::string::npos) << got;
}

TEST(HttpTransportTest, AnHttp10StreamEndsWithTheConnection) {
  ServerHarness h;
  Client c(h.port());
  const std::string body = R"({"prompt":"Hi","max_tokens":2,"stream":true})";
  ASSERT_TRUE(c.send("POST /v1/completions HTTP/1.0\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                     body));
  const std::string got = c.read_to_close();
  EXPECT_EQ(got.find("Transfer-Encoding"), std::string::npos) << got;
  EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
  EXPECT_EQ(got.substr(got.size() - 14), "data: [DONE]\n\n") << got;
}

TEST(HttpTransportTest, AResetClientsNonStreamingRequestIsCancelled) {
  ServerHarness h;
  h.service().set_tick(milliseconds(20));
  Client c(h.port());
  ASSERT_TRUE(c.send(completion_request(R"({"prompt":"Hi","max_tokens":100})")));
  ASSERT_TRUE(eventually([&] { return h.service().streams().size() == 1; }));
  const auto stream = h.service().streams()[0];
  linger reset{1, 0};  // close() then sends a reset, not a FIN
  ::setsockopt(c.fd_for_test(), SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
  c.close();
  EXPECT_TRUE(eventually([&] { return stream->cancelled(); }, milliseconds(1000)));
}

TEST(HttpTransportTest, APipeliningClientThatReadsNothingHoldsNoWorker) {
  HttpServerOptions o;
  o.http_threads = 1;  // one stalled write would stop everyone
  ServerHarness h(o);
  // /detokenize answers with the text of the ids sent: a large answer for
  // each request, more in all than the sockets between us can buffer.
  const Tokenizer& tokenizer = h.service().tokenizer();
  int32_t longest = 0;
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    if (tokenizer.token_to_piece(id).size() > tokenizer.token_to_piece(longest).size()) longest = id;
  }
  constexpr int kIds = 200'000;
  std::string ids;
  for (int i = 0; i < kIds; ++i) {
    if (i > 0) ids += ',';
    ids += std::to_string(longest);
  }
  const std::string body = "{\"tokens\":[" + ids + "]}";
  const std::string request =
      "POST /detokenize HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  constexpr int kRequests = 40;
  const size_t answer_bytes = kIds * tokenizer.token_to_piece(longest).size();
  ASSERT_GT(answer_bytes * kRequests, size_t{24} << 20) << "too small to fill the socket buffers";

  Client reader_of_nothing(h.port());
  ASSERT_TRUE(reader_of_nothing.ok());
  std::thread sender([&] {
    for (int i = 0; i < kRequests; ++i) {
      if (!reader_of_nothing.send(request)) return;  // blocks while the server reads nothing more
    }
  });
  // Its answers fill the socket buffers and the loop takes one over (how
  // soon depends on the machine: sanitizer builds parse slowly).
  const auto stall_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (h.get("/metrics").body.find("omnibus_http_responses_finished_by_loop_total 0\n") != std::string::npos) {
    if (std::chrono::steady_clock::now() > stall_deadline) {
      ::shutdown(reader_of_nothing.fd_for_test(), SHUT_RDWR);  // ends the sender's blocked send
      sender.join();
      FAIL() << "the answers never filled the socket buffers";
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  const auto start = std::chrono::steady_clock::now();
  HttpReply reply = h.get("/v1/models");
  EXPECT_EQ(reply.status, 200) << reply.body;
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(3000));  // not the 30 s write timeout

  // Then it reads: every answer arrives, whole and in order.
  std::string got;
  size_t answers = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
  char buf[1 << 16];
  bool garbled = false;
  while (!garbled && answers < kRequests && std::chrono::steady_clock::now() < deadline) {
    pollfd p{reader_of_nothing.fd_for_test(), POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::recv(reader_of_nothing.fd_for_test(), buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
    // Count whole answers and drop them, so `got` stays small.
    while (true) {
      const size_t head_end = got.find("\r\n\r\n");
      if (head_end == std::string::npos) break;
      const size_t length_at = got.find("Content-Length: ");
      garbled = got.rfind("HTTP/1.1 200 ", 0) != 0 || length_at > head_end;
      EXPECT_FALSE(garbled) << got.substr(0, 200);
      if (garbled) break;
      const size_t length = std::stoul(got.substr(length_at + 16));
      if (got.size() < head_end + 4 + length) break;
      EXPECT_GT(length, answer_bytes);
      got.erase(0, head_end + 4 + length);
      ++answers;
    }
  }
  if (answers < kRequests) ::shutdown(reader_of_nothing.fd_for_test(), SHUT_RDWR);  // unblocks the sender
  sender.join();
  EXPECT_EQ(answers, static_cast<size_t>(kRequests));
  const std::string metrics = h.get("/metrics").body;
  EXPECT_NE(metrics.find("omnibus_http_write_timeouts_total 0\n"), std::string::npos) << metrics;
}

}  // namespace
}  // namespace omnibus::server::testing
