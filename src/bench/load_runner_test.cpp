// The client and runner against a scripted in-process server whose timing
// is known: the first chunk after 80 ms, then a chunk every 20 ms. Timing
// checks are lower bounds (a slow machine only makes them later), plus one
// loose upper bound that only a hang would break.
#include "bench/load_runner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/timer.h"
#include "bench/benchmark.h"
#include "bench/html_report.h"
#include "bench/run_summary.h"
#include "third_party/httplib_include.h"

namespace omnibus::bench {
namespace {

using Json = nlohmann::json;
constexpr int kChunks = 5;

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

class ScriptedServer {
 public:
  ScriptedServer() {
    server_.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"object":"list","data":[{"id":"scripted"}]})", "application/json");
    });
    server_.Post("/tokenize", [](const httplib::Request& req, httplib::Response& res) {
      Json body = Json::parse(req.body);
      const std::string text = body.value("content", "");
      Json tokens = Json::array();
      for (size_t i = 0; i < (text.size() + 3) / 4; ++i) tokens.push_back(1);
      res.set_content(Json{{"tokens", tokens}}.dump(), "application/json");
    });
    server_.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      Json body = Json::parse(req.body);
      {
        std::lock_guard<std::mutex> lock(bodies_mutex_);
        bodies_.push_back(req.body);
      }
      ++requests_;
      if (body.value("model", "") == "overloaded") {
        res.status = 429;
        res.set_content(R"({"error":{"message":"queue full","type":"rate_limit"}})", "application/json");
        return;
      }
      const bool fail_midway = body.value("model", "") == "breaks";
      res.set_chunked_content_provider("text/event-stream", [fail_midway](size_t, httplib::DataSink& sink) {
        sleep_ms(80);
        for (int i = 0; i < kChunks; ++i) {
          if (i > 0) sleep_ms(20);
          if (fail_midway && i == 2) {
            const std::string err = "data: {\"error\":{\"message\":\"engine fell over\"}}\n\ndata: [DONE]\n\n";
            sink.write(err.data(), err.size());
            sink.done();
            return true;
          }
          const std::string chunk = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok" +
                                    std::to_string(i) + " \"}}]}\n\n";
          sink.write(chunk.data(), chunk.size());
        }
        const std::string tail =
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":42,\"completion_tokens\":5}}\n\ndata: [DONE]\n\n";
        sink.write(tail.data(), tail.size());
        sink.done();
        return true;
      });
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // bind_to_any_port already listens: connections queue until the loop accepts.
  }
  ~ScriptedServer() {
    server_.stop();
    thread_.join();
  }
  ClientOptions client(const std::string& model = "scripted") const {
    ClientOptions o;
    o.url = *parse_server_url("http://127.0.0.1:" + std::to_string(port_) + "/v1");
    o.model = model;
    return o;
  }
  int requests() const { return requests_.load(); }
  std::string last_body() const {
    std::lock_guard<std::mutex> lock(bodies_mutex_);
    return bodies_.empty() ? std::string() : bodies_.back();
  }
  std::vector<std::string> bodies() const {
    std::lock_guard<std::mutex> lock(bodies_mutex_);
    return bodies_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<int> requests_{0};
  mutable std::mutex bodies_mutex_;
  std::vector<std::string> bodies_;
};

TEST(OpenAiClient, TimesAStreamedAnswer) {
  ScriptedServer server;
  ClientOptions options = server.client();
  options.ignore_eos = true;
  OpenAiClient client(options);
  RequestRecord r;
  client.send({{"user", "hi"}}, 5, now_seconds(), r);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.http_status, 200);
  EXPECT_EQ(r.output_text, "tok0 tok1 tok2 tok3 tok4 ");
  EXPECT_EQ(r.output_tokens, 5);
  EXPECT_EQ(r.input_tokens, 42);
  EXPECT_TRUE(r.usage_from_server);
  ASSERT_EQ(r.chunk_s.size(), 5u);
  EXPECT_GE(r.ttft(), 0.079);
  EXPECT_LT(r.ttft(), 30.0);
  EXPECT_GT(r.tpot(), 0.0);
  // Gaps, and their sum, can read shorter than the server's 20 ms (the
  // first chunk read late when this thread was descheduled: a sum of 78.3
  // ms was seen); no chunk can arrive before it was sent, the last one 80 +
  // 4 x 20 ms after the request.
  EXPECT_GE(r.chunk_s.back() - r.sent_s, 0.159);
  EXPECT_GE(r.done_s - r.sent_s, 0.159);
  EXPECT_EQ(r.itls().size(), 4u);
  Json sent = Json::parse(server.last_body());
  EXPECT_EQ(sent["stream"], true);
  EXPECT_EQ(sent["stream_options"]["include_usage"], true);
  EXPECT_EQ(sent["ignore_eos"], true);
  EXPECT_EQ(sent["max_tokens"], 5);
  EXPECT_EQ(sent["messages"][0]["content"], "hi");
}

