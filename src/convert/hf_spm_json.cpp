// A SentencePiece BPE saved as tokenizer.json alone (byte fallback, "▁"
// for spaces; transformers 5 writes no tokenizer.model beside it): GGUF's
// llama tokenizer, as converted from tokenizer.model.
//
// Scores. GGUF's llama tokenizer merges, at each step, the adjacent pair
// whose joined text is the vocabulary token of the highest score: a
// SentencePiece BPE model's own order. llama.cpp's converter
// (_set_vocab_llama_hf) gives every token the score -1000, with which that
// tokenizer merges the leftmost pair first, whatever the model learned
// ("hello" may come out as "he" "llo" where the model has "hell" "o").
// Here a token scores minus the rank of the first merge that makes it:
// transformers wrote the merges in the order of the SentencePiece scores
// (its converter sorts them so), so the order is the model's and the file
// tokenizes as its tokenizer.model would (tests/convert_golden_test.cpp,
// llama_hfspm). Tokens no merge makes score below every merged one.
//
// Types: <0xXX> byte, tokenizer.json's special added tokens control, its
// other added tokens user-defined (with "▁" as a space), the unknown token
// (where no added token is) unknown, the rest normal; as from
// tokenizer.model. The vocabulary is
// padded with [PADn] tokens to the embedding's rows (llama.cpp's is not,
// and its file then fails to load).
#include <map>
#include <optional>
#include <vector>

#include "convert/hf_tokenizer_internal.h"
#include "tokenizer/spm.h"
#include "tokenizer/token_attributes.h"

namespace omnibus::hf_tokenizer_internal {
namespace {

constexpr const char* kSpace = "\xe2\x96\x81";  // ▁

bool is_type(const nlohmann::json& j, const char* type) {
  return j.is_object() && j.contains("type") && j["type"] == type;
}

// Whether the text gets a "▁" in front (SentencePiece's add_dummy_prefix):
// a Metaspace pre-tokenizer that prepends (transformers 5: prepend_scheme
// "first" or "always"; older: add_prefix_space), or a normalizer that
// prepends "▁" (the legacy Llama 2 form); nullopt when tokenizer.json
// neither turns spaces into "▁" nor prepends it (not SentencePiece style).
std::optional<bool> prepends_space(const nlohmann::json& tok) {
  auto members = [](const nlohmann::json& j, const char* key) {
    std::vector<const nlohmann::json*> out;
    if (is_type(j, "Sequence") && j.contains(key) && j[key].is_array())
      for (const auto& m : j[key]) out.push_back(&m);
    else if (j.is_object())
      out.push_back(&j);
    return out;
  };
  bool spaces = false, prepend = false;
  if (tok.contains("pre_tokenizer"))
    for (const nlohmann::json* p : members(tok["pre_tokenizer"], "pretokenizers")) {
      if (!is_type(*p, "Metaspace") || p->value("replacement", "") != kSpace) continue;
      spaces = true;
      const std::string scheme = p->contains("prepend_scheme") && (*p)["prepend_scheme"].is_string()
                                     ? (*p)["prepend_scheme"].get<std::string>()
                                     : (p->value("add_prefix_space", true) ? "always" : "never");
      prepend = scheme != "never";
    }
  if (tok.contains("normalizer"))
    for (const nlohmann::json* n : members(tok["normalizer"], "normalizers")) {
      if (is_type(*n, "Prepend") && n->value("prepend", "") == kSpace) prepend = true;
      if (is_type(*n, "Replace") && n->value("content", "") == kSpace && n->contains("pattern") &&
          (*n)["pattern"].is_object() && (*n)["pattern"].value("String", "") == " ")
        spaces = true;
    }
  if (!spaces) return std::nullopt;
  return prepend;
}

// Each merged token's score: minus the rank of the first merge making it.
Result<std::map<std::string, float>> merge_scores(const nlohmann::json& merges) {
  std::map<std::string, float> scores;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    OMNIBUS_ASSIGN_OR_RETURN(std::string text, merge_text(merges[rank]));
    const size_t space = text.find(' ');
    if (space == std::string::npos) return Status::corrupt("tokenizer.json has a merge without two parts: " + text);
    text.erase(space, 1);
    scores.emplace(std::move(text), -static_cast<float>(rank));  // the first merge wins
  }
  return scores;
}

}  // namespace

