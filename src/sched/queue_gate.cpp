#include "sched/queue_gate.h"

#include <algorithm>

namespace omnibus {

QueueGate::QueueGate(std::int64_t max_queue, std::int32_t block_size)
    : max_queue_(std::max<std::int64_t>(1, max_queue)), block_size_(std::max<std::int32_t>(1, block_size)) {}

void QueueGate::reset(AdmissionRoom room) {
  room_.seats = std::max<std::int64_t>(0, room.seats);
  room_.blocks = std::max<std::int64_t>(0, room.blocks);
  queued_ = 0;
}

std::int64_t QueueGate::blocks_for(std::int64_t tokens) const {
  return (std::max<std::int64_t>(0, tokens) + block_size_ - 1) / block_size_;
}

bool QueueGate::take_room(std::int64_t tokens) {
  // First come, first served: nobody starts ahead of a queued request.
  if (queued_ > 0 || room_.seats < 1) return false;
  const std::int64_t blocks = blocks_for(tokens);
  if (blocks > room_.blocks) return false;
  room_.seats -= 1;
  room_.blocks -= blocks;
  return true;
}

void QueueGate::place(std::int64_t tokens) {
  if (!take_room(tokens)) ++queued_;
}

bool QueueGate::try_admit(std::int64_t tokens) {
  if (take_room(tokens)) return true;
  if (queued_ >= max_queue_) return false;
  ++queued_;
  return true;
}

}  // namespace omnibus
