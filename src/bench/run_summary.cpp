#include "bench/run_summary.h"

#include <fmt/format.h>

#include <algorithm>

namespace omnibus::bench {
namespace {

using Json = nlohmann::json;

Json distribution_ms_json(const Distribution& d) {
  return {{"count", d.count}, {"mean", d.mean * 1e3}, {"min", d.min * 1e3}, {"p50", d.p50 * 1e3},
          {"p90", d.p90 * 1e3}, {"p99", d.p99 * 1e3},  {"max", d.max * 1e3}};
}

std::string distribution_row(const char* name, const Distribution& d) {
  if (d.count == 0) return fmt::format("  {:<10} {:>10}\n", name, "-");
  return fmt::format("  {:<10} {:>10.1f} {:>10.1f} {:>10.1f} {:>10.1f} {:>10.1f}\n", name, d.mean * 1e3, d.p50 * 1e3,
                     d.p90 * 1e3, d.p99 * 1e3, d.max * 1e3);
}

}  // namespace

RunSummary summarize_run(const RunResult& run, const Slo& slo, const std::string& load_description) {
  RunSummary s;
  s.load = load_description;
  s.duration_s = run.duration_s;
  std::vector<double> ttft, tpot, itl, e2e;
  int64_t input_tokens = 0, output_tokens = 0;
  for (const RequestRecord& r : run.records) {
    ++s.requests;
    if (!r.ok) {
      ++s.failed;
      if (s.errors.size() < 5 && std::find(s.errors.begin(), s.errors.end(), r.error) == s.errors.end()) {
        s.errors.push_back(r.error);
      }
      continue;
    }
    ++s.completed;
    input_tokens += r.input_tokens;
    output_tokens += r.output_tokens;
    if (r.ttft() >= 0) ttft.push_back(r.ttft());
    if (r.tpot() >= 0) tpot.push_back(r.tpot());
    for (double gap : r.itls()) itl.push_back(gap);
    e2e.push_back(r.e2e());
    if (slo.met_by(r)) ++s.met_slo;
  }
  s.request_throughput = static_cast<double>(s.completed) / s.duration_s;
  s.input_token_throughput = static_cast<double>(input_tokens) / s.duration_s;
  s.output_token_throughput = static_cast<double>(output_tokens) / s.duration_s;
  s.goodput = static_cast<double>(s.met_slo) / s.duration_s;
  s.slo_attainment = s.requests ? static_cast<double>(s.met_slo) / static_cast<double>(s.requests) : 0;
  s.ttft = summarize(std::move(ttft));
  s.tpot = summarize(std::move(tpot));
  s.itl = summarize(std::move(itl));
  s.e2e = summarize(std::move(e2e));
  return s;
}

std::string format_summary(const RunSummary& s, const Slo& slo) {
  std::string out;
  out += fmt::format("load: {}   duration {:.1f} s\n", s.load, s.duration_s);
  out += fmt::format("requests: {} sent, {} completed, {} failed\n", s.requests, s.completed, s.failed);
  for (const std::string& e : s.errors) out += fmt::format("  error: {}\n", e);
  out += fmt::format("throughput: {:.2f} req/s, {:.1f} input tok/s, {:.1f} output tok/s\n", s.request_throughput,
                     s.input_token_throughput, s.output_token_throughput);
  out += fmt::format("goodput: {:.2f} req/s ({:.1f}% of requests meet SLO {})\n", s.goodput, s.slo_attainment * 100,
                     slo.describe());
  out += fmt::format("  {:<10} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "ms", "mean", "p50", "p90", "p99", "max");
  out += distribution_row("TTFT", s.ttft);
  out += distribution_row("TPOT", s.tpot);
  out += distribution_row("ITL", s.itl);
  out += distribution_row("E2E", s.e2e);
  return out;
}

Json summary_json(const RunSummary& s) {
  return {{"load", s.load},
          {"offered_rate", s.offered_rate},
          {"requests", s.requests},
          {"completed", s.completed},
          {"failed", s.failed},
          {"met_slo", s.met_slo},
          {"duration_s", s.duration_s},
          {"request_throughput", s.request_throughput},
          {"input_token_throughput", s.input_token_throughput},
          {"output_token_throughput", s.output_token_throughput},
          {"goodput", s.goodput},
          {"slo_attainment", s.slo_attainment},
          {"ttft_ms", distribution_ms_json(s.ttft)},
          {"tpot_ms", distribution_ms_json(s.tpot)},
          {"itl_ms", distribution_ms_json(s.itl)},
          {"e2e_ms", distribution_ms_json(s.e2e)},
          {"errors", s.errors}};
}

Json records_json(const std::vector<RequestRecord>& records, const Slo& slo) {
  Json list = Json::array();
  for (const RequestRecord& r : records) {
    Json chunks = Json::array();
    for (double t : r.chunk_s) chunks.push_back(t);
    list.push_back({{"index", r.index},
                    {"conversation", r.conversation},
                    {"turn", r.turn},
                    {"scheduled_s", r.scheduled_s},
                    {"sent_s", r.sent_s},
                    {"first_token_s", r.first_token_s},
                    {"done_s", r.done_s},
                    {"ttft_ms", r.ttft() >= 0 ? Json(r.ttft() * 1e3) : Json()},
                    {"tpot_ms", r.tpot() >= 0 ? Json(r.tpot() * 1e3) : Json()},
                    {"e2e_ms", r.e2e() >= 0 ? Json(r.e2e() * 1e3) : Json()},
                    {"input_tokens", r.input_tokens},
                    {"output_tokens", r.output_tokens},
                    {"usage_from_server", r.usage_from_server},
                    {"ok", r.ok},
                    {"met_slo", slo.met_by(r)},
                    {"http_status", r.http_status},
                    {"error", r.error},
                    {"chunk_times_s", std::move(chunks)}});
  }
  return list;
}

}  // namespace omnibus::bench
