// How many guesses a speculative step should run. Guessing pays only when
// the guesses are right often enough to cover their rows' cost, and both
// the odds and the cost vary: a quote is guessed right nine times in ten,
// free writing almost never; a row costs little where decode streams its
// weights from DRAM and almost a whole step where they sit in cache and the
// kernels are compute-bound. So both are measured as generation goes:
//
//   AcceptanceEstimate (per sequence): the chance a guess is right given the
//     ones before it were, as a running average of every guess tested. A
//     guess is tested when its row runs, and also for free when it does not:
//     it is compared with the token sampled at its position anyway.
//   StepCostModel (per engine): step time = fixed + per-row x rows, fitted
//     over recent decode steps with exponential forgetting; a row's cost as
//     a share of a one-row step is per-row / (fixed + per-row).
//
// choose_guesses picks the k in 0..available that maximises expected tokens
// per step, (1 - a^(k+1)) / (1 - a), over the step's cost, 1 + share * k.
// Neither changes any token: only how many rows a step runs.
//
// Not thread-safe; the engine thread owns them.
#pragma once

#include <cstdint>

namespace omnibus {

class AcceptanceEstimate {
 public:
  // Running average of the last ~1/weight outcomes, starting at `prior`.
  explicit AcceptanceEstimate(double prior = 0.5, double weight = 0.15) : rate_(prior), weight_(weight) {}

  // `tested` guesses were checked in order; the first `matched` were right
  // (matched < tested: the next one was wrong).
  void observe(int tested, int matched);
  double rate() const { return rate_; }

 private:
  double rate_;
  double weight_;
};

class StepCostModel {
 public:
  // `prior_row_share` is used until steps of at least two different row
  // counts have been seen.
  explicit StepCostModel(double prior_row_share = 0.5, double forget = 0.97)
      : prior_(prior_row_share), forget_(forget) {}

  // A step of `rows` rows that took `seconds`.
  void observe(int64_t rows, double seconds);
  // The time one more row adds, as a share of a one-row step (0.02..2).
  double row_share() const;

 private:
  double prior_;
  double forget_;
  double w_ = 0, wx_ = 0, wy_ = 0, wxx_ = 0, wxy_ = 0;  // weighted sums of rows (x) and seconds (y)
};

// The number of guesses (0..available) worth running at acceptance rate
// `acceptance` when each guess row costs `row_share` of a one-row step.
int choose_guesses(int available, double acceptance, double row_share);

}  // namespace omnibus
