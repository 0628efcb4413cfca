// Service-level objectives a request must meet to count toward goodput:
// "ttft=500ms,tpot=50ms" (also itl, the worst gap between chunks, and e2e).
// Units: us, ms, s; a bare number is milliseconds.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "bench/request_record.h"

namespace omnibus::bench {

struct Slo {
  std::optional<double> ttft_s;
  std::optional<double> tpot_s;
  std::optional<double> itl_s;  // every gap between chunks
  std::optional<double> e2e_s;

  bool empty() const { return !ttft_s && !tpot_s && !itl_s && !e2e_s; }
  // A failed request never meets it; one with a single output token has no
  // TPOT and meets a TPOT objective vacuously.
  bool met_by(const RequestRecord& r) const;
  // "ttft<=500ms tpot<=50ms", or "none".
  std::string describe() const;
};

Result<Slo> parse_slo(std::string_view text);

// "500ms", "2s", "250us", "40" (ms) to seconds.
Result<double> parse_duration_seconds(std::string_view text);

}  // namespace omnibus::bench
