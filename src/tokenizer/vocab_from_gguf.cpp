#include "tokenizer/vocab_from_gguf.h"

#include <algorithm>
#include <cctype>
#include <limits>

namespace omnibus {

namespace {

constexpr const char* kModelKey = "tokenizer.ggml.model";
constexpr const char* kPreKey = "tokenizer.ggml.pre";
constexpr const char* kTokensKey = "tokenizer.ggml.tokens";
constexpr const char* kScoresKey = "tokenizer.ggml.scores";
constexpr const char* kTypesKey = "tokenizer.ggml.token_type";
constexpr const char* kMergesKey = "tokenizer.ggml.merges";

// llama.cpp reads vocabulary strings as C strings, so a token text with a
// NUL byte ends there (and an empty one is renamed by Tokenizer::create). We
// do the same to produce the same ids.
void truncate_at_nul(std::string* s) {
  const size_t nul = s->find('\0');
  if (nul != std::string::npos) s->resize(nul);
}

// An optional string key: "" when absent, an error when of another type.
Result<std::string> optional_string(const GgufFile& file, const char* key) {
  if (file.find(key) == nullptr) return std::string();
  return file.get_string(key);
}

Status read_optional_bool(const GgufFile& file, const char* key, bool* out) {
  if (file.find(key) == nullptr) return Status::ok();
  OMNIBUS_ASSIGN_OR_RETURN(*out, file.get_bool(key));
  return Status::ok();
}

Status read_optional_id(const GgufFile& file, const char* key, size_t n_tokens, int32_t* out) {
  if (file.find(key) == nullptr) return Status::ok();
  OMNIBUS_ASSIGN_OR_RETURN(const int64_t id, file.get_int(key));
  if (id < 0 || static_cast<uint64_t>(id) >= n_tokens) {
    return Status::out_of_range(std::string(key) + " = " + std::to_string(id) + " is outside the vocabulary (" +
                                std::to_string(n_tokens) + " tokens)");
  }
  *out = static_cast<int32_t>(id);
  return Status::ok();
}

Status check_length(const char* key, size_t got, size_t n_tokens) {
  if (got == n_tokens) return Status::ok();
  return Status::corrupt(std::string(key) + " has " + std::to_string(got) + " entries but " + kTokensKey +
                         " has " + std::to_string(n_tokens));
}

Status read_scores_and_types(const GgufFile& file, VocabData* v) {
  const size_t n = v->tokens.size();
  if (file.find(kScoresKey) != nullptr) {
    OMNIBUS_ASSIGN_OR_RETURN(const std::vector<double> scores, file.get_float_array(kScoresKey));
    OMNIBUS_RETURN_IF_ERROR(check_length(kScoresKey, scores.size(), n));
    v->scores.assign(scores.begin(), scores.end());
  }
  if (file.find(kTypesKey) != nullptr) {
    OMNIBUS_ASSIGN_OR_RETURN(const std::vector<int64_t> types, file.get_int_array(kTypesKey));
    OMNIBUS_RETURN_IF_ERROR(check_length(kTypesKey, types.size(), n));
    v->token_types.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      if (types[i] < 0 || types[i] > static_cast<int64_t>(TokenType::kByte)) {
        return Status::corrupt(std::string(kTypesKey) + "[" + std::to_string(i) + "] = " +
                               std::to_string(types[i]) + " is not a token type (0..6)");
      }
      v->token_types.push_back(static_cast<int32_t>(types[i]));
    }
  }
  return Status::ok();
}

Status read_merges(const GgufFile& file, VocabData* v) {
  if (file.find(kMergesKey) == nullptr) {
    if (v->model == "gpt2") return Status::corrupt(std::string("a gpt2 tokenizer needs ") + kMergesKey);
    return Status::ok();
  }
  OMNIBUS_ASSIGN_OR_RETURN(v->merges, file.get_string_array(kMergesKey));
  for (std::string& m : v->merges) truncate_at_nul(&m);
  for (size_t i = 0; i < v->merges.size(); ++i) {
    const std::string& m = v->merges[i];
    const size_t space = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    if (space == std::string::npos || space + 1 >= m.size()) {
      return Status::corrupt(std::string(kMergesKey) + "[" + std::to_string(i) + "] = '" + m +
                             "' is not two symbols separated by a space");
    }
  }
  return Status::ok();
}

Status read_special_ids(const GgufFile& file, VocabData* v) {
  const size_t n = v->tokens.size();
  OMNIBUS_RETURN_IF_ERROR(read_optional_id(file, "tokenizer.ggml.bos_token_id", n, &v->bos_id));
  OMNIBUS_RETURN_IF_ERROR(read_optional_id(file, "tokenizer.ggml.eos_token_id", n, &v->eos_id));
  OMNIBUS_RETURN_IF_ERROR(read_optional_id(file, "tokenizer.ggml.eot_token_id", n, &v->eot_id));
  OMNIBUS_RETURN_IF_ERROR(read_optional_id(file, "tokenizer.ggml.eom_token_id", n, &v->eom_id));
  OMNIBUS_RETURN_IF_ERROR(read_optional_id(file, "tokenizer.ggml.unknown_token_id", n, &v->unk_id));
  OMNIBUS_RETURN_IF_ERROR(read_optional_id(file, "tokenizer.ggml.padding_token_id", n, &v->pad_id));
  if (v->eot_id < 0) v->eot_id = detect_eot_id(*v);
  return Status::ok();
}

Status read_flags(const GgufFile& file, VocabData* v) {
  OMNIBUS_RETURN_IF_ERROR(read_optional_bool(file, "tokenizer.ggml.add_bos_token", &v->add_bos));
  OMNIBUS_RETURN_IF_ERROR(read_optional_bool(file, "tokenizer.ggml.add_eos_token", &v->add_eos));
  OMNIBUS_RETURN_IF_ERROR(read_optional_bool(file, "tokenizer.ggml.add_space_prefix", &v->add_space_prefix));
  if (v->add_bos && v->bos_id < 0) {
    return Status::corrupt("tokenizer.ggml.add_bos_token is true but tokenizer.ggml.bos_token_id is not set");
  }
  if (v->add_eos && v->eos_id < 0) {
    return Status::corrupt("tokenizer.ggml.add_eos_token is true but tokenizer.ggml.eos_token_id is not set");
  }
  return Status::ok();
}

}  // namespace