bool is_sentencepiece_json(const nlohmann::json& tok) {
  if (!tok.is_object() || !tok.contains("model") || !tok["model"].is_object()) return false;
  const nlohmann::json& model = tok["model"];
  const bool fallback =
      model.contains("byte_fallback") && model["byte_fallback"].is_boolean() && model["byte_fallback"].get<bool>();
  return model.value("type", "") == "BPE" && fallback && tok.contains("decoder") && is_type(tok["decoder"], "Sequence");
}

Status add_sentencepiece_json_keys(const HfFolder& files, int vocab_size, GgufWriter& w) {
  const nlohmann::json& tok = files.tokenizer;
  const nlohmann::json& model = tok["model"];
  if (!model.contains("vocab") || !model["vocab"].is_object() || !model.contains("merges") ||
      !model["merges"].is_array())
    return Status::corrupt("tokenizer.json's model needs a vocab object and a merges array");
  const std::optional<bool> prepend = prepends_space(tok);
  if (!prepend)
    return Status::unsupported(
        "tokenizer.json is a BPE with byte fallback but does not write spaces as \xe2\x96\x81 (a Metaspace "
        "pre-tokenizer or a Replace normalizer): not SentencePiece style");
  OMNIBUS_ASSIGN_OR_RETURN(const auto merged, merge_scores(model["merges"]));
  const float unmerged = -static_cast<float>(model["merges"].size());

  const int64_t n = vocab_size;
  std::vector<std::string> tokens(n);
  std::vector<float> scores(n, -10000.0f);
  std::vector<int32_t> types(n, static_cast<int32_t>(TokenType::kUnused));
  for (int64_t i = 0; i < n; ++i) tokens[i] = "[PAD" + std::to_string(i) + "]";
  auto slot = [n](const nlohmann::json& id, const std::string& text) -> Result<int64_t> {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= n)
      return Status::corrupt("tokenizer.json gives '" + text.substr(0, 64) + "' the id " + describe(id) +
                             ", outside the model's " + std::to_string(n) + " embedding rows");
    return id.get<int64_t>();
  };
  for (const auto& [text, id_json] : model["vocab"].items()) {
    OMNIBUS_ASSIGN_OR_RETURN(const int64_t id, slot(id_json, text));
    tokens[id] = text;
    const auto score = merged.find(text);
    scores[id] = score != merged.end() ? score->second : unmerged;
    types[id] =
        static_cast<int32_t>(tokenizer_internal::byte_token_value(text) >= 0 ? TokenType::kByte : TokenType::kNormal);
  }
  std::vector<bool> added_here(n, false);
  if (tok.contains("added_tokens") && tok["added_tokens"].is_array()) {
    for (const auto& added : tok["added_tokens"]) {
      if (!added.is_object() || !added.contains("id") || !added.contains("content") || !added["content"].is_string())
        return Status::corrupt("tokenizer.json has an added token without an id and content: " + describe(added));
      std::string text = added["content"].get<std::string>();
      OMNIBUS_ASSIGN_OR_RETURN(const int64_t id, slot(added["id"], text));
      const bool special = added.value("special", false) || looks_special(text);
      if (!special) text = tokenizer_internal::replace_spm_spaces(text);
      added_here[id] = true;
      tokens[id] = std::move(text);
      scores[id] = -1000.0f;
      types[id] = static_cast<int32_t>(special ? TokenType::kControl : TokenType::kUserDefined);
    }
  }
  // The unknown token (the model's, or tokenizer_config.json's by text),
  // unless an added token took its slot (control, as tokenizer.model's
  // conversion makes it where tokenizer_config.json calls it special).
  std::string unknown = token_text(model.value("unk_token", nlohmann::json()));
  if (unknown.empty()) unknown = token_text(files.tokenizer_config.value("unk_token", nlohmann::json()));
  if (!unknown.empty() && model["vocab"].contains(unknown)) {
    const int64_t id = model["vocab"][unknown].get<int64_t>();
    if (!added_here[id]) types[id] = static_cast<int32_t>(TokenType::kUnknown);
  }

  return write_llama_vocabulary(files, std::move(tokens), std::move(scores), std::move(types), *prepend, w);
}

}  // namespace omnibus::hf_tokenizer_internal
