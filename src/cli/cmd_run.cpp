// `omnibus run`: complete one prompt, streaming the completion to stdout, then
// one stats line on stderr.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "base/log.h"
#include "base/profiler.h"
#include "base/timer.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/sampling_flags.h"
#include "engine/generator.h"
#include "engine/text_stream.h"
#include "tokenizer/chat_template.h"

namespace omnibus::cli {
namespace {

struct RunOptions {
  ModelOptions model;
  GenerationFlags gen;
  std::string prompt;
  std::string prompt_file;
  bool chat = false;
  int batch = 256;
  std::string stats_json;
  bool profile = false;
  std::string profile_trace;  // empty: kDefaultTrace when profiling
};

constexpr const char* kDefaultTrace = "omnibus-trace.json";

// Prints the per-op table to stderr and writes the Chrome trace.
void report_profile(const Profiler& profiler, const RunOptions& o) {
  fmt::print(stderr, "{}", profiler.format_table());
  const std::string path = o.profile_trace.empty() ? kDefaultTrace : o.profile_trace;
  Status s = profiler.write_trace_file(path);
  if (!s.is_ok()) {
    log_warn("{}", s.message());
    return;
  }
  fmt::print(stderr, "omnibus: trace written to {} ({} events; open in https://ui.perfetto.dev or chrome://tracing)\n",
             path, profiler.events().size());
}

Result<std::string> read_prompt(const RunOptions& o) {
  if (o.prompt_file.empty()) return o.prompt;
  return read_text_file(o.prompt_file);
}

void write_stats_json(const std::string& path, const GenerationStats& s, double load_ms, double ttft_ms) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    log_warn("cannot write stats to '{}'", path);
    return;
  }
  fmt::print(f,
             "{{\"prompt_tokens\": {}, \"prefilled_tokens\": {}, \"generated_tokens\": {}, \"load_ms\": {:.3f}, "
             "\"ttft_ms\": {:.3f}, \"prefill_tokens_per_s\": {:.3f}, \"decode_tokens_per_s\": {:.3f}, "
             "\"peak_rss_mib\": {:.1f}, \"finish_reason\": \"{}\", \"decode_steps\": {}, \"draft_steps\": {}, "
             "\"drafted_tokens\": {}, \"accepted_tokens\": {}}}\n",
             s.prompt_tokens, s.prefilled_tokens, s.generated_tokens, load_ms, ttft_ms, s.prefill_tokens_per_second(),
             s.decode_tokens_per_second(), peak_rss_mib(), s.finish_reason, s.decode_steps, s.draft_steps, s.drafted_tokens,
             s.accepted_tokens);
  std::fclose(f);
}

