// `omnibus grammar-bench`: what constrained decoding costs per token with a
// model's vocabulary. For each JSON Schema of a corpus (JSONL lines
// {"id", "schema", "instances": ["<json text>", ...]}, bench/data/
// json_schemas.jsonl), times the compile (schema -> GBNF -> grammar ->
// matcher), then feeds each valid instance's tokens through a fresh matcher
// as a model's output would go, timing the mask before every token (what
// the server computes before each sampling) and checking the token is in
// it. Prints the distribution of mask and compile times and writes JSON.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/statistics.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "engine/grammar_vocabulary.h"
#include "grammar/grammar.h"
#include "grammar/json_schema_grammar.h"
#include "grammar/token_mask.h"

namespace omnibus::cli {
namespace {

struct GrammarBenchOptions {
  ModelOptions model;
  std::string schemas = "bench/data/json_schemas.jsonl";
  std::string json_out;
  int limit = 0;    // schemas; 0: all
  int slowest = 0;  // list this many of the slowest masks
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

nlohmann::json distribution_json(const bench::Distribution& d, double scale) {
  return {{"count", d.count},     {"mean", d.mean * scale}, {"p50", d.p50 * scale},
          {"p90", d.p90 * scale}, {"p99", d.p99 * scale},   {"max", d.max * scale}};
}

struct Tally {
  int schemas = 0;
  int compiled = 0;
  int instances = 0;
  int instances_whole = 0;  // every token allowed and the end allowed after
  std::map<std::string, int> refusals;
  std::vector<double> compile_seconds;
  std::vector<double> mask_seconds;
  std::vector<double> first_mask_seconds;  // a matcher's first mask: no cache yet
  // The work behind the times, the same on any machine.
  size_t masks_computed = 0;
  size_t nodes_visited = 0;
  size_t transitions_computed = 0;
  struct SlowMask {
    double seconds;
    std::string where;  // schema id and the text before the mask
  };
  std::vector<SlowMask> slowest;  // kept sorted, slowest first
  size_t keep_slowest = 0;
  void note(double seconds, const std::string& schema_id, const std::string& before) {
    if (keep_slowest == 0 || (slowest.size() == keep_slowest && seconds <= slowest.back().seconds)) return;
    std::string where = schema_id;
    where.append(": ...").append(before.substr(before.size() > 60 ? before.size() - 60 : 0));
    slowest.push_back({seconds, std::move(where)});
    std::sort(slowest.begin(), slowest.end(),
              [](const SlowMask& a, const SlowMask& b) { return a.seconds > b.seconds; });
    if (slowest.size() > keep_slowest) slowest.pop_back();
  }
};

void run_instance(const std::shared_ptr<const Grammar>& grammar, const std::shared_ptr<const TokenTrie>& trie,
                  const Tokenizer& tokenizer, const std::string& schema_id, const std::string& text, Tally& tally) {
  GrammarMatcher matcher(grammar, trie);
  std::string before;
  ++tally.instances;
  bool whole = true;
  bool first = true;
  for (int32_t token : tokenizer.encode(text, false, false)) {
    const auto start = std::chrono::steady_clock::now();
    const std::span<const uint64_t> mask = matcher.allowed_tokens();
    const double took = seconds_since(start);
    (first ? tally.first_mask_seconds : tally.mask_seconds).push_back(took);
    tally.note(took, schema_id, before);
    first = false;
    const auto id = static_cast<size_t>(token);
    if (((mask[id / 64] >> (id % 64)) & 1) == 0 || !matcher.accept_token(token)) {
      whole = false;
      break;
    }
    if (tally.keep_slowest > 0) before += trie->token_text(token);
  }
  if (whole && matcher.can_end()) ++tally.instances_whole;
  tally.masks_computed += matcher.masks_computed();
  tally.nodes_visited += matcher.nodes_visited();
  tally.transitions_computed += matcher.transitions_computed();
}

int grammar_bench(const GrammarBenchOptions& o) {
  auto loaded = load_model(o.model);
  if (!loaded.is_ok()) return fail(loaded.status());
  const Tokenizer& tokenizer = *loaded->tokenizer;
  const int32_t vocab = loaded->model->config().vocab_size;
  auto trie_start = std::chrono::steady_clock::now();
  const std::shared_ptr<const TokenTrie> trie = make_token_trie(tokenizer, vocab);
  const double trie_seconds = seconds_since(trie_start);

  std::ifstream in(o.schemas);
  if (!in) return fail(Status::io_error("cannot read " + o.schemas));
  Tally tally;
  tally.keep_slowest = static_cast<size_t>(std::max(o.slowest, 0));
  std::string line;
  while (std::getline(in, line) && (o.limit <= 0 || tally.schemas < o.limit)) {
    const nlohmann::ordered_json entry = nlohmann::ordered_json::parse(line, nullptr, false);
    if (entry.is_discarded() || !entry.contains("schema")) continue;
    ++tally.schemas;
    const auto start = std::chrono::steady_clock::now();
    Result<std::string> gbnf = json_schema_to_gbnf(entry["schema"]);
    Result<Grammar> parsed = gbnf.is_ok() ? parse_gbnf(*gbnf) : Result<Grammar>(gbnf.status());
    if (!parsed.is_ok()) {
      // Group refusals by their reason without the JSON pointer.
      std::string reason = parsed.status().message();
      reason = reason.substr(0, reason.find(" at /"));
      ++tally.refusals[reason.substr(0, 90)];
      continue;
    }
    auto grammar = std::make_shared<const Grammar>(std::move(parsed).value());
    { GrammarMatcher warm(grammar, trie); }  // the matcher a request would create
    tally.compile_seconds.push_back(seconds_since(start));
    ++tally.compiled;
    for (const auto& instance : entry.value("instances", nlohmann::ordered_json::array()))
      if (instance.is_string())
        run_instance(grammar, trie, tokenizer, entry.value("id", ""), instance.get<std::string>(), tally);
  }

  const bench::Distribution mask = bench::summarize(tally.mask_seconds);
  const bench::Distribution first_mask = bench::summarize(tally.first_mask_seconds);
  const bench::Distribution compile = bench::summarize(tally.compile_seconds);
  fmt::print("vocabulary {} tokens, trie {} nodes built in {:.1f} ms\n", vocab, trie->node_count(), trie_seconds * 1e3);
  fmt::print("schemas {}: compiled {}, refused {}; instances {}: accepted whole {}\n", tally.schemas, tally.compiled,
             tally.schemas - tally.compiled, tally.instances, tally.instances_whole);
  fmt::print("| {:<28} | {:>8} | {:>10} | {:>10} | {:>10} | {:>10} |\n", "", "count", "mean", "p50", "p99", "max");
  fmt::print("|{:-<30}|{:-<10}|{:-<12}|{:-<12}|{:-<12}|{:-<12}|\n", "", "", "", "", "", "");
  auto row = [](const char* name, const bench::Distribution& d, double scale, const char* unit) {
    fmt::print("| {:<28} | {:>8} | {:>7.1f} {} | {:>7.1f} {} | {:>7.1f} {} | {:>7.1f} {} |\n", name, d.count,
               d.mean * scale, unit, d.p50 * scale, unit, d.p99 * scale, unit, d.max * scale, unit);
  };
  row("mask, per token", mask, 1e6, "us");
  row("first mask of a request", first_mask, 1e6, "us");
  row("compile (p90 below)", compile, 1e3, "ms");
  fmt::print("compile p90 {:.2f} ms (bar: 10 ms); mask mean bar 50 us, p99 bar 1 ms\n", compile.p90 * 1e3);
  const double per_mask = 1.0 / static_cast<double>(std::max<size_t>(tally.masks_computed, 1));
  fmt::print("masks computed {} (the rest from the cache): {:.0f} trie nodes and {:.1f} transitions each\n",
             tally.masks_computed, static_cast<double>(tally.nodes_visited) * per_mask,
             static_cast<double>(tally.transitions_computed) * per_mask);
  if (!tally.refusals.empty()) {
    fmt::print("refused, by reason:\n");
    for (const auto& [reason, count] : tally.refusals) fmt::print("  {:>4}  {}\n", count, reason);
  }
  if (!tally.slowest.empty()) {
    fmt::print("slowest masks (schema: the text before):\n");
    for (const Tally::SlowMask& m : tally.slowest) fmt::print("  {:>9.1f} us  {}\n", m.seconds * 1e6, m.where);
  }
  if (!o.json_out.empty()) {
    nlohmann::json j = {{"model", o.model.model_path},
                        {"vocab_size", vocab},
                        {"trie_nodes", trie->node_count()},
                        {"trie_build_ms", trie_seconds * 1e3},
                        {"schemas", tally.schemas},
                        {"compiled", tally.compiled},
                        {"instances", tally.instances},
                        {"instances_accepted_whole", tally.instances_whole},
                        {"mask_us", distribution_json(mask, 1e6)},
                        {"first_mask_us", distribution_json(first_mask, 1e6)},
                        {"compile_ms", distribution_json(compile, 1e3)},
                        {"masks_computed", tally.masks_computed},
                        {"trie_nodes_visited", tally.nodes_visited},
                        {"transitions_computed", tally.transitions_computed},
                        {"refusals", tally.refusals}};
    std::ofstream out(o.json_out);
    out << j.dump(2) << "\n";
    if (!out) return fail(Status::io_error("cannot write " + o.json_out));
  }
  return 0;
}

}  // namespace

CommandRunner add_grammar_bench_command(CLI::App& app) {
  auto o = std::make_shared<GrammarBenchOptions>();
  CLI::App* cmd = app.add_subcommand("grammar-bench", "Time structured output's token masks over a JSON Schema corpus");
  add_model_options(*cmd, o->model);
  cmd->add_option("--schemas", o->schemas, "JSONL corpus: {\"id\", \"schema\", \"instances\"} per line")
      ->capture_default_str();
  cmd->add_option("--json", o->json_out, "Also write the results as JSON to this file");
  cmd->add_option("--limit", o->limit, "Only the first N schemas");
  cmd->add_option("--slowest", o->slowest, "List the N slowest masks with where they came");
  return [o] { return grammar_bench(*o); };
}

}  // namespace omnibus::cli
