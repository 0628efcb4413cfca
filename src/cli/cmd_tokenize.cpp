// `omnibus tokenize`: the token ids (and pieces) of a text.
#include <fmt/format.h>

#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/common.h"

namespace omnibus::cli {
namespace {

struct TokenizeOptions {
  ModelOptions model;
  std::string prompt;
  std::string file;
  bool ids_only = false;
  bool no_bos = false;
  bool no_parse_special = false;
};

int tokenize(const TokenizeOptions& o) {
  std::string text = o.prompt;
  if (!o.file.empty()) {
    auto contents = read_text_file(o.file);
    if (!contents.is_ok()) return fail(contents.status());
    text = std::move(contents).value();
  }
  auto loaded = load_model(o.model);
  if (!loaded.is_ok()) return fail(loaded.status());
  const Tokenizer& tok = *loaded->tokenizer;
  const auto ids = tok.encode(text, !o.no_bos, !o.no_parse_special);
  if (o.ids_only) {
    std::string line = "[";
    for (size_t i = 0; i < ids.size(); ++i) line += (i ? ", " : "") + std::to_string(ids[i]);
    fmt::print("{}]\n", line);
    return 0;
  }
  for (int32_t id : ids) fmt::print("{:>8} -> '{}'\n", id, tok.token_to_piece(id, true));
  fmt::print(stderr, "omnibus: {} tokens\n", ids.size());
  return 0;
}

}  // namespace

CommandRunner add_tokenize_command(CLI::App& app) {
  auto o = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Show the tokens of a text");
  add_model_options(*cmd, o->model);
  cmd->add_option("-p,--prompt,text", o->prompt, "Text to tokenize");
  cmd->add_option("-f,--file", o->file, "Read the text from a file");
  cmd->add_flag("--ids", o->ids_only, "Print only the ids, as a JSON list");
  cmd->add_flag("--no-bos", o->no_bos, "Do not add BOS/EOS even if the model asks for them");
  cmd->add_flag("--no-parse-special", o->no_parse_special, "Tokenize special-token text as plain text");
  return [o] { return tokenize(*o); };
}

}  // namespace omnibus::cli
