// Writes one of arch_golden_models() to a GGUF file, for llama.cpp to run
// (tools/make_arch_golden.py). Usage: write_golden_model NAME OUT.gguf
#include <cstdio>
#include <fstream>

#include "arch_golden_models.h"

int main(int argc, char** argv) {
  using namespace omnibus::testing;
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s NAME OUT.gguf\n", argv[0]);
    return 2;
  }
  for (const auto& m : arch_golden_models()) {
    if (m.name != argv[1]) continue;
    const auto bytes = make_tiny_model_bytes(m.spec);
    std::ofstream out(argv[2], std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", argv[2]);
      return 1;
    }
    return 0;
  }
  std::fprintf(stderr, "no golden model named '%s'\n", argv[1]);
  return 2;
}
