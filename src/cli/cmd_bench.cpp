// `omnibus bench`: load-tests any OpenAI-compatible server and reports the
// standard serving metrics (TTFT, TPOT, ITL, E2E, throughput, goodput) as a
// table, a JSON file with every request's timings and an HTML report.
#include <fmt/format.h>

#include <memory>
#include <string>

#include "bench/benchmark.h"
#include "bench/html_report.h"
#include "cli/bench_flags.h"
#include "cli/commands.h"
#include "cli/common.h"

namespace omnibus::cli {
namespace {

struct BenchCommand {
  BenchFlags flags;
  std::string json_path;
  std::string html_path;
  std::string command_line;
};

int run_bench(BenchCommand& b) {
  BenchFlags& f = b.flags;
  Status resolved = resolve_bench_flags(f);
  if (!resolved.is_ok()) return fail(resolved);
  Result<bench::BenchOutcome> outcome = bench::run_benchmark(f.config);
  if (!outcome.is_ok()) return fail(outcome.status());
  fmt::print("{}", bench::format_outcome(*outcome, f.config));
  if (!b.json_path.empty()) {
    Status s = bench::write_file(b.json_path, bench::outcome_json(*outcome, f.config, b.command_line).dump(1) + "\n");
    if (!s.is_ok()) return fail(s);
    fmt::print(stderr, "wrote {}\n", b.json_path);
  }
  if (!b.html_path.empty()) {
    std::vector<bench::ReportedRun> runs;
    for (const bench::BenchRun& r : outcome->runs) runs.push_back({r.label, r.summary, &r.result});
    const std::string title = fmt::format("omnibus bench: {} ({})", outcome->model, f.workload);
    Status s = bench::write_file(b.html_path, bench::render_html_report(title, b.command_line, runs, f.config.slo));
    if (!s.is_ok()) return fail(s);
    fmt::print(stderr, "wrote {}\n", b.html_path);
  }
  // Every request failing is a failed benchmark (a wrong URL or model).
  for (const bench::BenchRun& r : outcome->runs)
    if (r.summary.completed == 0) return fail(Status::io_error("no request completed; see the errors above"));
  return 0;
}

}  // namespace

CommandRunner add_bench_command(CLI::App& app) {
  auto b = std::make_shared<BenchCommand>();
  CLI::App* cmd = app.add_subcommand("bench", "Load-test an OpenAI-compatible server: TTFT, TPOT, ITL, goodput");
  add_target_and_sweep_flags(*cmd, b->flags);
  add_shared_bench_flags(*cmd, b->flags);
  cmd->add_option("--json", b->json_path, "Write every request's timings and the summaries here");
  cmd->add_option("--html", b->html_path, "Write a self-contained HTML report with charts here");
  return [b, cmd] {
    b->command_line = command_line_of("omnibus bench", *cmd);
    return run_bench(*b);
  };
}

}  // namespace omnibus::cli
