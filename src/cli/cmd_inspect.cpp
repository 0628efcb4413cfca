// `omnibus inspect`: a GGUF file's metadata and tensor table.
#include <fmt/format.h>

#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/common.h"
#include "gguf/gguf_file.h"

namespace omnibus::cli {
namespace {

struct InspectOptions {
  std::string model_path;
  bool all_values = false;
};

std::string shape_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

int run_inspect(const InspectOptions& o) {
  const std::string path = o.model_path.empty() ? default_model_path() : o.model_path;
  auto file = GgufFile::open(path);
  if (!file.is_ok()) return fail(file.status().with_context(path));
  const GgufFile& f = **file;
  fmt::print("file: {}\nGGUF version: {}\nalignment: {}\nsize: {} bytes\n\nmetadata ({} keys):\n", path, f.version(),
             f.alignment(), f.file_size(), f.metadata().size());
  for (const auto& [key, value] : f.metadata()) {
    std::string shown = value.describe();
    if (!o.all_values && shown.size() > 120) shown = shown.substr(0, 117) + "...";
    fmt::print("  {:<45} {}\n", key, shown);
  }
  fmt::print("\ntensors ({}):\n  {:<36} {:<8} {:<22} {:>12}\n", f.tensors().size(), "name", "type", "shape", "bytes");
  uint64_t total = 0;
  for (const auto& t : f.tensors()) {
    fmt::print("  {:<36} {:<8} {:<22} {:>12}\n", t.name, dtype_name(t.dtype), shape_string(t.dims), t.nbytes);
    total += t.nbytes;
  }
  fmt::print("  {:<36} {:<8} {:<22} {:>12}\n", "total", "", "", total);
  return 0;
}

}  // namespace

CommandRunner add_inspect_command(CLI::App& app) {
  auto opts = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand("inspect", "Show a GGUF file's metadata and tensor table");
  cmd->add_option("-m,--model,file", opts->model_path, "GGUF file (default: the default model)");
  cmd->add_flag("--all", opts->all_values, "Do not shorten long metadata values");
  return [opts] { return run_inspect(*opts); };
}

}  // namespace omnibus::cli
