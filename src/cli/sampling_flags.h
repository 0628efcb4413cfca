// llama.cpp-compatible sampling and generation flags shared by run and chat.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "engine/generator.h"

namespace omnibus::cli {

struct GenerationFlags {
  GenerationOptions options;
  int64_t seed = -1;  // -1: random
  int context = 2048;
  std::vector<std::string> stop;
  std::string chat_template;  // override name; empty: from the model
};

void add_generation_flags(CLI::App& cmd, GenerationFlags& flags);
// --draft, --draft-max, --ngram-min, --ngram-max (part of the above; also
// for commands without sampling flags).
void add_speculation_flags(CLI::App& cmd, SpeculationOptions& options);
// Fills options.sampling.seed (random when -1) and returns it.
uint64_t resolve_seed(GenerationFlags& flags);

}  // namespace omnibus::cli
