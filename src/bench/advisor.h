// The workload advisor: given a workload, an offered rate and an SLO, it
// tries server settings in short benchmark trials and recommends the one
// with the highest measured goodput. The search is coordinate-wise from the
// defaults: batching policy, then --max-seqs, then --max-batched-tokens,
// then the prefix cache, each time keeping the best setting so far; a
// setting is never run twice. Trials run through a callback, so the search
// is testable without a server.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bench/run_summary.h"

namespace omnibus::bench {

struct ServerSetting {
  std::string batching = "continuous";  // continuous | dynamic | static
  int32_t max_seqs = 64;                // static/dynamic: also the batch size
  int64_t max_batched_tokens = 2048;
  bool prefix_cache = true;

  // `omnibus serve` flags for this setting.
  std::vector<std::string> flags() const;
  std::string describe() const;
  bool operator==(const ServerSetting&) const = default;
};

// Static batching is left out by default: it waits for a full batch, so the
// tail of a finite trial (fewer requests left than the batch size) would
// wait forever; it suits offline jobs, not a latency objective.
struct AdvisorSpace {
  std::vector<std::string> batching = {"continuous", "dynamic"};
  std::vector<int32_t> max_seqs = {4, 16, 64};
  std::vector<int64_t> max_batched_tokens = {256, 512, 2048};
  std::vector<bool> prefix_cache = {true, false};
};

struct Trial {
  ServerSetting setting;
  RunSummary summary;
  Status status;       // not OK: the trial could not run (the server failed to start, ...)
  double seconds = 0;  // wall time of the trial
};

struct Advice {
  std::vector<Trial> trials;
  int best = -1;            // index into trials; -1: no trial ran
  bool budget_cut = false;  // the time budget stopped the search early
};

// True when `a` is the better measured result: more goodput, then higher
// SLO attainment, then lower TTFT p90, then lower TPOT p90.
bool better_result(const RunSummary& a, const RunSummary& b);

using TrialFn = std::function<Result<RunSummary>(const ServerSetting&)>;
using TrialLog = std::function<void(const Trial&, int number)>;

// Stops starting trials once the next would likely end past `budget_s`
// (judged by the slowest trial so far).
Advice advise(const AdvisorSpace& space, double budget_s, const TrialFn& run_trial, const TrialLog& log = nullptr);

// The evidence table: one row per trial, the best marked.
std::string format_advice(const Advice& advice, const std::string& slo_description);

// Empty when the best trial met the SLO for at least `slo_fraction` of its
// requests. Otherwise a plain warning: no setting serves this load within the
// SLO, so the recommendation only ranks failures; lower the rate or relax
// the SLO (a sweep finds the rate this machine sustains).
std::string overload_warning(const RunSummary& best, double slo_fraction);

}  // namespace omnibus::bench
