// QueueGate: the --max-queue rule. Requests are admitted by room, not by
// arrival order: a request counts against max_queue only while it waits for
// room in the running set, never while it merely waits for the engine's next
// step to pick it up. So a burst that the running set can take is accepted
// whole, however fast it arrives, and 429s start only once max_queue
// requests are waiting behind a full running set.
//
// Room has two parts, and a request needs both:
//   - a seat: the running set holds fewer sequences than the scheduler
//     admits (max_seqs, or fewer under a TPOT objective; with the static and
//     dynamic policies, the seats of the batch being gathered);
//   - KV blocks: enough for the request's known tokens (prompt, plus what it
//     generated before a preemption), out of the blocks the pool can hand
//     out that running sequences are not still owed for their own known
//     tokens. Blocks are counted without credit for the prefix cache, so a
//     burst that shares a long prefix may queue (and be refused) before the
//     pool is really full; never the other way round.
// When the pool rather than max_seqs is the bottleneck, this keeps
// --max-queue meaning what it says: at most max_queue requests wait for
// room, whichever kind of room is short.
//
// Pending requests take room first come, first served, as the scheduler
// admits them (it stops at the first that cannot start): once one is queued,
// everyone after it is queued too, even if smaller.
//
// Plain bookkeeping with no clock and no engine: the engine resets it from
// the scheduler after every step, places the requests it already holds, and
// asks try_admit() for each new one. Not thread-safe: the engine keeps it
// under its mutex.
#pragma once

#include <cstdint>

namespace omnibus {

// What the running set can still take (Scheduler::room()).
struct AdmissionRoom {
  std::int64_t seats = 0;   // sequences that may still start
  std::int64_t blocks = 0;  // KV blocks not held by or owed to running sequences
};

class QueueGate {
 public:
  // max_queue >= 1 and block_size >= 1 (tokens per KV block); values below
  // are taken as 1. Starts with no room: call reset().
  QueueGate(std::int64_t max_queue, std::int32_t block_size);

  // Starts over: `room` is free and nobody is pending.
  void reset(AdmissionRoom room);
  // A pending request already accepted, with `tokens` known tokens: takes
  // room if it fits behind those placed before it, else joins the queue.
  // Never refuses (after room shrank, the queue may be over max_queue).
  void place(std::int64_t tokens);
  // A new request: as place(), but false, counting nothing, when it would
  // join a queue that already holds max_queue requests.
  bool try_admit(std::int64_t tokens);

  std::int64_t queued() const { return queued_; }
  const AdmissionRoom& room_left() const { return room_; }
  std::int64_t max_queue() const { return max_queue_; }
  // KV blocks that `tokens` tokens occupy.
  std::int64_t blocks_for(std::int64_t tokens) const;

 private:
  // Takes room for the request if it fits; false if it must queue.
  bool take_room(std::int64_t tokens);

  std::int64_t max_queue_;
  std::int32_t block_size_;
  AdmissionRoom room_;
  std::int64_t queued_ = 0;
};

}  // namespace omnibus
