// The standard serving metrics of one run, from its request records:
// throughput (requests/s, input and output tokens/s), goodput (requests/s
// meeting every SLO) and SLO attainment, and the TTFT / TPOT / ITL / E2E
// distributions. Definitions: docs/measuring.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/load_runner.h"
#include "bench/slo.h"
#include "bench/statistics.h"

namespace omnibus::bench {

struct RunSummary {
  std::string load;         // "poisson 2 req/s", "closed loop, 4 users", ...
  double offered_rate = 0;  // open loop: requests/s asked for (0: closed loop or flood)
  int64_t requests = 0;     // sent
  int64_t completed = 0;
  int64_t failed = 0;
  int64_t met_slo = 0;
  double duration_s = 0;
  double request_throughput = 0;  // completed / duration
  double input_token_throughput = 0;
  double output_token_throughput = 0;
  double goodput = 0;             // met_slo / duration
  double slo_attainment = 0;      // met_slo / requests, in [0, 1]
  Distribution ttft, tpot, itl, e2e;  // seconds
  std::vector<std::string> errors;    // distinct error messages (up to 5)
};

RunSummary summarize_run(const RunResult& run, const Slo& slo, const std::string& load_description);

// The terminal table (times in ms).
std::string format_summary(const RunSummary& s, const Slo& slo);

nlohmann::json summary_json(const RunSummary& s);
// Every request's timings, for the JSON file.
nlohmann::json records_json(const std::vector<RequestRecord>& records, const Slo& slo);

}  // namespace omnibus::bench
