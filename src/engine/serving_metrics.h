// ServingMetrics: the server's request-level metrics, recorded by the engine
// thread (and, for requests refused before the engine, by HTTP threads) and
// rendered for GET /metrics in Prometheus text format.
//
// Definitions (the same as docs/serving.md):
//   TTFT   submit → first generated token sampled
//   TPOT   (e2e − TTFT) / (generated tokens − 1), per request with ≥ 2 tokens
//   ITL    the gap between consecutive generated tokens, every gap observed
//   e2e    submit → finished
//   queue  submit → first scheduled
// Goodput: completed requests that met every SLO given (--slo-ttft-ms,
// --slo-tpot-ms); with no SLO given every completed request counts.
//
// Thread-safe: one mutex; recording is a few additions per token.
#pragma once

#include <cstdint>
#include <string>

#include "base/mutex.h"
#include "engine/prometheus.h"
#include "engine/request_stream.h"

namespace omnibus {

struct SloTargets {
  double ttft_seconds = 0;  // 0: no TTFT objective
  double tpot_seconds = 0;  // 0: no TPOT objective
  bool met_by(const RequestTimings& t) const {
    return (ttft_seconds <= 0 || t.ttft_seconds <= ttft_seconds) && (tpot_seconds <= 0 || t.tpot_seconds <= tpot_seconds);
  }
};

// Engine state sampled when /metrics is read.
struct EngineGauges {
  int64_t running = 0;
  int64_t waiting = 0;
  int64_t kv_blocks_used = 0;
  int64_t kv_blocks_total = 0;
  int64_t kv_window_blocks_used = 0;  // the window group's (0 without one)
  int64_t kv_window_blocks_total = 0;
  int64_t kv_bytes_used = 0;  // K/V memory held by sequences, both groups
  int64_t kv_blocks_cached = 0;
  int64_t prefix_queried_tokens = 0;
  int64_t prefix_hit_tokens = 0;
  int64_t preemptions = 0;
  int64_t steps = 0;
  int64_t shared_prefix_attention_units = 0;  // RunnerStats::shared_prefix_units
  std::vector<uint64_t> expert_tokens;        // RunnerStats::expert_tokens (MoE models)
  uint64_t expert_runs = 0;                   // RunnerStats::expert_runs
  int64_t admission_limit = 0;  // running sequences admitted up to (max_seqs unless a TPOT objective lowers it)
  // The last steps against the machine's ceilings (engine/roofline_meter.h).
  double step_bytes_per_second = 0;
  double step_flops_per_second = 0;
  double bandwidth_utilization = 0;  // 0: the machine's bandwidth was not measured
  double flops_utilization = 0;
  double machine_memory_bandwidth = 0;
  double machine_peak_flops = 0;
};

enum class RequestOutcome { kCompleted, kRejected, kCancelled, kError };

class ServingMetrics {
 public:
  explicit ServingMetrics(SloTargets slo);

  void observe_itl(double seconds);
  // A speculative step of one sequence: guesses run, and how many of them
  // the samples confirmed.
  void observe_speculation(int64_t guessed, int64_t accepted);
  // KV handover (docs/plan-disaggregation.md): prompt tokens whose K/V
  // this instance exported, or imported (`written`: those whose blocks it
  // did not already hold).
  void observe_kv_export(int64_t tokens);
  void observe_kv_import(int64_t tokens, int64_t written);
  // A sequence that reached the engine and finished.
  void observe_finished(RequestOutcome outcome, const RequestTimings& timings, int64_t prompt_tokens,
                        int64_t generated_tokens);
  // A request refused before it ran (bad request, queue full, ...).
  void count_rejected();

  std::string render(const EngineGauges& gauges) const;

  // For tests and logs.
  int64_t count(RequestOutcome outcome) const;
  int64_t goodput_requests() const;

 private:
  const SloTargets slo_;
  mutable Mutex mu_;
  Histogram ttft_ GUARDED_BY(mu_);
  Histogram tpot_ GUARDED_BY(mu_);
  Histogram itl_ GUARDED_BY(mu_);
  Histogram e2e_ GUARDED_BY(mu_);
  Histogram queue_ GUARDED_BY(mu_);
  int64_t outcomes_[4] GUARDED_BY(mu_) = {0, 0, 0, 0};
  int64_t prompt_tokens_ GUARDED_BY(mu_) = 0;
  int64_t generated_tokens_ GUARDED_BY(mu_) = 0;
  int64_t guessed_tokens_ GUARDED_BY(mu_) = 0;
  int64_t kv_exported_tokens_ GUARDED_BY(mu_) = 0;
  int64_t kv_imported_tokens_ GUARDED_BY(mu_) = 0;
  int64_t kv_imported_written_tokens_ GUARDED_BY(mu_) = 0;
  int64_t accepted_guesses_ GUARDED_BY(mu_) = 0;
  int64_t goodput_ GUARDED_BY(mu_) = 0;
};

}  // namespace omnibus