int run(RunOptions& o) {
  auto text = read_prompt(o);
  if (!text.is_ok()) return fail(text.status());
  // The backend first: a missing GPU is reported before the model loads.
  auto backend = make_backend(o.model);  // outlives the generator
  if (!backend.is_ok()) return fail(backend.status());
  auto loaded = load_model(o.model);
  if (!loaded.is_ok()) return fail(loaded.status());
  const Tokenizer& tok = *loaded->tokenizer;
  std::vector<int32_t> prompt;
  // gpt-oss's answer is harmony messages: its channel markers are shown
  // (`chat` takes them apart).
  bool render_special = false;
  if (o.chat) {
    auto format = chat_format_for(tok.vocab(), o.gen.chat_template);
    if (!format.is_ok()) return fail(format.status());
    warn_if_unrecognised(*format);
    render_special = format->kind == ChatTemplateKind::kHarmony;
    const std::string rendered = render_chat(*format, {{"user", *text}}, true);
    prompt = tok.encode(rendered, /*add_special=*/false, /*parse_special=*/true);
  } else {
    prompt = tok.encode(*text, /*add_special=*/true, /*parse_special=*/true);
  }
  if (prompt.empty()) return fail(Status::invalid_argument("the prompt is empty (give -p TEXT or -f FILE)"));
  const uint64_t seed = resolve_seed(o.gen);
  log_info("seed {}; prompt {} tokens", seed, prompt.size());

  // One completion needs no more positions than its prompt and its tokens:
  // the KV store (faulted in whole at creation) is sized to that when it is
  // less than -c, so `-c 32768 -n 8` does not claim 755 MB for a short
  // prompt. The output is the same: the run ends at -n either way.
  int context = o.gen.context;
  if (o.gen.options.max_tokens >= 0)
    context = static_cast<int>(std::min<int64_t>(context, static_cast<int64_t>(prompt.size()) +
                                                              o.gen.options.max_tokens + 1));
  const Stopwatch setup;
  auto gen = Generator::create(loaded->model, **backend, context, o.batch, o.model.kv_type);
  if (!gen.is_ok()) return fail(gen.status());
  // "load" counts the KV store and the forward pass's buffers too (their
  // pages are faulted in at creation), as llama.cpp's load counts its
  // context.
  const double load_ms = (loaded->load_seconds + setup.seconds()) * 1e3;
  Profiler profiler;
  if (o.profile) {
    profiler.enable();
    if (Status s = (*gen)->set_profiler(&profiler); !s.is_ok()) return fail(s);
  }
  TextStream stream(tok, o.gen.stop, render_special);
  auto stats = (*gen)->generate(prompt, o.gen.options, tok.end_of_generation_ids(), [&](int32_t token) {
    TextStream::Piece piece = stream.push(token);
    std::fwrite(piece.text.data(), 1, piece.text.size(), stdout);
    std::fflush(stdout);
    return !piece.stopped;
  });
  if (!stats.is_ok()) return fail(stats.status());
  const std::string tail = stream.finish();
  std::fwrite(tail.data(), 1, tail.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
  // TTFT here is from the start of generation (model loaded) to the first token.
  const double ttft_ms = stats->prefill_seconds * 1e3;
  fmt::print(stderr,
             "omnibus: prompt {} tokens, TTFT {:.1f} ms, prefill {:.1f} tokens/s, decode {:.1f} tokens/s "
             "({} tokens), load {:.0f} ms, peak RSS {:.0f} MiB\n",
             stats->prompt_tokens, ttft_ms, stats->prefill_tokens_per_second(), stats->decode_tokens_per_second(),
             stats->generated_tokens, load_ms, peak_rss_mib());
  if (o.gen.options.speculation.source != DraftSource::kNone)
    fmt::print(stderr, "omnibus: draft: {} of {} guessed tokens accepted ({:.0f}%) in {} of {} decode steps\n",
               stats->accepted_tokens, stats->drafted_tokens, 100 * stats->acceptance_rate(), stats->draft_steps,
               stats->decode_steps);
  if (!o.stats_json.empty()) write_stats_json(o.stats_json, *stats, load_ms, ttft_ms);
  if (o.profile) {
    if (Status s = (*gen)->set_profiler(nullptr); !s.is_ok()) return fail(s);
    report_profile(profiler, o);
  }
  return 0;
}

}  // namespace

CommandRunner add_run_command(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Complete a prompt (streamed to stdout; stats to stderr)");
  add_model_options(*cmd, o->model);
  add_kv_type_option(*cmd, o->model);
  add_backend_option(*cmd, o->model);
  cmd->add_option("-p,--prompt", o->prompt, "Prompt text");
  cmd->add_option("-f,--file", o->prompt_file, "Read the prompt from a file");
  cmd->add_flag("--chat", o->chat, "Wrap the prompt as one user message in the model's chat template");
  cmd->add_option("-b,--batch-size", o->batch, "Prompt tokens per forward step")->capture_default_str()->check(CLI::Range(1, 8192));
  cmd->add_option("--stats-json", o->stats_json, "Also write the stats as JSON to this file");
  cmd->add_flag("--profile", o->profile, "Time each op: a table on stderr and a Chrome trace file");
  cmd->add_option("--profile-trace", o->profile_trace,
                  fmt::format("Chrome trace file for --profile (default {}; implies --profile)", kDefaultTrace));
  add_generation_flags(*cmd, o->gen);
  return [o] {
    if (!o->profile_trace.empty()) o->profile = true;
    return run(*o);
  };
}

}  // namespace omnibus::cli
