// Streams under stress: an engine failure after the first chunk, a client
// that hangs up, a hundred streams at once, and stopping the server while
// streams are open. Also the server's lifecycle (bind errors, stop first).
#include <gtest/gtest.h>

#include <atomic>
#include <future>

#include "server/http_test_support.h"

namespace omnibus::server::testing {
namespace {

using std::chrono::milliseconds;

TEST(HttpStreamingTest, EngineErrorAfterTheFirstChunkIsAnErrorEvent) {
  ServerHarness h;
  h.service().fail_after(3);
  for (bool chat : {false, true}) {
    Json body{{"max_tokens", 10}, {"stream", true}};
    if (chat) {
      body["messages"] = {{{"role", "user"}, {"content", "Hi"}}};
    } else {
      body["prompt"] = "Hi";
    }
    HttpReply r = h.post(chat ? "/v1/chat/completions" : "/v1/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    const auto data = sse_data(r.body);
    ASSERT_GE(data.size(), 3u);
    EXPECT_EQ(data.back(), "[DONE]");
    const Json error = Json::parse(data[data.size() - 2]);
    ASSERT_TRUE(error["error"].is_object()) << r.body;
    EXPECT_EQ(error["error"]["type"], "server_error");
    EXPECT_NE(error["error"]["message"].get<std::string>().find("scripted failure"), std::string::npos);
    // Text came before the error.
    const Json first_text = Json::parse(data[chat ? 1 : 0]);
    EXPECT_TRUE(first_text.contains("choices")) << first_text.dump();
  }
}

TEST(HttpStreamingTest, ErrorInOneChoiceCancelsTheOthers) {
  ServerHarness h;
  h.service().fail_after(2);
  HttpReply r = h.post("/v1/completions", Json{{"prompt", "Hi"}, {"max_tokens", 10}, {"stream", true}, {"n", 3}});
  const auto data = sse_data(r.body);
  EXPECT_EQ(data.back(), "[DONE]");
  EXPECT_TRUE(Json::parse(data[data.size() - 2])["error"].is_object());
  size_t errors = 0;
  for (const std::string& d : data) errors += d.find("\"error\"") != std::string::npos;
  EXPECT_EQ(errors, 1u);  // one error event, then the stream ends
}

TEST(HttpStreamingTest, ClientHangingUpCancelsTheSequence) {
  ServerHarness h;
  h.service().set_tick(milliseconds(20));
  RawConnection conn(h.port());
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE(conn.send_post("/v1/completions", R"({"prompt": "Hi", "max_tokens": 100, "stream": true})"));
  const std::string got = conn.read_until("Hello");
  ASSERT_NE(got.find("data: "), std::string::npos) << got;
  ASSERT_EQ(h.service().streams().size(), 1u);
  const auto stream = h.service().streams()[0];
  EXPECT_FALSE(stream->cancelled());
  conn.close();
  EXPECT_TRUE(eventually([&] { return stream->cancelled(); }, milliseconds(1000)));
  EXPECT_TRUE(eventually([&] { return h.service().active() == 0; }, milliseconds(1000)));
  EXPECT_TRUE(eventually([&] {
    return h.get("/metrics").body.find("omnibus_http_client_disconnects_total 1") != std::string::npos;
  }));
}

TEST(HttpStreamingTest, AHundredStreamsAtOnce) {
  ServerHarness h;
  constexpr int kStreams = 100;
  std::vector<std::future<std::string>> results;
  results.reserve(kStreams);
  for (int i = 0; i < kStreams; ++i) {
    results.push_back(std::async(std::launch::async, [&h, i] {
      const Json body{{"messages", {{{"role", "user"}, {"content", "Hi " + std::to_string(i)}}}},
                      {"max_tokens", 4 + i % 3}, {"stream", true}};
      auto res = h.client()->Post("/v1/chat/completions", body.dump(), "application/json");
      if (!res) return std::string("ERR ") + httplib::to_string(res.error());
      return res->body;
    }));
  }
  int complete = 0;
  for (int i = 0; i < kStreams; ++i) {
    const std::string got = results[static_cast<size_t>(i)].get();
    if (got.rfind("ERR", 0) == 0) ADD_FAILURE() << got;
    const auto data = sse_data(got);
    if (data.empty() || data.back() != "[DONE]") continue;
    std::string text;
    for (const std::string& d : data) {
      if (d == "[DONE]") continue;
      text += Json::parse(d)["choices"][0]["delta"].value("content", "");
    }
    const char* expected[] = {"Hello world! ", "Hello world! Hello", "Hello world! Hello world"};
    EXPECT_EQ(text, expected[i % 3]) << "stream " << i;
    ++complete;
  }
  EXPECT_EQ(complete, kStreams);
  EXPECT_EQ(h.service().submitted().size(), static_cast<size_t>(kStreams));
}

TEST(HttpStreamingTest, StopEndsOpenStreamsAndWaitingRequests) {
  ServerHarness h;
  h.service().set_tick(milliseconds(20));
  auto streaming = std::async(std::launch::async, [&h] {
    return h.post("/v1/completions", Json{{"prompt", "Hi"}, {"max_tokens", 120}, {"stream", true}});
  });
  auto waiting = std::async(std::launch::async, [&h] {
    return h.post("/v1/completions", Json{{"prompt", "Hi"}, {"max_tokens", 120}});
  });
  ASSERT_TRUE(eventually([&] { return h.service().streams().size() == 2; }));
  std::this_thread::sleep_for(milliseconds(60));
  const auto started = std::chrono::steady_clock::now();
  h.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - started, milliseconds(2000));

  const HttpReply s = streaming.get();
  const auto data = sse_data(s.body);
  ASSERT_GE(data.size(), 2u) << s.body;
  EXPECT_EQ(data.back(), "[DONE]");
  EXPECT_TRUE(Json::parse(data[data.size() - 2])["error"].is_object());
  const HttpReply w = waiting.get();
  EXPECT_EQ(w.status, 503) << w.body;
  for (const auto& stream : h.service().streams()) EXPECT_TRUE(stream->cancelled());
}

TEST(HttpStreamingTest, BindFailureNamesTheAddress) {
  ServerHarness h;
  FakeInferenceService service;
  HttpServerOptions options;
  options.port = h.port();
  HttpServer second(service, options);
  const Status s = second.bind();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("127.0.0.1:" + std::to_string(h.port())), std::string::npos) << s.to_string();

  options.port = 70000;
  HttpServer bad_port(service, options);
  EXPECT_FALSE(bad_port.bind().is_ok());
}

TEST(HttpStreamingTest, StopBeforeServeMakesServeReturn) {
  FakeInferenceService service;
  HttpServerOptions options;
  options.port = 0;
  HttpServer server(service, options);
  ASSERT_TRUE(server.bind().is_ok());
  EXPECT_GT(server.port(), 0);
  server.stop();
  auto done = std::async(std::launch::async, [&server] { server.serve(); });
  EXPECT_EQ(done.wait_for(std::chrono::seconds(2)), std::future_status::ready);
}

TEST(HttpStreamingTest, StopRightAfterServeStartsReturns) {
  FakeInferenceService service;
  for (int i = 0; i < 20; ++i) {
    HttpServerOptions options;
    options.port = 0;
    options.http_threads = 2;
    HttpServer server(service, options);
    ASSERT_TRUE(server.bind().is_ok());
    std::thread serving([&server] { server.serve(); });
    server.stop();
    serving.join();
  }
}

}  // namespace
}  // namespace omnibus::server::testing