TEST(OpenAiClient, ErrorsAreRecordedNotThrown) {
  ScriptedServer server;
  RequestRecord rejected;
  OpenAiClient(server.client("overloaded")).send({{"user", "hi"}}, 5, now_seconds(), rejected);
  EXPECT_FALSE(rejected.ok);
  EXPECT_EQ(rejected.http_status, 429);
  EXPECT_NE(rejected.error.find("queue full"), std::string::npos) << rejected.error;

  RequestRecord broken;
  OpenAiClient(server.client("breaks")).send({{"user", "hi"}}, 5, now_seconds(), broken);
  EXPECT_FALSE(broken.ok);
  EXPECT_NE(broken.error.find("engine fell over"), std::string::npos) << broken.error;

  ClientOptions nowhere = server.client();
  nowhere.url = *parse_server_url("http://127.0.0.1:1");
  RequestRecord refused;
  OpenAiClient(nowhere).send({{"user", "hi"}}, 5, now_seconds(), refused);
  EXPECT_FALSE(refused.ok);
  EXPECT_EQ(refused.http_status, 0);
  EXPECT_FALSE(refused.error.empty());
}

TEST(OpenAiClient, ModelsAndTokenCounts) {
  ScriptedServer server;
  OpenAiClient client(server.client());
  EXPECT_EQ(*client.list_models(), std::vector<std::string>{"scripted"});
  EXPECT_EQ(*client.count_tokens("12345678"), 2);
}

TEST(ServerUrl, AcceptsRootsAndRefusesPaths) {
  EXPECT_EQ(parse_server_url("http://h:1/v1/")->origin, "http://h:1");
  EXPECT_EQ(parse_server_url("https://h")->origin, "https://h");
  EXPECT_FALSE(parse_server_url("h:1").is_ok());
  EXPECT_FALSE(parse_server_url("http://h:1/api").is_ok());
  EXPECT_FALSE(parse_server_url("http://").is_ok());
}

TEST(LoadRunner, ClosedLoopRunsEveryTurnOfEveryConversation) {
  ScriptedServer server;
  std::vector<Conversation> convs(4);
  for (Conversation& c : convs) c.turns = {{"one", 5, 1}, {"two", 5, 1}};
  LoadOptions load;
  load.concurrency = 2;
  int64_t last_done = -1, last_expected = -1;
  RunResult run = run_load(convs, server.client(), load, [&](int64_t done, int64_t expected, double) {
    last_done = done;
    last_expected = expected;
  });
  ASSERT_EQ(run.records.size(), 8u);
  EXPECT_EQ(server.requests(), 8);
  EXPECT_EQ(last_done, 8);
  EXPECT_EQ(last_expected, 8);
  for (size_t i = 0; i < run.records.size(); ++i) {
    EXPECT_EQ(run.records[i].index, static_cast<int64_t>(i));
    EXPECT_TRUE(run.records[i].ok) << run.records[i].error;
    if (i > 0) {
      EXPECT_GE(run.records[i].sent_s, run.records[i - 1].sent_s);
    }
  }
  // Two users, four two-turn conversations of >= 160 ms each turn: >= 4 x 160 ms.
  EXPECT_GE(run.duration_s, 0.64);
  RunSummary s = summarize_run(run, *parse_slo("ttft=60s"), "closed");
  EXPECT_EQ(s.completed, 8);
  EXPECT_EQ(s.met_slo, 8);
  EXPECT_DOUBLE_EQ(s.slo_attainment, 1.0);
  EXPECT_DOUBLE_EQ(s.output_token_throughput, 40 / run.duration_s);
  EXPECT_GE(s.ttft.p50, 0.079);
  // An unmeetable SLO: nothing counts toward goodput.
  EXPECT_EQ(summarize_run(run, *parse_slo("ttft=1us"), "closed").goodput, 0.0);
}

TEST(LoadRunner, FailedTurnEndsItsConversation) {
  ScriptedServer server;
  std::vector<Conversation> convs(2);
  for (Conversation& c : convs) c.turns = {{"one", 5, 1}, {"two", 5, 1}, {"three", 5, 1}};
  RunResult run = run_load(convs, server.client("overloaded"), LoadOptions{});
  EXPECT_EQ(run.records.size(), 2u);  // the first turn of each failed; the rest were never sent
  RunSummary s = summarize_run(run, Slo{}, "flood");
  EXPECT_EQ(s.failed, 2);
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_NE(s.errors[0].find("429"), std::string::npos);
}

