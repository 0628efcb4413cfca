// AdmissionController: keeps decode steps within a time-per-output-token
// objective by capping how many sequences run at once (the scheduler's
// admission limit). Under continuous batching every running sequence gets
// one token per step, so a sequence's TPOT is about the step time; past the
// machine's capacity, admitting more makes every running request miss its
// TPOT at once. Capping instead keeps the running ones within the objective
// and lets the extra wait (their TTFT grows), which is what goodput rewards.
//
// Additive increase / decrease on the decode share of each step's time:
// above the target the limit drops to one below the running count; well
// under it (< 80%) with every seat taken, it grows by one. Pure logic, no
// clock: the engine feeds it measured step times.
#pragma once

#include <cstdint>

namespace omnibus {

class AdmissionController {
 public:
  // target_step_seconds > 0; max_seqs >= 1 (the limit never exceeds it).
  AdmissionController(double target_step_seconds, std::int32_t max_seqs);

  // After a step of `decode_rows` one-token rows (running sequences) and
  // `prefill_rows` prompt rows that took `step_seconds`; returns the new
  // limit. Prompt rows' share of the time (by row count) is left out: a long
  // prompt chunk is not a reason to run fewer sequences.
  std::int32_t on_step(double step_seconds, std::int64_t decode_rows, std::int64_t prefill_rows);

  std::int32_t limit() const { return limit_; }
  double target_step_seconds() const { return target_; }

 private:
  double target_;
  std::int32_t max_seqs_;
  std::int32_t limit_;
};

}  // namespace omnibus
