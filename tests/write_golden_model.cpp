// Writes one of arch_golden_models() to a GGUF file, for llama.cpp to run
// (tools/make_arch_golden.py). Usage: write_golden_model NAME OUT.gguf
// With --fuzz-seeds DIR: writes a very small model of each architecture
// (under 16 KB) into DIR, the seeds of tests/fuzz/model_load_fuzz.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "arch_golden_models.h"

namespace {

bool write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

int write_fuzz_seeds(const std::string& dir) {
  using namespace omnibus::testing;
  for (const char* arch : {"llama", "qwen2", "qwen3", "qwen3moe", "qwen2moe", "phi3", "gemma3", "gpt-oss"}) {
    TinyModelSpec s;
    s.architecture = arch;
    s.n_layer = 1;
    s.n_embd = 32;
    s.n_head = 2;
    s.n_head_kv = 1;
    s.n_ff = 32;
    s.vocab = 16;
    s.matrix_type = omnibus::DType::kQ8_0;
    s.embedding_type = omnibus::DType::kQ8_0;
    s.n_expert = 4;
    s.n_expert_used = 2;
    s.fused_qkv = s.longrope = std::string(arch) == "phi3";
    if (!write_file(dir + "/" + arch + ".gguf", make_tiny_model_bytes(s))) {
      std::fprintf(stderr, "cannot write into %s\n", dir.c_str());
      return 1;
    }
    // gpt-oss as published: MXFP4 experts (their exponent bytes and
    // repacking) beside Q8_0 attention.
    if (std::string(arch) == "gpt-oss") {
      s.expert_type = omnibus::DType::kMXFP4;
      if (!write_file(dir + "/gpt-oss-mxfp4.gguf", make_tiny_model_bytes(s))) return 1;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace omnibus::testing;
  if (argc == 3 && std::string(argv[1]) == "--fuzz-seeds") return write_fuzz_seeds(argv[2]);
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s NAME OUT.gguf\n", argv[0]);
    return 2;
  }
  for (const auto& m : arch_golden_models()) {
    if (m.name != argv[1]) continue;
    if (!write_file(argv[2], make_tiny_model_bytes(m.spec))) {
      std::fprintf(stderr, "cannot write %s\n", argv[2]);
      return 1;
    }
    return 0;
  }
  std::fprintf(stderr, "no golden model named '%s'\n", argv[1]);
  return 2;
}
