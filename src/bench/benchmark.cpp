#include "bench/benchmark.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>

#include "base/log.h"

namespace omnibus::bench {
namespace {

using Json = nlohmann::json;

// Workload variant of the warm-up conversations: far from the variants the
// measured runs use (the configured one plus the sweep index).
constexpr uint64_t kWarmupVariant = 0x5eedf00dULL;

// How many conversations one run sends.
int64_t conversations_for(const BenchConfig& c, const LoadOptions& load) {
  if (c.duration_s > 0 && load.concurrency == 0 && std::isfinite(load.shape.rate)) {
    return std::max<int64_t>(1, static_cast<int64_t>(arrival_times_within(load.shape, c.duration_s, load.seed).size()));
  }
  return c.num_requests;
}

}  // namespace

Status validate(const BenchConfig& c) {
  OMNIBUS_RETURN_IF_ERROR(validate(c.workload));
  if (c.load.concurrency < 0) return Status::invalid_argument("--concurrency must be >= 0");
  if (c.load.concurrency == 0) OMNIBUS_RETURN_IF_ERROR(validate(c.load.shape));
  if (c.num_requests < 1) return Status::invalid_argument("--num-requests must be >= 1");
  if (c.warmup < 0) return Status::invalid_argument("--warmup must be >= 0");
  if (c.duration_s < 0) return Status::invalid_argument("--duration must be >= 0");
  if (!c.sweep_rates.empty() && c.load.concurrency > 0) {
    return Status::invalid_argument("--sweep-rate and --concurrency exclude each other (a sweep is open loop)");
  }
  for (double r : c.sweep_rates) {
    if (!(r > 0) || std::isinf(r)) return Status::invalid_argument(fmt::format("sweep rate {} must be a finite rate > 0", r));
  }
  if (!(c.slo_fraction > 0 && c.slo_fraction <= 1)) return Status::invalid_argument("the SLO fraction must be in (0, 1]");
  return Status::ok();
}

std::string describe_load(const LoadOptions& load) {
  if (load.concurrency > 0) return fmt::format("closed loop, {} users", load.concurrency);
  if (std::isinf(load.shape.rate)) return "flood (all at once)";
  if (load.shape.burstiness == 1) return fmt::format("poisson {:g} req/s", load.shape.rate);
  return fmt::format("gamma (burstiness {:g}) {:g} req/s", load.shape.burstiness, load.shape.rate);
}

Result<BenchOutcome> run_benchmark(BenchConfig config) {
  OMNIBUS_RETURN_IF_ERROR(validate(config));
  BenchOutcome outcome;
  OpenAiClient probe(config.client);
  if (config.client.model.empty()) {
    OMNIBUS_ASSIGN_OR_RETURN(std::vector<std::string> ids, probe.list_models());
    config.client.model = ids.front();
  }
  outcome.model = config.client.model;
  outcome.token_counts_from_server = probe.count_tokens("Hello world").is_ok();
  if (!outcome.token_counts_from_server) {
    log_warn("the server has no /tokenize; prompt lengths are estimated at ~4 bytes a token");
  }
  TokenCounter counter = [&](const std::string& text) -> int64_t {
    if (outcome.token_counts_from_server) {
      Result<int64_t> n = probe.count_tokens(text);
      if (n.is_ok()) return *n;
    }
    return estimate_tokens(text);
  };

  if (config.warmup > 0) {
    // Same system prompts and document as the measured runs (so warm-up
    // fills the prefix cache with them), other questions.
    WorkloadSpec spec = config.workload;
    spec.variant = kWarmupVariant;
    OMNIBUS_ASSIGN_OR_RETURN(std::vector<Conversation> warm, make_workload(spec, config.warmup, counter));
    LoadOptions one_at_a_time = config.load;
    one_at_a_time.concurrency = 1;
    const RunResult warmed = run_load(warm, config.client, one_at_a_time);
    for (const RequestRecord& r : warmed.records) {
      if (!r.ok) return Status::io_error(fmt::format("warm-up request failed: {}", r.error));
    }
  }

  std::vector<LoadOptions> loads;
  if (config.sweep_rates.empty()) {
    loads.push_back(config.load);
  } else {
    for (double rate : config.sweep_rates) {
      LoadOptions l = config.load;
      l.shape.rate = rate;
      loads.push_back(l);
    }
  }
  for (size_t i = 0; i < loads.size(); ++i) {
    const LoadOptions& load = loads[i];
    const int64_t count = conversations_for(config, load);
    // Each sweep run asks new questions: a rate must not find whole prompts
    // that an earlier rate left in the prefix cache.
    WorkloadSpec spec = config.workload;
    spec.variant = config.workload.variant + i;
    OMNIBUS_ASSIGN_OR_RETURN(std::vector<Conversation> workload, make_workload(spec, count, counter));
    BenchRun run;
    run.label = describe_load(load);
    ProgressFn progress = config.progress ? stderr_progress_bar(fmt::format("bench {}", run.label)) : nullptr;
    run.result = run_load(workload, config.client, load, progress);
    run.summary = summarize_run(run.result, config.slo, run.label);
    run.summary.offered_rate = load.concurrency == 0 && std::isfinite(load.shape.rate) ? load.shape.rate : 0;
    if (!config.sweep_rates.empty() && run.summary.slo_attainment >= config.slo_fraction) {
      outcome.best_rate = std::max(outcome.best_rate, load.shape.rate);
    }
    outcome.runs.push_back(std::move(run));
  }
  return outcome;
}

std::string format_outcome(const BenchOutcome& outcome, const BenchConfig& config) {
  std::string out = fmt::format("model: {}   workload: {}   api: {}{}\n", outcome.model,
                                workload_kind_name(config.workload.kind),
                                config.client.api == Api::kChat ? "chat" : "completions",
                                config.client.stream ? ", streaming" : ", not streaming");
  for (const BenchRun& run : outcome.runs) {
    out += '\n';  // not "\n" + string: GCC 12 misfires -Wrestrict on that
    out += format_summary(run.summary, config.slo);
  }
  if (config.sweep_rates.empty()) return out;
  out += fmt::format("\nsweep (SLO {}):\n  {:>8} {:>10} {:>10} {:>10} {:>12} {:>12}\n", config.slo.describe(), "rate",
                     "req/s", "goodput", "SLO met", "TTFT p90 ms", "TPOT p90 ms");
  for (const BenchRun& run : outcome.runs) {
    const RunSummary& s = run.summary;
    out += fmt::format("  {:>8g} {:>10.2f} {:>10.2f} {:>9.1f}% {:>12.0f} {:>12.1f}\n", s.offered_rate,
                       s.request_throughput, s.goodput, s.slo_attainment * 100, s.ttft.p90 * 1e3, s.tpot.p90 * 1e3);
  }
  if (outcome.best_rate > 0) {
    out += fmt::format("highest rate meeting the SLO for >= {:.0f}% of requests: {:g} req/s\n",
                       config.slo_fraction * 100, outcome.best_rate);
  } else {
    out += fmt::format("no rate met the SLO for >= {:.0f}% of requests\n", config.slo_fraction * 100);
  }
  return out;
}

Json outcome_json(const BenchOutcome& outcome, const BenchConfig& config, const std::string& command_line) {
  Json runs = Json::array();
  for (const BenchRun& run : outcome.runs) {
    runs.push_back({{"label", run.label},
                    {"summary", summary_json(run.summary)},
                    {"requests", records_json(run.result.records, config.slo)}});
  }
  return {{"command", command_line},
          {"url", config.client.url.origin},
          {"model", outcome.model},
          {"api", config.client.api == Api::kChat ? "chat" : "completions"},
          {"stream", config.client.stream},
          {"workload", workload_kind_name(config.workload.kind)},
          {"input_len", config.workload.input_len},
          {"output_len", config.workload.output_len},
          {"token_counts_from_server", outcome.token_counts_from_server},
          {"slo", config.slo.describe()},
          {"slo_fraction", config.slo_fraction},
          {"best_rate", outcome.best_rate > 0 ? Json(outcome.best_rate) : Json()},
          {"runs", std::move(runs)}};
}

Status write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::io_error(fmt::format("cannot write '{}'", path));
  out << text;
  out.close();
  if (!out) return Status::io_error(fmt::format("writing '{}' failed", path));
  return Status::ok();
}

}  // namespace omnibus::bench
