// Pieces every subcommand shares: the model/thread/verbosity options, the
// default model's location, loading a model with its tokenizer, and the
// process's peak memory.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "base/status.h"
#include "kernels/kv_quant.h"
#include "model/backend.h"
#include "model/model.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace omnibus::cli {

struct ModelOptions {
  std::string model_path;  // empty: the default model
  int threads = 0;         // 0: number of cores
  bool verbose = false;
  bool interleave = true;  // --no-interleave: keep every matrix in the file's layout
  KvCacheType kv_type = KvCacheType::kF16;  // --kv-type
  std::string backend = "cpu";              // --backend: cpu or cuda
  std::string kernels;                      // --kernels: a kernel table by name; empty: the CPU's best
};

// Adds -m/--model, -t/--threads, --verbose, --no-interleave, --kernels to a subcommand.
void add_model_options(CLI::App& cmd, ModelOptions& options);
// Adds --kv-type, for the subcommands that run the model.
void add_kv_type_option(CLI::App& cmd, ModelOptions& options);
// Adds --backend cpu|cuda, for the subcommands that run the model.
void add_backend_option(CLI::App& cmd, ModelOptions& options);

// The backend --backend names: the CPU's with -t threads, or (built with
// -DOMNIBUS_CUDA=ON, a GPU present) the CUDA backend. An error saying why
// otherwise. It must outlive what it makes.
Result<std::unique_ptr<Backend>> make_backend(const ModelOptions& options);

// The default model: $OMNIBUS_MODEL, else models/<default> under the current
// directory or the source tree the binary was built in.
std::string default_model_path();
int resolve_threads(int requested);

struct LoadedModel {
  std::shared_ptr<const Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  double load_seconds = 0;
};

// Loads model and tokenizer; logs what was loaded and (verbose) which kernel
// path runs. With --backend cuda the weights stay in the file's row layout
// (the GPU copies them; a CPU repacking would go unused).
Result<LoadedModel> load_model(const ModelOptions& options);

// The whole file as bytes, or an I/O error naming it.
Result<std::string> read_text_file(const std::string& path);

double peak_rss_mib();

// Warns on stderr when the model's chat template was not recognised.
void warn_if_unrecognised(const ChatFormat& format);

// Prints "omnibus: error: <status>" to stderr; returns exit code 1.
int fail(const Status& status);

}  // namespace omnibus::cli
