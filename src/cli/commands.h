// Each subcommand registers itself on the app and returns the function that
// runs it once parsed (returning the process exit code).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace omnibus::cli {

using CommandRunner = std::function<int()>;

CommandRunner add_run_command(CLI::App& app);
CommandRunner add_chat_command(CLI::App& app);
CommandRunner add_inspect_command(CLI::App& app);
CommandRunner add_tokenize_command(CLI::App& app);
CommandRunner add_perplexity_command(CLI::App& app);
CommandRunner add_serve_command(CLI::App& app);
CommandRunner add_bench_command(CLI::App& app);
CommandRunner add_roofline_command(CLI::App& app);
CommandRunner add_advise_command(CLI::App& app);
CommandRunner add_convert_command(CLI::App& app);
CommandRunner add_grammar_bench_command(CLI::App& app);

}  // namespace omnibus::cli
