// `omnibus perplexity`: perplexity of a text file, in fixed-size chunks each
// evaluated from a fresh context (the definition tests/golden uses).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "base/log.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "engine/evaluation.h"

namespace omnibus::cli {
namespace {

struct PerplexityOptions {
  ModelOptions model;
  std::string file;
  int chunk = 256;
  bool window_kv = true;  // --no-window-kv
};

int perplexity(const PerplexityOptions& o) {
  auto text = read_text_file(o.file);
  if (!text.is_ok()) return fail(text.status());
  auto loaded = load_model(o.model);
  if (!loaded.is_ok()) return fail(loaded.status());
  const auto tokens = loaded->tokenizer->encode(*text, true, false);
  const int chunks = static_cast<int>(tokens.size()) / o.chunk;
  if (chunks == 0)
    return fail(Status::invalid_argument("the text has " + std::to_string(tokens.size()) +
                                         " tokens, fewer than one chunk of " + std::to_string(o.chunk)));
  auto backend = make_backend(o.model);  // outlives the evaluator
  if (!backend.is_ok()) return fail(backend.status());
  // Forward calls of at most kForwardRows rows: the logits do not depend on
  // it (batch invariance), activations stay small for long chunks, and a
  // sliding-window model's window layers then keep a ring of blocks instead
  // of the whole chunk (LogitsEvaluator::create).
  constexpr int kForwardRows = 256;
  auto evaluator = LogitsEvaluator::create(loaded->model, **backend, o.chunk, std::min(o.chunk, kForwardRows),
                                           o.model.kv_type, o.window_kv);
  if (!evaluator.is_ok()) return fail(evaluator.status());
  log_info("KV cache {:.1f} MiB{}", static_cast<double>((*evaluator)->kv_bytes()) / (1 << 20),
           (*evaluator)->window_blocks() > 0 ? " (window layers in a ring)" : "");
  double total = 0;
  int count = 0;
  for (int c = 0; c < chunks; ++c) {
    auto r = evaluate_teacher_forced(**evaluator, std::span(tokens).subspan(c * o.chunk, o.chunk));
    if (!r.is_ok()) return fail(r.status());
    for (double v : r->nll) total += v;
    count += static_cast<int>(r->nll.size());
    fmt::print(stderr, "\rchunk {}/{}: running perplexity {:.4f}", c + 1, chunks, std::exp(total / count));
  }
  fmt::print(stderr, "\n");
  fmt::print("perplexity {:.4f} over {} predictions ({} chunks of {} tokens)\n", std::exp(total / count), count,
             chunks, o.chunk);
  return 0;
}

}  // namespace

CommandRunner add_perplexity_command(CLI::App& app) {
  auto o = std::make_shared<PerplexityOptions>();
  CLI::App* cmd = app.add_subcommand("perplexity", "Perplexity of a text file (chunks from a fresh context)");
  add_model_options(*cmd, o->model);
  add_kv_type_option(*cmd, o->model);
  add_backend_option(*cmd, o->model);
  cmd->add_option("-f,--file", o->file, "Text file")->required();
  cmd->add_option("--chunk", o->chunk, "Tokens per chunk")->capture_default_str()->check(CLI::Range(2, 1 << 16));
  cmd->add_flag("!--no-window-kv", o->window_kv,
                "Keep every layer's K/V for the whole chunk (by default a sliding-window model's window layers keep "
                "only their window; the same results)");
  return [o] { return perplexity(*o); };
}

}  // namespace omnibus::cli
