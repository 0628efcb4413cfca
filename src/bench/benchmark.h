// One `omnibus bench` invocation: resolves the model and the token counter
// from the server, builds the workload, runs it once or once per rate of a
// sweep, and summarises each run. Writing the outputs is separate, so
// `omnibus advise` can run trials through the same path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "bench/load_runner.h"
#include "bench/openai_client.h"
#include "bench/run_summary.h"
#include "bench/slo.h"
#include "bench/workload.h"

namespace omnibus::bench {

struct BenchConfig {
  ClientOptions client;     // client.model empty: the first id /v1/models lists
  WorkloadSpec workload;
  LoadOptions load;
  int64_t num_requests = 100;   // conversations per run (when duration_s is 0)
  double duration_s = 0;        // > 0, open loop at a finite rate: send for this long
  std::vector<double> sweep_rates;  // non-empty: one run per rate (Poisson/gamma)
  Slo slo;
  double slo_fraction = 0.9;    // a sweep's best rate meets the SLO for this share of requests
  bool progress = false;
  // Conversations sent one at a time before the measured runs (from the
  // same workload spec with another seed), to warm the server up.
  int64_t warmup = 0;
};

struct BenchRun {
  std::string label;
  RunResult result;
  RunSummary summary;
};

struct BenchOutcome {
  std::string model;
  bool token_counts_from_server = false;
  std::vector<BenchRun> runs;
  // Sweep: the highest offered rate meeting the SLO for slo_fraction of
  // requests (< 0: none did). Single run: < 0.
  double best_rate = -1;
};

Status validate(const BenchConfig& config);
Result<BenchOutcome> run_benchmark(BenchConfig config);

// "poisson 2 req/s", "gamma(0.5) 2 req/s", "flood", "closed loop, 4 users".
std::string describe_load(const LoadOptions& load);

// The table for the terminal: each run's summary, then for a sweep one row
// per rate and the answer.
std::string format_outcome(const BenchOutcome& outcome, const BenchConfig& config);

// Everything as JSON: config, summaries, every request's timings.
nlohmann::json outcome_json(const BenchOutcome& outcome, const BenchConfig& config, const std::string& command_line);

// Writes `text` to `path`, or says why not.
Status write_file(const std::string& path, const std::string& text);

}  // namespace omnibus::bench
