// `omnibus serve`: the OpenAI-compatible HTTP server over a ServingEngine.
// SIGINT/SIGTERM drain: /health turns 503, new requests get 503, running
// ones finish (up to --drain-timeout-s), then the process exits.
#include <fmt/format.h>

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/timer.h"
#include "bench/machine_limits.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/sampling_flags.h"
#include "engine/deferred_service.h"
#include "engine/serving_engine.h"
#include "server/http_server.h"

namespace omnibus::cli {
namespace {

struct ServeOptions {
  ModelOptions model;
  server::HttpServerOptions http;
  ServingEngineOptions engine;
  std::string batching = "continuous";
  int64_t kv_cache_mib = 512;
  int64_t kv_import_max_mib = 64;
  bool no_prefix_cache = false;
  bool no_window_kv = false;
  double slo_ttft_ms = 0;
  double slo_tpot_ms = 0;
  std::string chat_template;
  std::string reasoning_format = "auto";
  std::string alias;
  std::vector<std::string> cors_origins;  // --cors-origin, as given (HttpServerOptions::cors once parsed)
  double drain_timeout_s = 30;
  bool no_machine_probe = false;
  // The HTTP transport's deadlines, in seconds (HttpServerOptions has them in ms).
  double header_timeout_s = 10;
  double body_timeout_s = 60;
  double idle_timeout_s = 15;
  double write_timeout_s = 30;
};

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

// The id /v1/models lists: --alias, else the file name without ".gguf".
std::string model_id_for(const ServeOptions& o, const std::string& path) {
  if (!o.alias.empty()) return o.alias;
  std::string name = std::filesystem::path(path).filename().string();
  if (name.size() > 5 && name.ends_with(".gguf")) name.resize(name.size() - 5);
  return name;
}

// Blocks SIGINT/SIGTERM in every thread (call before starting any) and
// returns the set, for the watcher thread to sigwait on.
sigset_t block_termination_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

// The model, its chat format and the engine over them.
Result<std::unique_ptr<ServingEngine>> load_engine(const ServeOptions& o, Backend& backend) {
  OMNIBUS_ASSIGN_OR_RETURN(auto loaded, load_model(o.model));
  OMNIBUS_ASSIGN_OR_RETURN(ChatFormat format, chat_format_for(loaded.tokenizer->vocab(), o.chat_template));
  warn_if_unrecognised(format);
  if (o.reasoning_format == "none") format.extract_reasoning = false;
  return ServingEngine::create(loaded.model, backend, std::move(loaded.tokenizer), format, o.engine);
}

int serve(ServeOptions& o) {
  const sigset_t signals = block_termination_signals();
  // A server logs each request and its start-up by default (run and chat
  // stay quiet unless --verbose).
  if (log_level() > LogLevel::kInfo) set_log_level(LogLevel::kInfo);
  auto policy = parse_batching_policy(o.batching);
  if (!policy.is_ok()) return fail(policy.status());
  o.engine.scheduler.policy = *policy;
  auto cors = server::CorsPolicy::parse(o.cors_origins);
  if (!cors.is_ok()) return fail(cors.status());
  o.http.cors = std::move(cors).value();
  o.engine.kv_cache_bytes = o.kv_cache_mib << 20;
  o.http.max_kv_import_bytes = static_cast<size_t>(o.kv_import_max_mib) << 20;
  o.http.header_timeout = to_ms(o.header_timeout_s);
  o.http.body_timeout = to_ms(o.body_timeout_s);
  o.http.idle_timeout = to_ms(o.idle_timeout_s);
  o.http.write_timeout = to_ms(o.write_timeout_s);
  o.engine.prefix_caching = !o.no_prefix_cache;
  o.engine.window_kv = !o.no_window_kv;
  o.engine.slo = {o.slo_ttft_ms / 1e3, o.slo_tpot_ms / 1e3};
  o.engine.kv_type = o.model.kv_type;

  const std::string path = o.model.model_path.empty() ? default_model_path() : o.model.model_path;
  o.engine.model_id = model_id_for(o, path);

  // Listen first: while the model loads, /health says 503 "loading" (and
  // so does every other route but /metrics) instead of refusing connections.
  DeferredService service;
  auto made = make_backend(o.model);
  if (!made.is_ok()) return fail(made.status());
  Backend& backend = **made;              // outlives the engine it makes runners for
  std::unique_ptr<ServingEngine> engine;  // outlives `http`, which points at it through `service`
  server::HttpServer http(service, o.http);
  Status bound = http.bind();
  if (!bound.is_ok()) return fail(bound);
  log_info("loading {}; until it is ready every route but /metrics answers 503", path);

  std::atomic<bool> load_failed{false};
  std::thread loader([&] {
    if (!o.no_machine_probe) {
      // The ceilings /metrics reports MBU and MFU against (~0.5 s).
      const bench::MachineLimits limits = bench::measure_machine_limits(backend.threads(), 0.15);
      o.engine.machine_memory_bandwidth = limits.memory_bandwidth;
      o.engine.machine_peak_flops = limits.peak_flops;
      log_info("machine: {:.1f} GB/s memory read bandwidth, {:.0f} GFLOP/s peak FP32 FMA ({} threads)",
               limits.memory_bandwidth / 1e9, limits.peak_flops / 1e9, backend.threads());
    }
    Result<std::unique_ptr<ServingEngine>> created = load_engine(o, backend);
    if (created.is_ok()) {
      engine = std::move(*created);
      service.set(engine.get());
      log_info("serving {} on http://{}:{} ({}, {} batching{})", o.engine.model_id, o.http.host, http.port(),
               backend.describe(), o.batching, o.http.api_key.empty() ? "" : ", API key required");
    } else {
      log_error("{}", created.status().to_string());
      load_failed.store(true);
      kill(getpid(), SIGTERM);  // pending for the process until the watcher's sigwait takes it
    }
  });

  std::thread watcher([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (!load_failed.load()) log_info("signal {}: draining (new requests get 503), then stopping", sig);
    loader.join();  // loading is not interruptible; it is short next to the drain
    if (engine) {
      engine->drain();
      Stopwatch waited;
      while (waited.seconds() < o.drain_timeout_s && !engine->idle())
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      // Let the HTTP threads write the last responses out.
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    http.stop();
  });
  http.serve();
  watcher.join();
  engine.reset();  // ends anything still open as cancelled
  return load_failed.load() ? 1 : 0;
}

}  // namespace

CommandRunner add_serve_command(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server (continuous batching, paged KV cache)");
  add_model_options(*cmd, o->model);
  add_kv_type_option(*cmd, o->model);
  add_backend_option(*cmd, o->model);
  cmd->add_option("--host", o->http.host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", o->http.port, "Port to listen on (0: any free port)")->capture_default_str()->check(CLI::Range(0, 65535));
  cmd->add_option("--api-key", o->http.api_key, "Require 'Authorization: Bearer KEY' on every route but /health");
  cmd->add_option("--cors-origin", o->cors_origins,
                  "Let browser pages from ORIGIN call the server (CORS): scheme://host[:port] or '*'; repeat it or "
                  "separate origins by commas")
      ->type_name("ORIGIN")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);  // one value per --cors-origin, repeatable
  cmd->add_option("--alias", o->alias, "Model id to list and accept (default: the file name without .gguf)");
  cmd->add_option("-c,--ctx-size", o->engine.context_length, "Most tokens per sequence (0: the model's training context)")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  cmd->add_option("--max-batched-tokens", o->engine.scheduler.max_batched_tokens,
                  "Token budget per engine step (decodes + prefill chunks)")->capture_default_str()->check(CLI::Range(1, 65536));
  cmd->add_option("--max-seqs", o->engine.scheduler.max_seqs, "Most sequences running at once")
      ->capture_default_str()->check(CLI::Range(1, 4096));
  cmd->add_option("--max-queue", o->engine.max_queue,
                  "Most requests waiting for room in the running set (a seat and KV blocks); beyond it, 429")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--batching", o->batching, "continuous | dynamic | static")->capture_default_str();
  cmd->add_option("--batch-size", o->engine.scheduler.batch_size, "static/dynamic: sequences per batch")
      ->capture_default_str()->check(CLI::Range(1, 4096));
  cmd->add_option("--batch-wait-ms", o->engine.scheduler.batch_wait_ms, "dynamic: start a partial batch after this")
      ->capture_default_str()->check(CLI::Range(0.0, 3.6e6));
  cmd->add_option("--kv-block-size", o->engine.kv_block_size, "Tokens per KV block")->capture_default_str()->check(CLI::Range(1, 1024));
  cmd->add_option("--kv-cache-mib", o->kv_cache_mib, "KV cache pool, allocated once at start")
      ->capture_default_str()->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_flag("--no-prefix-cache", o->no_prefix_cache, "Do not reuse cached prompt prefixes");
  cmd->add_flag("--no-window-kv", o->no_window_kv,
                "Keep sliding-window layers' K/V for the whole context (default: only what each window still sees)");
  cmd->add_option("--slo-ttft-ms", o->slo_ttft_ms, "TTFT objective for the goodput counter (0: none)")->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--slo-tpot-ms", o->slo_tpot_ms, "TPOT objective for the goodput counter (0: none)")->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--chat-template", o->chat_template,
                  "Override the chat template: chatml, llama3, llama2, mistral, mistral-v7, mistral-v7-tekken, gemma, "
                  "qwen3, qwen3-thinking, phi3, phi4-mini, phi4, gpt-oss");
  cmd->add_option("--reasoning-format", o->reasoning_format,
                  "auto: a reasoning model's thoughts (a <think> block, gpt-oss's analysis channel) are returned as "
                  "reasoning_content; none: left in content")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "none"}));
  cmd->add_option("--http-threads", o->http.http_threads,
                  "HTTP worker threads: bounds requests handled at once (streams included), not connections")
      ->capture_default_str()->check(CLI::Range(4, 4096));
  cmd->add_option("--max-connections", o->http.max_connections,
                  "Most open client connections; beyond it a new one gets 503 (lowered to fit ulimit -n)")
      ->capture_default_str()->check(CLI::Range(8, 1 << 20));
  cmd->add_option("--http-header-timeout-s", o->header_timeout_s,
                  "A request's whole head must arrive within this (else 408)")
      ->capture_default_str()->check(CLI::Range(0.1, 3600.0));
  cmd->add_option("--http-body-timeout-s", o->body_timeout_s, "A request's whole body must arrive within this (else 408)")
      ->capture_default_str()->check(CLI::Range(0.1, 3600.0));
  cmd->add_option("--http-idle-timeout-s", o->idle_timeout_s, "Close a kept-alive connection idle this long")
      ->capture_default_str()->check(CLI::Range(0.1, 3600.0));
  cmd->add_option("--http-write-timeout-s", o->write_timeout_s,
                  "Drop a client that reads nothing of its response for this long")
      ->capture_default_str()->check(CLI::Range(0.1, 3600.0));
  cmd->add_flag("--kv-import", o->http.allow_kv_import,
                "Accept POST /v1/kv/import: K/V handed over by a prefill instance enters the prefix cache as it comes "
                "(trusts whoever can reach this server; docs/serving.md)");
  cmd->add_option("--kv-import-max-mib", o->kv_import_max_mib,
                  "--kv-import: the largest blob accepted (bodies over 8 MiB on other routes, or imports without the "
                  "API key, are refused before they are read)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->add_flag("--no-machine-probe", o->no_machine_probe,
                "Skip measuring bandwidth and FLOP/s at start (/metrics then reports no MBU/MFU)");
  cmd->add_option("--drain-timeout-s", o->drain_timeout_s, "On SIGINT/SIGTERM, wait this long for running requests")
      ->capture_default_str()->check(CLI::Range(0.0, 3600.0));
  add_speculation_flags(*cmd, o->engine.speculation);
  cmd->add_option("--draft-max-seqs", o->engine.speculative_max_seqs,
                  "--draft: guess only while at most this many sequences are decoding")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  return [o] { return serve(*o); };
}

}  // namespace omnibus::cli
