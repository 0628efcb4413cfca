#include "bench/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "bench/svg_chart.h"

namespace omnibus::bench {
namespace {

// Empirical CDF of a metric in ms: (value, fraction of requests at or below).
Series cdf_series(const std::string& name, std::vector<double> seconds) {
  std::sort(seconds.begin(), seconds.end());
  Series s{name, {}, false};
  for (size_t i = 0; i < seconds.size(); ++i) {
    s.points.emplace_back(seconds[i] * 1e3, static_cast<double>(i + 1) / static_cast<double>(seconds.size()));
  }
  return s;
}

template <class Metric>
std::vector<double> metric_values(const RunResult& run, Metric metric) {
  std::vector<double> values;
  for (const RequestRecord& r : run.records) {
    const double v = metric(r);
    if (v >= 0) values.push_back(v);
  }
  return values;
}

template <class Metric>
Series over_time(const std::string& name, const RunResult& run, Metric metric) {
  Series s{name, {}, true};
  for (const RequestRecord& r : run.records) {
    const double v = metric(r);
    if (v >= 0) s.points.emplace_back(r.sent_s, v * 1e3);
  }
  return s;
}

std::string summary_table(const std::vector<ReportedRun>& runs) {
  std::string html =
      "<table><tr><th>run</th><th>requests</th><th>failed</th><th>req/s</th><th>output tok/s</th>"
      "<th>goodput req/s</th><th>SLO met</th><th>TTFT p50 / p90 / p99 ms</th><th>TPOT p50 / p90 / p99 ms</th>"
      "<th>ITL p50 / p99 ms</th><th>E2E p50 / p99 ms</th></tr>\n";
  for (const ReportedRun& r : runs) {
    const RunSummary& s = r.summary;
    html += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.2f}</td><td>{:.1f}</td><td>{:.2f}</td><td>{:.1f}%</td>"
        "<td>{:.0f} / {:.0f} / {:.0f}</td><td>{:.1f} / {:.1f} / {:.1f}</td><td>{:.1f} / {:.1f}</td>"
        "<td>{:.0f} / {:.0f}</td></tr>\n",
        xml_escape(r.label), s.requests, s.failed, s.request_throughput, s.output_token_throughput, s.goodput,
        s.slo_attainment * 100, s.ttft.p50 * 1e3, s.ttft.p90 * 1e3, s.ttft.p99 * 1e3, s.tpot.p50 * 1e3,
        s.tpot.p90 * 1e3, s.tpot.p99 * 1e3, s.itl.p50 * 1e3, s.itl.p99 * 1e3, s.e2e.p50 * 1e3, s.e2e.p99 * 1e3);
  }
  return html + "</table>\n";
}

}  // namespace

std::vector<std::pair<double, double>> output_throughput_over_time(const RunResult& run, double bin_s) {
  double end = 0;
  for (const RequestRecord& r : run.records) end = std::max(end, r.done_s);
  const size_t bins = static_cast<size_t>(std::ceil(end / bin_s)) + 1;
  std::vector<double> tokens(bins, 0.0);
  for (const RequestRecord& r : run.records) {
    if (!r.ok || r.chunk_s.empty()) continue;
    const double per_chunk = static_cast<double>(r.output_tokens) / static_cast<double>(r.chunk_s.size());
    for (double t : r.chunk_s) tokens[std::min(bins - 1, static_cast<size_t>(t / bin_s))] += per_chunk;
  }
  std::vector<std::pair<double, double>> points;
  for (size_t i = 0; i < bins; ++i) points.emplace_back((static_cast<double>(i) + 0.5) * bin_s, tokens[i] / bin_s);
  return points;
}

std::string render_html_report(const std::string& title, const std::string& command_line,
                               const std::vector<ReportedRun>& runs, const Slo& slo) {
  ChartSpec ttft_cdf{"TTFT, CDF", "ms", "fraction of requests", {}};
  ChartSpec tpot_cdf{"TPOT, CDF", "ms", "fraction of requests", {}};
  ChartSpec e2e_cdf{"End-to-end latency, CDF", "ms", "fraction of requests", {}};
  ChartSpec ttft_time{"TTFT over the run", "request sent at (s)", "TTFT (ms)", {}};
  ChartSpec tpot_time{"TPOT over the run", "request sent at (s)", "TPOT (ms)", {}};
  ChartSpec tput_time{"Output throughput over the run", "time (s)", "tokens/s", {}};
  for (const ReportedRun& r : runs) {
    if (!r.run) continue;
    ttft_cdf.series.push_back(cdf_series(r.label, metric_values(*r.run, [](const RequestRecord& q) { return q.ttft(); })));
    tpot_cdf.series.push_back(cdf_series(r.label, metric_values(*r.run, [](const RequestRecord& q) { return q.tpot(); })));
    e2e_cdf.series.push_back(cdf_series(r.label, metric_values(*r.run, [](const RequestRecord& q) { return q.e2e(); })));
    ttft_time.series.push_back(over_time(r.label, *r.run, [](const RequestRecord& q) { return q.ttft(); }));
    tpot_time.series.push_back(over_time(r.label, *r.run, [](const RequestRecord& q) { return q.tpot(); }));
    tput_time.series.push_back({r.label, output_throughput_over_time(*r.run), false});
  }
  std::string charts;
  for (const ChartSpec* c : {&ttft_cdf, &tpot_cdf, &e2e_cdf, &ttft_time, &tpot_time, &tput_time}) {
    charts += render_svg_chart(*c);
  }
  if (runs.size() > 1) {
    ChartSpec sweep{"Goodput and throughput against offered rate", "offered rate (req/s)", "req/s", {}};
    Series good{"goodput", {}, false}, tput{"completed req/s", {}, false}, offered{"offered", {}, false};
    for (const ReportedRun& r : runs) {
      good.points.emplace_back(r.summary.offered_rate, r.summary.goodput);
      tput.points.emplace_back(r.summary.offered_rate, r.summary.request_throughput);
      offered.points.emplace_back(r.summary.offered_rate, r.summary.offered_rate);
    }
    sweep.series = {good, tput, offered};
    charts = render_svg_chart(sweep) + charts;
  }
  return fmt::format(
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{0}</title>\n"
      "<style>body{{font-family:sans-serif;margin:24px;color:#222}} table{{border-collapse:collapse;margin:12px 0}}"
      " td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right;font-size:13px}} th{{background:#f3f3f3}}"
      " svg{{margin:6px;border:1px solid #eee}} code{{background:#f5f5f5;padding:2px 4px}}</style>\n"
      "</head><body>\n<h1>{0}</h1>\n<p><code>{1}</code></p>\n<p>SLO: {2}. TPOT = (E2E − TTFT) / (output tokens − 1);"
      " ITL = gaps between streamed chunks; goodput = completed requests per second that meet every SLO.</p>\n"
      "{3}<div>\n{4}</div>\n</body></html>\n",
      xml_escape(title), xml_escape(command_line), xml_escape(slo.describe()), summary_table(runs), charts);
}

}  // namespace omnibus::bench
