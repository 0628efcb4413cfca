#include "sched/sequence.h"

namespace omnibus {

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kNone: return "none";
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kAborted: return "aborted";
    case FinishReason::kRejected: return "rejected";
  }
  return "unknown";
}

}  // namespace omnibus
