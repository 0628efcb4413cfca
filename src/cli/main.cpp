// omnibus: an LLM inference engine. Subcommands: run, chat, inspect,
// tokenize, perplexity, serve, bench, roofline, advise, convert, grammar-bench. Stdout carries
// program output only; logs, progress and stats go to stderr.
#include <CLI/CLI.hpp>

#include <map>
#include <string>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"omnibus: LLM inference engine (GGUF models on the CPU)"};
  app.require_subcommand(1);
  std::map<CLI::App*, omnibus::cli::CommandRunner> runners;
  auto add = [&](omnibus::cli::CommandRunner (*adder)(CLI::App&)) {
    const size_t before = app.get_subcommands({}).size();
    auto runner = adder(app);
    runners[app.get_subcommands({}).at(before)] = std::move(runner);
  };
  add(omnibus::cli::add_run_command);
  add(omnibus::cli::add_chat_command);
  add(omnibus::cli::add_inspect_command);
  add(omnibus::cli::add_tokenize_command);
  add(omnibus::cli::add_perplexity_command);
  add(omnibus::cli::add_serve_command);
  add(omnibus::cli::add_bench_command);
  add(omnibus::cli::add_roofline_command);
  add(omnibus::cli::add_advise_command);
  add(omnibus::cli::add_convert_command);
  add(omnibus::cli::add_grammar_bench_command);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (auto& [cmd, runner] : runners)
    if (cmd->parsed()) return runner();
  return 1;
}
