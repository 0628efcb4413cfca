#include "sched/admission_controller.h"

#include <algorithm>

namespace omnibus {

AdmissionController::AdmissionController(double target_step_seconds, std::int32_t max_seqs)
    : target_(target_step_seconds), max_seqs_(std::max<std::int32_t>(1, max_seqs)), limit_(max_seqs_) {}

std::int32_t AdmissionController::on_step(double step_seconds, std::int64_t decode_rows, std::int64_t prefill_rows) {
  if (decode_rows <= 0 || step_seconds < 0) return limit_;
  const double decode_share = static_cast<double>(decode_rows) / static_cast<double>(decode_rows + prefill_rows);
  const double decode_seconds = step_seconds * decode_share;
  if (decode_seconds > target_) {
    const std::int64_t running = std::min<std::int64_t>(decode_rows, limit_);
    limit_ = static_cast<std::int32_t>(std::max<std::int64_t>(1, running - 1));
  } else if (decode_seconds < 0.8 * target_ && decode_rows >= limit_) {
    limit_ = std::min(max_seqs_, limit_ + 1);
  }
  return limit_;
}

}  // namespace omnibus
