#include "cli/bench_flags.h"

#include <fmt/format.h>

#include <cstdlib>
#include <limits>
#include <sstream>

namespace omnibus::cli {
namespace {

Result<double> parse_rate(const std::string& text) {
  if (text == "inf" || text == "infinity") return std::numeric_limits<double>::infinity();
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(v > 0)) {
    return Status::invalid_argument(fmt::format("rate '{}' must be a number > 0 or 'inf'", text));
  }
  return v;
}

Result<std::vector<double>> parse_rates(const std::string& text) {
  std::vector<double> rates;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    OMNIBUS_ASSIGN_OR_RETURN(double r, parse_rate(item));
    rates.push_back(r);
  }
  return rates;
}

}  // namespace

void add_shared_bench_flags(CLI::App& cmd, BenchFlags& f) {
  bench::BenchConfig& c = f.config;
  cmd.add_option("--api", f.api, "chat | completions")->capture_default_str();
  cmd.add_flag("--no-stream", f.no_stream, "Do not stream (TTFT then equals end-to-end latency)");
  cmd.add_flag("--ignore-eos", c.client.ignore_eos, "Ask the server to generate past EOS (fixed output lengths)");
  cmd.add_option("--temperature", c.client.temperature, "Sampling temperature")->capture_default_str();
  cmd.add_option("--workload", f.workload, "random | shared-prefix | multi-turn | long-doc | code | jsonl")
      ->capture_default_str();
  cmd.add_option("--dataset", c.workload.dataset, "jsonl workload: the file");
  cmd.add_option("--input-len", c.workload.input_len, "Tokens per user turn")->capture_default_str();
  cmd.add_option("--output-len", c.workload.output_len, "max_tokens per turn")->capture_default_str();
  cmd.add_option("--len-jitter", c.workload.len_jitter, "Draw lengths in [1-j, 1+j] x the given")->capture_default_str();
  cmd.add_option("--num-prefixes", c.workload.num_prefixes, "shared-prefix: distinct system prompts")->capture_default_str();
  cmd.add_option("--prefix-len", c.workload.prefix_len, "shared-prefix: tokens per system prompt")->capture_default_str();
  cmd.add_option("--turns", c.workload.turns, "multi-turn: turns per conversation")->capture_default_str();
  cmd.add_option("--doc-len", c.workload.doc_len, "long-doc: tokens of the document")->capture_default_str();
  cmd.add_option("-n,--num-requests", c.num_requests, "Conversations to send per run")->capture_default_str();
  cmd.add_option("--rate", f.rate, "Arrival rate in requests/s ('inf': all at once)")->capture_default_str();
  cmd.add_option("--burstiness", c.load.shape.burstiness, "Gamma shape of the gaps (1: Poisson, <1: burstier)")
      ->capture_default_str();
  cmd.add_option("--slo", f.slo, "Objectives for goodput, e.g. ttft=500ms,tpot=50ms (also itl, e2e)")
      ->capture_default_str();
  cmd.add_option("--seed", c.workload.seed, "Seed of prompts and arrivals")->capture_default_str();
  cmd.add_option("--warmup", c.warmup, "Conversations sent one at a time first, not measured")->capture_default_str();
  cmd.add_flag("-q,--quiet", f.quiet, "No progress bar");
}

void add_target_and_sweep_flags(CLI::App& cmd, BenchFlags& f) {
  bench::BenchConfig& c = f.config;
  cmd.add_option("--url", f.url, "Server root (a trailing /v1 is fine)")->capture_default_str();
  cmd.add_option("--model", c.client.model, "Model id to request (default: the first /v1/models lists)");
  cmd.add_option("--api-key", c.client.api_key, "Bearer key (default: $OPENAI_API_KEY)");
  cmd.add_option("--duration", c.duration_s, "Open loop: send for this many seconds instead of -n");
  cmd.add_option("--concurrency", c.load.concurrency, "Closed loop: this many users, each waiting for its answer");
  cmd.add_option("--max-concurrency", c.load.max_concurrency, "Open loop: most requests in flight (0: 1024)");
  cmd.add_option("--sweep-rate", f.sweep_rates, "Comma-separated rates: one run each; reports the highest meeting the SLO");
  cmd.add_option("--slo-fraction", c.slo_fraction, "Share of requests a sweep rate must meet the SLO for")
      ->capture_default_str();
}

Status resolve_bench_flags(BenchFlags& f) {
  bench::BenchConfig& c = f.config;
  OMNIBUS_ASSIGN_OR_RETURN(c.client.url, bench::parse_server_url(f.url));
  if (f.api == "chat") {
    c.client.api = bench::Api::kChat;
  } else if (f.api == "completions") {
    c.client.api = bench::Api::kCompletions;
  } else {
    return Status::invalid_argument(fmt::format("--api '{}': use chat or completions", f.api));
  }
  if (c.client.api_key.empty()) {
    if (const char* key = std::getenv("OPENAI_API_KEY")) c.client.api_key = key;
  }
  c.client.stream = !f.no_stream;
  OMNIBUS_ASSIGN_OR_RETURN(c.workload.kind, bench::parse_workload_kind(f.workload));
  OMNIBUS_ASSIGN_OR_RETURN(c.load.shape.rate, parse_rate(f.rate));
  if (!f.sweep_rates.empty()) {
    OMNIBUS_ASSIGN_OR_RETURN(c.sweep_rates, parse_rates(f.sweep_rates));
  }
  OMNIBUS_ASSIGN_OR_RETURN(c.slo, bench::parse_slo(f.slo));
  c.load.seed = c.workload.seed;
  c.progress = !f.quiet;
  return bench::validate(c);
}

std::string command_line_of(const std::string& prefix, const CLI::App& cmd) {
  std::string line = prefix;
  for (const CLI::Option* o : cmd.get_options()) {
    if (o->count() == 0 || o->get_name() == "--help") continue;
    line += " " + o->get_name();
    if (o->get_expected_min() > 0) line += " " + o->as<std::string>();
  }
  return line;
}

}  // namespace omnibus::cli
