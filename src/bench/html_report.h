// The self-contained HTML report of a bench run or a rate sweep: summary
// tables and SVG charts (latency CDFs, TTFT and TPOT over time, throughput
// over time, and for sweeps goodput against request rate). No scripts and
// no external resources: it opens in any browser with no network.
#pragma once

#include <string>
#include <vector>

#include "bench/load_runner.h"
#include "bench/run_summary.h"
#include "bench/slo.h"

namespace omnibus::bench {

struct ReportedRun {
  std::string label;  // "rate 2/s", or the load
  RunSummary summary;
  const RunResult* run = nullptr;  // not owned; outlives the render call
};

std::string render_html_report(const std::string& title, const std::string& command_line,
                               const std::vector<ReportedRun>& runs, const Slo& slo);

// Output tokens per second in 1-second bins over the run (tokens of a
// request are spread evenly over its chunks). Exposed for tests.
std::vector<std::pair<double, double>> output_throughput_over_time(const RunResult& run, double bin_s = 1.0);

}  // namespace omnibus::bench
