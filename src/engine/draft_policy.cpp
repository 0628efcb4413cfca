#include "engine/draft_policy.h"

#include <algorithm>
#include <cmath>

namespace omnibus {

void AcceptanceEstimate::observe(int tested, int matched) {
  for (int i = 0; i < tested; ++i) rate_ += weight_ * ((i < matched ? 1.0 : 0.0) - rate_);
}

void StepCostModel::observe(int64_t rows, double seconds) {
  if (rows < 1 || !(seconds > 0)) return;
  const double x = static_cast<double>(rows);
  w_ = forget_ * w_ + 1;
  wx_ = forget_ * wx_ + x;
  wy_ = forget_ * wy_ + seconds;
  wxx_ = forget_ * wxx_ + x * x;
  wxy_ = forget_ * wxy_ + x * seconds;
}

double StepCostModel::row_share() const {
  // Weighted least squares of seconds = fixed + per_row * rows.
  const double variance = wxx_ * w_ - wx_ * wx_;
  // Rows that (nearly) never varied say nothing about a row's cost.
  if (w_ < 2 || variance < 0.25 * w_ * w_) return prior_;
  const double per_row = (wxy_ * w_ - wx_ * wy_) / variance;
  const double fixed = (wy_ - per_row * wx_) / w_;
  const double one_row = fixed + per_row;
  if (!(one_row > 0)) return prior_;
  return std::clamp(per_row / one_row, 0.02, 2.0);
}

int choose_guesses(int available, double acceptance, double row_share) {
  const double a = std::clamp(acceptance, 0.0, 0.999);
  int best = 0;
  double best_rate = 1.0;  // no guess: one token per one-row step
  double expected = 1.0, power = 1.0;
  for (int k = 1; k <= available; ++k) {
    power *= a;
    expected += power;  // 1 + a + ... + a^k
    const double rate = expected / (1.0 + row_share * k);
    if (rate > best_rate) best = k, best_rate = rate;
  }
  return best;
}

}  // namespace omnibus
