// `omnibus advise`: starts `omnibus serve` with candidate settings, runs a
// short benchmark of the user's workload against each, and recommends the
// setting with the best measured goodput, with the evidence table.
#include <fmt/format.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench/advisor.h"
#include "bench/benchmark.h"
#include "bench/server_process.h"
#include "cli/bench_flags.h"
#include "cli/commands.h"
#include "cli/common.h"

namespace omnibus::cli {
namespace {

struct AdviseCommand {
  BenchFlags flags;
  ModelOptions model;
  double budget_minutes = 9;
  std::vector<std::string> serve_args;  // passed to every trial server
  std::string json_path;
  bool quick = false;  // a small search space (for tests and a first look)
};

Result<std::string> self_executable() {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return Status::io_error(fmt::format("cannot find the omnibus binary: {}", ec.message()));
  return p.string();
}

// One trial: a fresh server with `setting`, the workload, the server stopped.
Result<bench::RunSummary> run_trial(const AdviseCommand& a, const std::string& exe, const std::string& model_path,
                                    const bench::ServerSetting& setting) {
  OMNIBUS_ASSIGN_OR_RETURN(int port, bench::pick_free_port());
  std::vector<std::string> argv = {exe, "serve", "-m", model_path, "-t", std::to_string(resolve_threads(a.model.threads)),
                                   "--host", "127.0.0.1", "--port", std::to_string(port), "--no-machine-probe"};
  for (const std::string& f : setting.flags()) argv.push_back(f);
  for (const std::string& f : a.serve_args) argv.push_back(f);
  const std::string log_path = fmt::format("/tmp/omnibus-advise-{}-{}.log", getpid(), port);
  OMNIBUS_ASSIGN_OR_RETURN(bench::ServerProcess server, bench::ServerProcess::start(argv, port, log_path));
  OMNIBUS_RETURN_IF_ERROR(server.wait_ready(180));
  bench::BenchConfig config = a.flags.config;
  config.client.url = bench::ServerUrl{server.url()};
  config.progress = false;
  config.client.timeout_s = 120;  // a stuck setting fails its trial instead of stalling the search
  Result<bench::BenchOutcome> outcome = bench::run_benchmark(config);
  server.stop();
  if (!outcome.is_ok()) return outcome.status();
  const bench::RunSummary& s = outcome->runs.front().summary;
  if (s.completed == 0) {
    return Status::io_error(fmt::format("no request completed ({})", s.errors.empty() ? "?" : s.errors.front()));
  }
  std::filesystem::remove(log_path);
  return s;
}

int run_advise(AdviseCommand& a) {
  Status resolved = resolve_bench_flags(a.flags);
  if (!resolved.is_ok()) return fail(resolved);
  if (std::isinf(a.flags.config.load.shape.rate)) {
    return fail(Status::invalid_argument("give the request rate to advise for (--rate R): a flood has no goodput"));
  }
  auto exe = self_executable();
  if (!exe.is_ok()) return fail(exe.status());
  const std::string model_path = a.model.model_path.empty() ? default_model_path() : a.model.model_path;
  if (!std::filesystem::exists(model_path)) return fail(Status::not_found(fmt::format("no model at '{}'", model_path)));

  bench::AdvisorSpace space;
  if (a.quick) space = {{"continuous", "dynamic"}, {4, 64}, {2048}, {true}};
  const bench::BenchConfig& c = a.flags.config;
  fmt::print(stderr, "advise: {} workload at {} for {} requests a trial, SLO {}, budget {:.0f} min\n", a.flags.workload,
             bench::describe_load(c.load), c.num_requests, c.slo.describe(), a.budget_minutes);
  bench::Advice advice = bench::advise(
      space, a.budget_minutes * 60,
      [&](const bench::ServerSetting& s) { return run_trial(a, *exe, model_path, s); },
      [](const bench::Trial& t, int number) {
        if (t.status.is_ok()) {
          fmt::print(stderr, "  trial {}: {} -> goodput {:.2f} req/s, SLO met {:.0f}%, TTFT p90 {:.0f} ms ({:.0f} s)\n",
                     number, t.setting.describe(), t.summary.goodput, t.summary.slo_attainment * 100,
                     t.summary.ttft.p90 * 1e3, t.seconds);
        } else {
          fmt::print(stderr, "  trial {}: {} -> failed: {}\n", number, t.setting.describe(), t.status.message());
        }
      });
  fmt::print("{}", bench::format_advice(advice, c.slo.describe()));
  if (advice.best < 0) return fail(Status::io_error("no trial completed; see the errors above"));
  const bench::Trial& best = advice.trials[static_cast<size_t>(advice.best)];
  std::string command = fmt::format("omnibus serve -m {} -t {}", model_path, resolve_threads(a.model.threads));
  for (const std::string& f : best.setting.flags()) command += " " + f;
  for (const std::string& f : a.serve_args) command += " " + f;
  fmt::print("\nrecommended (best measured goodput {:.2f} req/s at {}):\n  {}\n", best.summary.goodput,
             bench::describe_load(c.load), command);
  const std::string warning = bench::overload_warning(best.summary, c.slo_fraction);
  if (!warning.empty()) fmt::print("\n{}", warning);
  if (!a.json_path.empty()) {
    nlohmann::json trials = nlohmann::json::array();
    for (const bench::Trial& t : advice.trials) {
      trials.push_back({{"setting", t.setting.describe()},
                        {"ok", t.status.is_ok()},
                        {"error", t.status.message()},
                        {"seconds", t.seconds},
                        {"summary", t.status.is_ok() ? bench::summary_json(t.summary) : nlohmann::json()}});
    }
    nlohmann::json doc = {{"recommended", command}, {"best", advice.best}, {"budget_cut", advice.budget_cut},
                          {"slo", c.slo.describe()}, {"load", bench::describe_load(c.load)}, {"trials", trials},
                          {"slo_met_by_best", warning.empty()}};
    Status s = bench::write_file(a.json_path, doc.dump(1) + "\n");
    if (!s.is_ok()) return fail(s);
  }
  return 0;
}

}  // namespace

CommandRunner add_advise_command(CLI::App& app) {
  auto a = std::make_shared<AdviseCommand>();
  a->flags.rate = "0.5";  // within a 2-core machine's reach for the default model and workload
  a->flags.slo = "ttft=2s,tpot=150ms";
  a->flags.config.num_requests = 24;
  a->flags.config.warmup = 2;  // each trial's server is fresh
  a->flags.quiet = true;
  CLI::App* cmd = app.add_subcommand("advise", "Try server settings on your workload; recommend the best goodput");
  add_model_options(*cmd, a->model);
  add_shared_bench_flags(*cmd, a->flags);
  cmd->add_option("--budget-min", a->budget_minutes, "Stop starting trials after about this many minutes")
      ->capture_default_str()->check(CLI::Range(0.1, 600.0));
  cmd->add_option("--serve-arg", a->serve_args, "Extra flag for every trial server (repeat; e.g. --serve-arg=-c --serve-arg=4096)");
  cmd->add_flag("--quick", a->quick, "Try fewer settings (continuous/dynamic, max-seqs 4/64)");
  cmd->add_option("--json", a->json_path, "Write the trials and the recommendation here");
  return [a] { return run_advise(*a); };
}

}  // namespace omnibus::cli
