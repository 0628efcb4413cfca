// The flags `omnibus bench` and `omnibus advise` share: the workload, the
// load shape, the SLO and the client options, resolved into a BenchConfig.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "base/status.h"
#include "bench/benchmark.h"

namespace omnibus::cli {

struct BenchFlags {
  bench::BenchConfig config;
  std::string url = "http://127.0.0.1:8080";
  std::string api = "chat";
  bool no_stream = false;
  std::string workload = "random";
  std::string rate = "inf";
  std::string sweep_rates;
  std::string slo;
  bool quiet = false;
};

// Workload, client (api, streaming, ignore-eos, temperature), load shape
// (--rate, --burstiness, -n, --seed) and --slo.
void add_shared_bench_flags(CLI::App& cmd, BenchFlags& f);
// What only `bench` has: --url, --model, --api-key, --duration,
// --concurrency, --max-concurrency, --sweep-rate, --slo-fraction.
void add_target_and_sweep_flags(CLI::App& cmd, BenchFlags& f);

// Parses the string-valued flags into f.config and validates it.
Status resolve_bench_flags(BenchFlags& f);

// The options as given, for reports ("omnibus bench --rate 2 ...").
std::string command_line_of(const std::string& prefix, const CLI::App& cmd);

}  // namespace omnibus::cli
