// Tokenizations from llama.cpp's own library (no llama-cpp-python): the
// records tools/make_tokenizer_golden.py writes for one vocabulary, for a
// machine without the Python package. Reads a vocab-only (or full) GGUF
// and a corpus (one JSON string a line) and writes, a line per string,
//   {"variant", "text", "ids", "ids_plain", "decoded_hex"}
// with ids = tokenize(add_special, parse_special), ids_plain =
// tokenize(no add_special, no parse_special), decoded_hex = detokenize(ids,
// keeping special tokens), as the script's variant records.
//   llama_tokenize VOCAB.gguf CORPUS.jsonl VARIANT > records.jsonl
// Not part of the build: compile it as llama_golden.cpp (make_golden_lib.py),
// with -I/usr/include for nlohmann/json.hpp.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llama.h"

static std::vector<llama_token> tokenize(const llama_vocab* vocab, const std::string& text, bool add_special,
                                         bool parse_special) {
  std::vector<llama_token> ids(text.size() + 8);
  int n = llama_tokenize(vocab, text.data(), (int)text.size(), ids.data(), (int)ids.size(), add_special, parse_special);
  if (n < 0) {
    ids.resize(-n);
    n = llama_tokenize(vocab, text.data(), (int)text.size(), ids.data(), (int)ids.size(), add_special, parse_special);
  }
  ids.resize(n < 0 ? 0 : n);
  return ids;
}

static std::string detokenize(const llama_vocab* vocab, const std::vector<llama_token>& ids) {
  std::string out(ids.size() * 16 + 16, '\0');
  int n = llama_detokenize(vocab, ids.data(), (int)ids.size(), out.data(), (int)out.size(), false, false);
  if (n < 0) {
    out.resize(-n);
    n = llama_detokenize(vocab, ids.data(), (int)ids.size(), out.data(), (int)out.size(), false, false);
  }
  out.resize(n < 0 ? 0 : n);
  return out;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s VOCAB.gguf CORPUS.jsonl VARIANT\n", argv[0]);
    return 2;
  }
  llama_backend_init();
  auto mp = llama_model_default_params();
  mp.vocab_only = true;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) return 1;
  const llama_vocab* vocab = llama_model_get_vocab(model);
  std::ifstream corpus(argv[2]);
  std::string line;
  static const char* kHex = "0123456789abcdef";
  while (std::getline(corpus, line)) {
    if (line.empty()) continue;
    const std::string text = nlohmann::json::parse(line).get<std::string>();
    const std::vector<llama_token> ids = tokenize(vocab, text, true, true);
    const std::string decoded = detokenize(vocab, ids);
    std::string hex;
    for (unsigned char c : decoded) hex += kHex[c >> 4], hex += kHex[c & 15];
    nlohmann::json record = {{"variant", argv[3]},
                             {"text", text},
                             {"ids", ids},
                             {"ids_plain", tokenize(vocab, text, false, false)},
                             {"decoded_hex", hex}};
    std::cout << record.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict) << "\n";
  }
  llama_model_free(model);
  return 0;
}