Result<VocabData> vocab_from_gguf(const GgufFile& file) {
  VocabData v;
  OMNIBUS_ASSIGN_OR_RETURN(v.model, file.get_string(kModelKey));
  if (v.model != "gpt2" && v.model != "llama") {
    return Status::unsupported(std::string(kModelKey) + " = '" + v.model +
                               "' is not supported (expected 'gpt2' or 'llama')");
  }
  OMNIBUS_ASSIGN_OR_RETURN(v.pre, optional_string(file, kPreKey));
  OMNIBUS_ASSIGN_OR_RETURN(v.tokens, file.get_string_array(kTokensKey));
  for (std::string& t : v.tokens) truncate_at_nul(&t);
  if (v.tokens.empty()) return Status::corrupt(std::string(kTokensKey) + " is empty");
  if (v.tokens.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return Status::corrupt(std::string(kTokensKey) + " has too many entries");
  }
  OMNIBUS_RETURN_IF_ERROR(read_scores_and_types(file, &v));
  OMNIBUS_RETURN_IF_ERROR(read_merges(file, &v));
  apply_model_defaults(&v);
  OMNIBUS_RETURN_IF_ERROR(read_special_ids(file, &v));
  OMNIBUS_RETURN_IF_ERROR(read_flags(file, &v));
  OMNIBUS_ASSIGN_OR_RETURN(v.chat_template, optional_string(file, "tokenizer.chat_template"));
  OMNIBUS_ASSIGN_OR_RETURN(std::string name, optional_string(file, "general.name"));
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  v.rstrip_after_specials = name.find("phi3") != std::string::npos || name.find("phi-3") != std::string::npos;
  v.end_of_generation_ids = detect_end_of_generation_ids(v);
  return v;
}

}  // namespace omnibus