TEST(Benchmark, SweepRunsEachRateAndReportsEverything) {
  ScriptedServer server;
  BenchConfig config;
  config.client = server.client("");  // resolved from /v1/models
  config.workload.input_len = 8;
  config.workload.output_len = 5;
  config.num_requests = 3;
  config.sweep_rates = {50, 100};
  config.slo = *parse_slo("ttft=60s");
  Result<BenchOutcome> outcome = run_benchmark(config);
  ASSERT_TRUE(outcome.is_ok()) << outcome.status().to_string();
  EXPECT_EQ(outcome->model, "scripted");
  EXPECT_TRUE(outcome->token_counts_from_server);
  ASSERT_EQ(outcome->runs.size(), 2u);
  EXPECT_EQ(outcome->runs[1].summary.offered_rate, 100);
  EXPECT_EQ(outcome->best_rate, 100);
  const std::string table = format_outcome(*outcome, config);
  EXPECT_NE(table.find("highest rate meeting the SLO"), std::string::npos) << table;
  Json j = outcome_json(*outcome, config, "omnibus bench ...");
  EXPECT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][0]["requests"].size(), 3u);
  EXPECT_EQ(j["runs"][0]["requests"][0]["output_tokens"], 5);

  std::vector<ReportedRun> reported;
  for (const BenchRun& r : outcome->runs) reported.push_back({r.label, r.summary, &r.result});
  const std::string html = render_html_report("t <&>", "cmd", reported, config.slo);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("Goodput and throughput against offered rate"), std::string::npos);
  EXPECT_NE(html.find("t &lt;&amp;&gt;"), std::string::npos);
  // Self-contained: nothing fetched (the SVG namespace URI is not a fetch).
  for (const char* fetch : {"<script", "src=", "href=", "@import", "url("}) {
    EXPECT_EQ(html.find(fetch), std::string::npos) << fetch;
  }
}

TEST(Benchmark, WarmupRequestsGoFirstAndAreNotMeasured) {
  ScriptedServer server;
  BenchConfig config;
  config.client = server.client();
  config.workload.input_len = 8;
  config.num_requests = 3;
  config.warmup = 2;
  Result<BenchOutcome> outcome = run_benchmark(config);
  ASSERT_TRUE(outcome.is_ok()) << outcome.status().to_string();
  EXPECT_EQ(server.requests(), 5);
  EXPECT_EQ(outcome->runs[0].result.records.size(), 3u);
}

// Warm-up must fill the prefix cache with the measured runs' system prompts,
// and no run may resend a whole prompt an earlier one sent (a sweep's later
// rates would find it cached and look fast).
TEST(Benchmark, WarmupAndSweepRunsShareSystemPromptsButNeverWholePrompts) {
  ScriptedServer server;
  BenchConfig config;
  config.client = server.client();
  config.workload.kind = WorkloadKind::kSharedPrefix;
  config.workload.num_prefixes = 2;
  config.workload.prefix_len = 40;
  config.workload.input_len = 8;
  config.num_requests = 2;
  config.warmup = 2;
  config.sweep_rates = {50, 100};
  Result<BenchOutcome> outcome = run_benchmark(config);
  ASSERT_TRUE(outcome.is_ok()) << outcome.status().to_string();
  const std::vector<std::string> bodies = server.bodies();
  ASSERT_EQ(bodies.size(), 6u);
  std::set<std::string> systems, users;
  for (const std::string& b : bodies) {
    const Json messages = Json::parse(b)["messages"];
    ASSERT_EQ(messages.size(), 2u);
    systems.insert(messages[0]["content"].get<std::string>());
    users.insert(messages[1]["content"].get<std::string>());
  }
  EXPECT_EQ(systems.size(), 2u);  // the same two system prompts throughout
  EXPECT_EQ(users.size(), 6u);    // every question new
}

TEST(HtmlReport, ThroughputOverTimeSpreadsTokensOverChunks) {
  RunResult run;
  RequestRecord r;
  r.ok = true;
  r.output_tokens = 10;
  r.chunk_s = {0.2, 0.4, 1.5, 1.7, 1.9};  // 2 tokens a chunk: 4 in [0, 1), 6 in [1, 2)
  r.done_s = 1.9;
  run.records.push_back(r);
  auto points = output_throughput_over_time(run);
  ASSERT_GE(points.size(), 2u);
  EXPECT_DOUBLE_EQ(points[0].second, 4);
  EXPECT_DOUBLE_EQ(points[1].second, 6);
}

}  // namespace
}  // namespace omnibus::bench
