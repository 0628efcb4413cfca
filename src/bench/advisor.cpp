#include "bench/advisor.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "base/timer.h"

namespace omnibus::bench {

std::vector<std::string> ServerSetting::flags() const {
  std::vector<std::string> f = {"--batching", batching, "--max-seqs", std::to_string(max_seqs),
                                "--max-batched-tokens", std::to_string(max_batched_tokens)};
  if (batching != "continuous") {
    f.push_back("--batch-size");
    f.push_back(std::to_string(max_seqs));
  }
  if (!prefix_cache) f.push_back("--no-prefix-cache");
  return f;
}

std::string ServerSetting::describe() const {
  std::string out;
  for (const std::string& f : flags()) out += (out.empty() ? "" : " ") + f;
  return out;
}

bool better_result(const RunSummary& a, const RunSummary& b) {
  if (a.goodput != b.goodput) return a.goodput > b.goodput;
  if (a.slo_attainment != b.slo_attainment) return a.slo_attainment > b.slo_attainment;
  if (a.ttft.p90 != b.ttft.p90) return a.ttft.p90 < b.ttft.p90;
  return a.tpot.p90 < b.tpot.p90;
}

Advice advise(const AdvisorSpace& space, double budget_s, const TrialFn& run_trial, const TrialLog& log) {
  Advice advice;
  Stopwatch clock;
  double slowest = 0;
  ServerSetting best_setting;
  auto try_setting = [&](const ServerSetting& s) {
    for (const Trial& t : advice.trials)
      if (t.setting == s) return;
    if (!advice.trials.empty() && clock.seconds() + slowest > budget_s) {
      advice.budget_cut = true;
      return;
    }
    Trial t;
    t.setting = s;
    Stopwatch took;
    Result<RunSummary> r = run_trial(s);
    t.seconds = took.seconds();
    slowest = std::max(slowest, t.seconds);
    if (r.is_ok()) {
      t.summary = *r;
    } else {
      t.status = r.status();
    }
    advice.trials.push_back(t);
    const int index = static_cast<int>(advice.trials.size()) - 1;
    if (t.status.is_ok() && (advice.best < 0 || better_result(t.summary, advice.trials[advice.best].summary))) {
      advice.best = index;
      best_setting = s;
    }
    if (log) log(advice.trials.back(), index + 1);
  };
  // One dimension at a time, each from the best setting found so far.
  try_setting(best_setting);
  const std::vector<std::function<void()>> dimensions = {
      [&] {
        const ServerSetting base = best_setting;
        for (const std::string& b : space.batching) try_setting({b, base.max_seqs, base.max_batched_tokens, base.prefix_cache});
      },
      [&] {
        const ServerSetting base = best_setting;
        for (int32_t m : space.max_seqs) try_setting({base.batching, m, base.max_batched_tokens, base.prefix_cache});
      },
      [&] {
        const ServerSetting base = best_setting;
        for (int64_t t : space.max_batched_tokens) try_setting({base.batching, base.max_seqs, t, base.prefix_cache});
      },
      [&] {
        const ServerSetting base = best_setting;
        for (bool p : space.prefix_cache) try_setting({base.batching, base.max_seqs, base.max_batched_tokens, p});
      },
  };
  for (const auto& dimension : dimensions) dimension();
  return advice;
}

std::string format_advice(const Advice& advice, const std::string& slo_description) {
  std::string out = fmt::format("trials (SLO {}):\n  {:<2} {:<78} {:>8} {:>8} {:>11} {:>11} {:>6}\n", slo_description,
                                "", "setting", "goodput", "SLO met", "TTFT p90", "TPOT p90", "secs");
  for (size_t i = 0; i < advice.trials.size(); ++i) {
    const Trial& t = advice.trials[i];
    const char* mark = static_cast<int>(i) == advice.best ? "*" : " ";
    if (!t.status.is_ok()) {
      out += fmt::format("  {:<2} {:<78} failed: {}\n", mark, t.setting.describe(), t.status.message());
      continue;
    }
    const RunSummary& s = t.summary;
    out += fmt::format("  {:<2} {:<78} {:>8.2f} {:>7.0f}% {:>9.0f}ms {:>9.1f}ms {:>6.0f}\n", mark, t.setting.describe(),
                       s.goodput, s.slo_attainment * 100, s.ttft.p90 * 1e3, s.tpot.p90 * 1e3, t.seconds);
  }
  if (advice.budget_cut) out += "  (the time budget ended the search before every candidate ran)\n";
  return out;
}

std::string overload_warning(const RunSummary& best, double slo_fraction) {
  if (best.slo_attainment >= slo_fraction) return "";
  return fmt::format(
      "warning: even the best setting met the SLO for only {:.0f}% of requests (the goal is {:.0f}%): this load is\n"
      "  past what this machine serves within the SLO with any setting tried, so the ranking above compares\n"
      "  overloaded servers. Lower --rate or relax --slo; `omnibus bench --sweep-rate ...` against one server\n"
      "  finds the highest rate that still meets it.\n",
      best.slo_attainment * 100, slo_fraction * 100);
}

}  // namespace omnibus::bench
