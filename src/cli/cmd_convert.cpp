// `omnibus convert`: a Hugging Face checkpoint folder to a GGUF file
// (convert/hf_to_gguf.h).
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "base/timer.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "convert/hf_to_gguf.h"

namespace omnibus::cli {
namespace {

struct ConvertCliOptions {
  std::string dir;
  std::string out;
  std::string out_type = "f16";
  std::string name;
};

int run_convert(const ConvertCliOptions& o) {
  ConvertOptions options;
  if (o.out_type == "f16")
    options.matrix_type = DType::kF16;
  else if (o.out_type == "bf16")
    options.matrix_type = DType::kBF16;
  else if (o.out_type == "f32")
    options.matrix_type = DType::kF32;
  else
    return fail(Status::invalid_argument("--outtype must be f16, bf16 or f32, not '" + o.out_type + "'"));
  options.name = o.name;
  // One line rewritten in place on a terminal; a line per tenth of the
  // tensors in a log.
  options.on_tensor = [tty = isatty(STDERR_FILENO) != 0](int index, int count, const std::string& name) {
    if (tty) {
      fmt::print(stderr, "\r[{:>4}/{}] {:<48}", index + 1, count, name);
      if (index + 1 == count) fmt::print(stderr, "\n");
    } else if (index * 10 / count != (index + 1) * 10 / count) {
      fmt::print(stderr, "[{:>4}/{}] {}\n", index + 1, count, name);
    }
  };
  const std::string out = o.out.empty() ? checkpoint_name(o.dir) + "-" + o.out_type + ".gguf" : o.out;
  Stopwatch timer;
  auto conversion = HfConversion::plan(o.dir, options);
  if (!conversion.is_ok()) return fail(conversion.status().with_context(o.dir));
  const HfModelConfig& c = (*conversion)->config();
  fmt::print(stderr, "{}: {} -> {} ({} layers, {} embedding, {} tensors, {} matrices)\n", o.dir, c.model_type,
             c.gguf_arch, c.n_layer, c.n_embd, (*conversion)->tensor_count(), o.out_type);
  if (Status s = (*conversion)->write(out); !s) return fail(s);
  std::error_code ec;
  const auto size = std::filesystem::file_size(out, ec);
  fmt::print(stderr, "wrote {} ({:.1f} MB) in {:.1f} s\n", out, ec ? 0.0 : size / 1e6, timer.seconds());
  return 0;
}

}  // namespace

CommandRunner add_convert_command(CLI::App& app) {
  auto opts = std::make_shared<ConvertCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "convert",
      "Convert a Hugging Face checkpoint folder (config.json, safetensors, tokenizer.json or tokenizer.model) to GGUF");
  cmd->add_option("dir", opts->dir, "Checkpoint folder")->required()->check(CLI::ExistingDirectory);
  cmd->add_option("-o,--out", opts->out, "GGUF file to write (default: <folder name>-<outtype>.gguf)");
  cmd->add_option("--outtype", opts->out_type, "Type of the matrices: f16 (default), bf16 or f32");
  cmd->add_option("--name", opts->name, "general.name (default: the folder's name)");
  return [opts] { return run_convert(*opts); };
}

}  // namespace omnibus::cli
