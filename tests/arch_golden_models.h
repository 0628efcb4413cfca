// The small random-weight models of each architecture that are checked
// against llama.cpp (tests/arch_golden_test.cpp). Their GGUF bytes come
// from tiny_model.cpp, so the test rebuilds them and needs no model file;
// tools/make_arch_golden.py writes the same bytes to disk (with
// write_golden_model) for llama.cpp and commits what llama.cpp computes
// under tests/golden/arch/<name>/. The golden data records the file's
// sha256: change a spec here (or the writer) and the test says to remake it.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "tiny_model.h"

namespace omnibus::testing {

struct ArchGoldenModel {
  std::string name;  // tests/golden/arch/<name>/
  TinyModelSpec spec;
};

const std::vector<ArchGoldenModel>& arch_golden_models();

// gtest prints a test parameter with this (not as raw bytes).
inline void PrintTo(const ArchGoldenModel& m, std::ostream* os) { *os << m.name; }

}  // namespace omnibus::testing
