// Helpers for the tests that compare with llama.cpp's golden data
// (tokenizer_golden_test.cpp, tokenizer_variants_test.cpp). Header only.
#pragma once

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "real_model.h"
#include "gguf/gguf_file.h"
#include "tokenizer/vocab_from_gguf.h"

namespace omnibus::golden {

// Path of the model the golden data was made from, or "" (tests skip).
inline std::string model_path() { return testing::real_model_path(); }

inline Result<VocabData> load_vocab(const std::string& path) {
  OMNIBUS_ASSIGN_OR_RETURN(auto file, GgufFile::open(path));
  return vocab_from_gguf(*file);
}

inline bool is_smollm2(const VocabData& v) { return v.pre == "smollm" && v.tokens.size() == 49152; }

// One JSON value per non-empty line; empty when the file cannot be read.
inline std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

inline std::string to_hex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

inline std::string ids_to_string(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]";
}

}  // namespace omnibus::golden
