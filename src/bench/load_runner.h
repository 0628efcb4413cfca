// Drives a server with a workload under a load shape and records every
// request. Open loop: conversations start at the arrival schedule's times
// (Poisson, gamma or a flood), whether or not earlier ones finished; later
// turns of a conversation go as soon as the previous answer is in. Closed
// loop (`concurrency` > 0): that many users each send a conversation, wait
// for it to finish, and send the next. One thread per conversation in
// flight, each with its own connection.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "bench/arrivals.h"
#include "bench/openai_client.h"
#include "bench/request_record.h"
#include "bench/workload.h"

namespace omnibus::bench {

struct LoadOptions {
  ArrivalShape shape{1e300 * 1e300, 1};  // default: a flood (rate = infinity)
  int64_t concurrency = 0;      // > 0: closed loop with this many users
  int64_t max_concurrency = 0;  // open loop: most conversations in flight (0: 1024)
  uint64_t seed = 1;
  bool progress = false;        // a progress bar on stderr
};

struct RunResult {
  std::vector<RequestRecord> records;  // by index (order of issue)
  double duration_s = 0;               // first send to last response
  int64_t conversations = 0;
};

// Progress callback: (requests done, requests expected, seconds elapsed).
using ProgressFn = std::function<void(int64_t, int64_t, double)>;

RunResult run_load(const std::vector<Conversation>& conversations, const ClientOptions& client,
                   const LoadOptions& load, const ProgressFn& progress = nullptr);

// Draws "[#####.....]  37/100 requests  12.3 s" on stderr, in place on a
// terminal and every 10% otherwise.
ProgressFn stderr_progress_bar(const std::string& label);

}  // namespace omnibus::bench
