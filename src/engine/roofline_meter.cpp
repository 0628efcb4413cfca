#include "engine/roofline_meter.h"

#include <cstddef>

namespace omnibus {

void RooflineMeter::on_step(int64_t rows, double attended_positions, double seconds) {
  if (rows <= 0 || seconds <= 0) return;
  const double positions = attended_positions;
  Step& s = steps_[static_cast<size_t>(next_)];
  s.bytes = cost_.weight_bytes + cost_.kv_bytes_per_position * positions;
  s.flops = cost_.matmul_flops * static_cast<double>(rows) + cost_.attention_flops_per_position * positions;
  s.seconds = seconds;
  next_ = (next_ + 1) % kWindow;
}

RooflineReading RooflineMeter::reading() const {
  double bytes = 0, flops = 0, seconds = 0;
  for (const Step& s : steps_) {
    bytes += s.bytes;
    flops += s.flops;
    seconds += s.seconds;
  }
  RooflineReading r;
  if (seconds <= 0) return r;
  r.bytes_per_second = bytes / seconds;
  r.flops_per_second = flops / seconds;
  if (bandwidth_ > 0) r.bandwidth_utilization = r.bytes_per_second / bandwidth_;
  if (peak_ > 0) r.flops_utilization = r.flops_per_second / peak_;
  return r;
}

}  // namespace omnibus
