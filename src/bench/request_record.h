// What the load generator measures for one request, from the client side.
// Times are seconds since the run started (one steady clock for the run).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace omnibus::bench {

struct RequestRecord {
  int64_t index = 0;         // order of issue within the run
  int64_t conversation = 0;  // which conversation (multi-turn workloads)
  int32_t turn = 0;          // turn within it, from 0
  double scheduled_s = 0;    // when the load shape wanted it sent
  double sent_s = 0;         // when it was sent (later if the client was saturated)
  double first_token_s = -1; // first streamed token; < 0: none arrived
  double done_s = 0;         // last byte of the response
  // Arrival times of each streamed chunk that carried output text. A chunk
  // may carry several tokens (servers may coalesce): ITL is measured between
  // chunks, as vLLM's benchmark does.
  std::vector<double> chunk_s;
  int64_t input_tokens = 0;   // server's usage.prompt_tokens, else our count
  int64_t output_tokens = 0;  // server's usage.completion_tokens, else chunk count
  bool usage_from_server = false;
  bool ok = false;
  int http_status = 0;        // 0: no HTTP response (connection failed)
  std::string error;          // empty when ok
  std::string output_text;    // what came back (kept for multi-turn history)

  // Derived metrics (seconds); each is < 0 when it does not apply.
  double ttft() const { return ok && first_token_s >= 0 ? first_token_s - sent_s : -1; }
  double e2e() const { return ok ? done_s - sent_s : -1; }
  // (e2e − TTFT) / (output tokens − 1): needs two tokens.
  double tpot() const {
    if (!ok || first_token_s < 0 || output_tokens < 2) return -1;
    return (done_s - first_token_s) / static_cast<double>(output_tokens - 1);
  }
  // Gaps between consecutive chunks.
  std::vector<double> itls() const {
    std::vector<double> gaps;
    for (size_t i = 1; i < chunk_s.size(); ++i) gaps.push_back(chunk_s[i] - chunk_s[i - 1]);
    return gaps;
  }
};

}  // namespace omnibus::bench
