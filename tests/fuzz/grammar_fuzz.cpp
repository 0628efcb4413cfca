// libFuzzer target for constrained decoding's parsers (src/grammar/): the
// first byte picks the input's kind.
//   0: GBNF text, then a NUL, then text to match. The grammar parses or is
//      refused; a parsed one runs over the text byte by byte, and a matcher
//      over a small vocabulary (every byte, a few multi-byte pieces) checks
//      each mask against the automaton: a token is in the mask exactly when
//      its bytes go through.
//   1: a JSON Schema. The converter gives GBNF or refuses; GBNF it gives
//      must always parse (a converter bug otherwise).
// Any input must end in a result or an error, never a crash, a sanitizer
// report or a hang. Run: scripts/fuzz_all.sh 60 grammar_fuzz.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "grammar/grammar_automaton.h"
#include "grammar/json_schema_grammar.h"
#include "grammar/token_mask.h"

using namespace omnibus;

namespace {

std::shared_ptr<const TokenTrie> small_vocabulary() {
  std::vector<std::string> v = {""};
  for (int b = 1; b < 256; ++b) v.emplace_back(1, static_cast<char>(b));
  for (const char* piece : {"{\"", "\":", "\",", "true", "null", "12", "\xC3\xA9", "\xE4\xB8", "ab", "\\u00", "  "})
    v.emplace_back(piece);
  return std::make_shared<const TokenTrie>(std::move(v));
}

void fuzz_gbnf(std::string_view input) {
  const size_t split = input.find('\0');
  const std::string_view text = input.substr(0, split);
  const std::string_view sample = split == std::string_view::npos ? std::string_view() : input.substr(split + 1);
  Result<Grammar> g = parse_gbnf(text);
  if (!g.is_ok()) return;
  auto grammar = std::make_shared<const Grammar>(std::move(g).value());
  static const std::shared_ptr<const TokenTrie> trie = small_vocabulary();
  GrammarMatcher matcher(grammar, trie);
  GrammarAutomaton reference(grammar);
  GrammarPosition at = reference.start();
  for (size_t i = 0; i < sample.size() && i < 64; ++i) {
    const std::span<const uint64_t> mask = matcher.allowed_tokens();
    for (int32_t id = 0; id < trie->vocab_size(); ++id) {
      const bool allowed = (mask[static_cast<size_t>(id) / 64] >> (id % 64)) & 1;
      const std::string& piece = trie->token_text(id);
      GrammarPosition after = at;
      const bool parses = !piece.empty() && reference.advance(after, piece);
      if (allowed != parses) std::abort();
    }
    const char c = sample[i];
    const bool ok = matcher.accept_text(std::string_view(&c, 1));
    const bool reference_ok = reference.advance_byte(at, static_cast<uint8_t>(c));
    if (ok != reference_ok) std::abort();
    if (!ok) break;
    if (matcher.can_end() != reference.can_end(at)) std::abort();
  }
}

void fuzz_schema(std::string_view input) {
  const nlohmann::json schema = nlohmann::json::parse(input, nullptr, false);
  if (schema.is_discarded()) return;
  Result<std::string> gbnf = json_schema_to_gbnf(schema);
  if (!gbnf.is_ok()) return;
  if (!parse_gbnf(*gbnf).is_ok()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    fuzz_gbnf(input);
  } else {
    fuzz_schema(input);
  }
  return 0;
}
