#include "cli/common.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "backends/cpu/cpu_backend.h"
#if defined(OMNIBUS_HAVE_CUDA)
#include "backends/cuda/cuda_backend.h"
#endif
#include "base/cpu_features.h"
#include "base/log.h"
#include "base/timer.h"
#include "kernels/attention.h"
#include "kernels/kernel_table.h"
#include "tokenizer/vocab_from_gguf.h"

namespace omnibus::cli {
namespace {
constexpr const char* kDefaultModelFile = "models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

void add_model_options(CLI::App& cmd, ModelOptions& o) {
  cmd.add_option("-m,--model", o.model_path, "GGUF model file (default: " + std::string(kDefaultModelFile) + ")");
  cmd.add_option("-t,--threads", o.threads, "Threads (default: number of cores)")->check(CLI::Range(0, 1024));
  cmd.add_flag("--verbose", o.verbose, "Log loading details and the kernel path taken");
  cmd.add_flag("!--no-interleave", o.interleave,
               "Keep weights in the file's row layout (mmap only) instead of repacking every quantized matrix but "
               "Q5_1 into the faster interleaved layout at load; results are identical");
  std::string tables;
  for (const KernelTable* t : compiled_kernel_tables()) tables += std::string(tables.empty() ? "" : ", ") + t->name;
  cmd.add_option("--kernels", o.kernels,
                 "Kernel table by name, for A/B runs (default: the best this CPU runs; as OMNIBUS_KERNELS, which "
                 "this flag overrides). This build has: " +
                     tables);
}

namespace {

// --kernels: the table for the whole process, chosen before any kernel runs
// (kernels() reads OMNIBUS_KERNELS once, at its first call).
Status apply_kernels_flag(const std::string& name) {
  if (name.empty()) return Status::ok();
  auto table = choose_kernel_table(cpu_features(), name);
  if (!table.is_ok()) {
    std::string message = table.status().message();
    if (message.starts_with("OMNIBUS_KERNELS=")) message = "--kernels " + message.substr(16);
    return Status::invalid_argument(message);
  }
  setenv("OMNIBUS_KERNELS", name.c_str(), 1);
  if (&kernels() != *table)
    return Status::internal("--kernels " + name + ": the kernel table was already chosen (" + kernels().name + ")");
  return Status::ok();
}

}  // namespace

void add_kv_type_option(CLI::App& cmd, ModelOptions& o) {
  cmd.add_option_function<std::string>(
         "--kv-type",
         [&o](const std::string& name) { parse_kv_cache_type(name.c_str(), &o.kv_type); },
         "KV cache element type: f16 (default); q8_0 (int8 with a scale per 32 values: half the memory and "
         "bytes read per position, 1.88x the context per MiB); q4_0 (4-bit codes with a scale per 32 values, as "
         "llama.cpp's q4_0 cache: 3.6x the context per MiB and the fewest bytes per position, lossy); bf16 (f16's "
         "size, 8 mantissa bits instead of 11, faster attention at long context)")
      ->check(CLI::IsMember({"f16", "q8_0", "q4_0", "bf16"}))
      ->default_str("f16");
}

void add_backend_option(CLI::App& cmd, ModelOptions& o) {
  cmd.add_option("--backend", o.backend,
                 "Where the model runs: cpu (default) or cuda (one NVIDIA GPU; needs a build with "
                 "-DOMNIBUS_CUDA=ON; f16 KV cache only; build-checked, not yet tested on a GPU)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->default_str("cpu");
}

Result<std::unique_ptr<Backend>> make_backend(const ModelOptions& o) {
  if (o.backend == "cuda") {
#if defined(OMNIBUS_HAVE_CUDA)
    OMNIBUS_ASSIGN_OR_RETURN(std::unique_ptr<CudaBackend> cuda, CudaBackend::create());
    log_info("backend: {}", cuda->describe());
    return std::unique_ptr<Backend>(std::move(cuda));
#else
    return Status::unsupported("omnibus was built without CUDA (configure with -DOMNIBUS_CUDA=ON)");
#endif
  }
  // The CPU backend holds the process's kernel table: --kernels first.
  OMNIBUS_RETURN_IF_ERROR(apply_kernels_flag(o.kernels));
  return std::unique_ptr<Backend>(std::make_unique<CpuBackend>(resolve_threads(o.threads)));
}

std::string default_model_path() {
  if (const char* env = std::getenv("OMNIBUS_MODEL"); env != nullptr && *env != '\0') return env;
  namespace fs = std::filesystem;
  if (fs::exists(kDefaultModelFile)) return kDefaultModelFile;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  // build/src/cli/omnibus -> repo root is three levels up from the binary's folder.
  for (fs::path dir = exe.parent_path(); !ec && !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
    if (fs::exists(dir / kDefaultModelFile)) return (dir / kDefaultModelFile).string();
  }
  return kDefaultModelFile;
}

int resolve_threads(int requested) {
  if (requested > 0) return requested;
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

Result<LoadedModel> load_model(const ModelOptions& options) {
  if (options.verbose) set_log_level(LogLevel::kInfo);
  const std::string path = options.model_path.empty() ? default_model_path() : options.model_path;
  // Before anything runs a kernel: a table the CPU cannot run would crash it.
  OMNIBUS_RETURN_IF_ERROR(apply_kernels_flag(options.kernels));
  if (Status kernels_ok = kernel_choice_status(); !kernels_ok.is_ok()) return kernels_ok;
  Stopwatch clock;
  LoadedModel out;
  const bool interleave = options.interleave && options.backend != "cuda";
  const WeightRepacker repacker(kernels());  // the CPU backend's layout
  auto model = Model::load(path, ModelLoadOptions{.preparer = interleave ? &repacker : nullptr});
  if (!model.is_ok()) {
    Status s = model.status();
    if (options.model_path.empty() && s.code() == StatusCode::kIoError)
      return Status(s.code(), s.message() + " (fetch the default model with scripts/fetch_model.sh, or pass -m)");
    return s;
  }
  out.model = std::move(model).value();
  auto vocab = vocab_from_gguf(out.model->gguf());
  if (!vocab.is_ok()) return vocab.status().with_context(path + ": tokenizer");
  auto tokenizer = Tokenizer::create(std::move(vocab).value());
  if (!tokenizer.is_ok()) return tokenizer.status().with_context(path + ": tokenizer");
  out.tokenizer = std::move(tokenizer).value();
  out.load_seconds = clock.seconds();
  const ModelConfig& c = out.model->config();
  log_info("loaded {} ({}, {} layers, {} embd, {} heads / {} kv heads, vocab {}) in {:.0f} ms", path,
           c.architecture, c.n_layer, c.n_embd, c.n_head, c.n_head_kv, c.vocab_size, out.load_seconds * 1e3);
  log_info("CPU features: {}; matmul kernels: {}; attention kernels: {} ({} cache)", cpu_features().describe(),
           kernels().name, attention_path_name(c.head_dim, options.kv_type), kv_cache_type_name(options.kv_type));
  log_info("weights repacked into the interleaved layout: {:.1f} MiB{}", out.model->repacked_bytes() / 1048576.0,
           interleave ? "" : (options.backend == "cuda" ? " (--backend cuda)" : " (--no-interleave)"));
  return out;
}

Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::io_error("cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double peak_rss_mib() {
  // VmHWM is this process's own peak; getrusage's ru_maxrss can carry over
  // the peak of the process that exec'ed us.
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f != nullptr) {
    char line[256];
    while (std::fgets(line, sizeof line, f) != nullptr) {
      long kib = 0;
      if (std::sscanf(line, "VmHWM: %ld kB", &kib) == 1) {
        std::fclose(f);
        return kib / 1024.0;
      }
    }
    std::fclose(f);
  }
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;  // KiB on Linux
}

void warn_if_unrecognised(const ChatFormat& format) {
  if (!format.guessed_from.empty())
    log_info("the model has no chat template; its vocabulary has {}, so using the {} format (override with "
             "--chat-template)",
             format.guessed_from, chat_template_name(format.kind));
  else if (!format.recognised)
    log_warn("the model's chat template is not one omnibus recognises; using ChatML (override with --chat-template)");
}

int fail(const Status& status) {
  fmt::print(stderr, "omnibus: error: {}\n", status.to_string());
  return 1;
}

}  // namespace omnibus::cli
