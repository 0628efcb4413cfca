// `omnibus chat`: an interactive conversation. The chat template is applied
// to the whole history each turn; the generator reuses the cached prefix, so
// only the new turn is computed.
#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <unistd.h>

#include "base/log.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/sampling_flags.h"
#include "engine/generator.h"
#include "engine/text_stream.h"
#include "server/harmony_splitter.h"
#include "tokenizer/chat_template.h"

namespace omnibus::cli {
namespace {

struct ChatOptions {
  ModelOptions model;
  GenerationFlags gen;
  std::string system;
};

int chat(ChatOptions& o) {
  auto loaded = load_model(o.model);
  if (!loaded.is_ok()) return fail(loaded.status());
  const Tokenizer& tok = *loaded->tokenizer;
  auto format = chat_format_for(tok.vocab(), o.gen.chat_template);
  if (!format.is_ok()) return fail(format.status());
  warn_if_unrecognised(*format);
  resolve_seed(o.gen);
  auto backend = make_backend(o.model);  // outlives the generator
  if (!backend.is_ok()) return fail(backend.status());
  auto gen = Generator::create(loaded->model, **backend, o.gen.context, 256, o.model.kv_type);
  if (!gen.is_ok()) return fail(gen.status());

  std::vector<ChatMessage> history;
  if (!o.system.empty()) history.push_back({"system", o.system});
  const bool interactive = isatty(STDIN_FILENO);
  if (interactive) fmt::print(stderr, "omnibus chat: type a message and press Enter; Ctrl-D or /exit ends.\n");
  std::string line;
  for (;;) {
    if (interactive) fmt::print(stderr, "> ");
    if (!std::getline(std::cin, line) || line == "/exit") break;
    if (line.empty()) continue;
    history.push_back({"user", line});
    const auto prompt = tok.encode(render_chat(*format, history, true), false, true);
    if (static_cast<int>(prompt.size()) >= o.gen.context - 1) {
      history.pop_back();
      fmt::print(stderr, "omnibus: the conversation has filled the context ({} tokens); start a new chat or raise -c\n",
                 o.gen.context);
      continue;
    }
    // gpt-oss answers in harmony messages: its thoughts (the analysis
    // channel) go to stderr, the answer to stdout and into the history.
    const bool harmony = format->kind == ChatTemplateKind::kHarmony;
    TextStream stream(tok, o.gen.stop, /*render_special=*/harmony);
    server::HarmonySplitter channels;
    std::string reply;
    auto show = [&](const std::string& text, bool last) {
      std::string answer = text;
      if (harmony) {
        server::ReasoningPiece piece = channels.feed(text);
        if (last) {
          server::ReasoningPiece rest = channels.finish();
          piece.reasoning += rest.reasoning;
          piece.content += rest.content;
        }
        std::fwrite(piece.reasoning.data(), 1, piece.reasoning.size(), stderr);
        answer = std::move(piece.content);
      }
      reply += answer;
      std::fwrite(answer.data(), 1, answer.size(), stdout);
      std::fflush(stdout);
    };
    GenerationOptions options = o.gen.options;
    options.max_tokens = o.gen.options.max_tokens < 0 ? o.gen.context - static_cast<int>(prompt.size()) - 1
                                                      : o.gen.options.max_tokens;
    auto stats = (*gen)->generate(prompt, options, tok.end_of_generation_ids(), [&](int32_t token) {
      auto piece = stream.push(token);
      show(piece.text, false);
      return !piece.stopped;
    });
    if (!stats.is_ok()) return fail(stats.status());
    show(stream.finish(), true);
    fmt::print("\n");
    std::fflush(stdout);
    history.push_back({"assistant", reply});
    log_info("{} prompt tokens ({} new), decode {:.1f} tokens/s", stats->prompt_tokens, stats->prefilled_tokens,
             stats->decode_tokens_per_second());
  }
  return 0;
}

}  // namespace

CommandRunner add_chat_command(CLI::App& app) {
  auto o = std::make_shared<ChatOptions>();
  o->gen.options.max_tokens = -1;
  CLI::App* cmd = app.add_subcommand("chat", "Interactive chat with the model's chat template; history is kept");
  add_model_options(*cmd, o->model);
  add_kv_type_option(*cmd, o->model);
  add_backend_option(*cmd, o->model);
  cmd->add_option("--system", o->system, "System message");
  add_generation_flags(*cmd, o->gen);
  return [o] { return chat(*o); };
}

}  // namespace omnibus::cli
