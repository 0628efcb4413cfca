#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <limits>

#include "base/log.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/token_attributes.h"
#include "tokenizer/utf8.h"

namespace omnibus {

using namespace tokenizer_internal;

namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

Status check_id(const char* name, int32_t id, size_t n_tokens) {
  if (id < -1 || (id >= 0 && static_cast<size_t>(id) >= n_tokens)) {
    return Status::out_of_range(std::string(name) + " token id " + std::to_string(id) +
                                " is outside the vocabulary (" + std::to_string(n_tokens) + " tokens)");
  }
  return Status::ok();
}

Status check_arrays(const VocabData& v) {
  const size_t n = v.tokens.size();
  if (n == 0) return Status::corrupt("the vocabulary has no tokens");
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return Status::corrupt("the vocabulary has too many tokens (" + std::to_string(n) + ")");
  }
  if (!v.scores.empty() && v.scores.size() != n) {
    return Status::corrupt("the vocabulary has " + std::to_string(n) + " tokens but " +
                           std::to_string(v.scores.size()) + " scores");
  }
  if (!v.token_types.empty() && v.token_types.size() != n) {
    return Status::corrupt("the vocabulary has " + std::to_string(n) + " tokens but " +
                           std::to_string(v.token_types.size()) + " token types");
  }
  for (size_t i = 0; i < v.token_types.size(); ++i) {
    if (v.token_types[i] < 0 || v.token_types[i] > static_cast<int32_t>(TokenType::kByte)) {
      return Status::corrupt("token " + std::to_string(i) + " has unknown token type " +
                             std::to_string(v.token_types[i]));
    }
  }
  return Status::ok();
}

Status check_special_ids(const VocabData& v) {
  const size_t n = v.tokens.size();
  OMNIBUS_RETURN_IF_ERROR(check_id("BOS", v.bos_id, n));
  OMNIBUS_RETURN_IF_ERROR(check_id("EOS", v.eos_id, n));
  OMNIBUS_RETURN_IF_ERROR(check_id("EOT", v.eot_id, n));
  OMNIBUS_RETURN_IF_ERROR(check_id("EOM", v.eom_id, n));
  OMNIBUS_RETURN_IF_ERROR(check_id("unknown", v.unk_id, n));
  OMNIBUS_RETURN_IF_ERROR(check_id("padding", v.pad_id, n));
  for (int32_t id : v.end_of_generation_ids) {
    // -1 means "none" for a single id but is meaningless inside the list.
    OMNIBUS_RETURN_IF_ERROR(check_id("end-of-generation", id == -1 ? -2 : id, n));
  }
  if (v.add_bos && v.bos_id < 0) return Status::invalid_argument("add_bos is set but there is no BOS token");
  if (v.add_eos && v.eos_id < 0) return Status::invalid_argument("add_eos is set but there is no EOS token");
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::create(VocabData vocab) {
  std::unique_ptr<Tokenizer> tokenizer(new Tokenizer());
  OMNIBUS_RETURN_IF_ERROR(tokenizer->build(std::move(vocab)));
  return tokenizer;
}

Status Tokenizer::build(VocabData vocab) {
  if (vocab.model != "gpt2" && vocab.model != "llama") {
    return Status::unsupported("tokenizer model '" + vocab.model + "' is not supported (expected 'gpt2' or 'llama')");
  }
  OMNIBUS_RETURN_IF_ERROR(check_arrays(vocab));
  OMNIBUS_RETURN_IF_ERROR(check_special_ids(vocab));
  const size_t n = vocab.tokens.size();
  if (vocab.scores.empty()) vocab.scores.assign(n, 0.0f);
  is_spm_ = vocab.model == "llama";

  token_ids_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    std::string& text = vocab.tokens[i];
    if (text.empty()) text = "[EMPTY_" + std::to_string(i) + "]";  // as llama.cpp does
    max_bytes_per_token_ = std::max(max_bytes_per_token_, text.size());
    const auto [it, inserted] = token_ids_.emplace(text, static_cast<int32_t>(i));
    if (!inserted) {
      return Status::corrupt("tokens " + std::to_string(it->second) + " and " + std::to_string(i) +
                             " have the same text '" + text + "'");
    }
  }
  OMNIBUS_ASSIGN_OR_RETURN(attributes_, token_attributes(vocab));
  if (vocab.rstrip_after_specials) {  // llama.cpp's Phi-3 rule, by its token texts
    for (size_t i = 0; i < n; ++i)
      if (attributes_[i] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) attributes_[i] |= kAttrRstrip;
    for (const auto& [text, rstrip] : {std::pair{"</s>", true}, std::pair{"<unk>", false}, std::pair{"<s>", false},
                                       std::pair{"<|endoftext|>", false}}) {
      const auto it = token_ids_.find(text);
      if (it == token_ids_.end()) continue;
      attributes_[it->second] = rstrip ? attributes_[it->second] | kAttrRstrip : attributes_[it->second] & ~kAttrRstrip;
    }
  }
  const std::vector<int32_t> detected = detect_end_of_generation_ids(vocab);
  vocab.end_of_generation_ids.insert(vocab.end_of_generation_ids.end(), detected.begin(), detected.end());
  std::sort(vocab.end_of_generation_ids.begin(), vocab.end_of_generation_ids.end());
  vocab.end_of_generation_ids.erase(
      std::unique(vocab.end_of_generation_ids.begin(), vocab.end_of_generation_ids.end()),
      vocab.end_of_generation_ids.end());
  vocab_ = std::move(vocab);

  specials_ = special_token_order(vocab_.tokens, attributes_, /*user_defined_only=*/false);
  user_defined_specials_ = special_token_order(vocab_.tokens, attributes_, /*user_defined_only=*/true);

  if (is_spm_) {
    spm_tables_.tokens = &token_ids_;
    spm_tables_.scores = &vocab_.scores;
    spm_tables_.unk_id = vocab_.unk_id;
    spm_tables_.byte_tokens = byte_fallback_tokens(token_ids_);
    return Status::ok();
  }
  pre_config_ = pre_tokenizer_config(vocab_.pre);
  if (!pre_config_.recognised) {
    log_warn("tokenizer: unknown pre-tokenizer '{}', using llama.cpp's default regexes", vocab_.pre);
  }
  OMNIBUS_ASSIGN_OR_RETURN(pre_tokenizer_, PreTokenizer::create(pre_config_.kind));
  OMNIBUS_ASSIGN_OR_RETURN(merges_, BpeMerges::create(vocab_.merges));
  return Status::ok();
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && vocab_.add_bos) out.push_back(vocab_.bos_id);
  const std::vector<Fragment> fragments =
      split_special_tokens(text, parse_special ? specials_ : user_defined_specials_, vocab_.tokens);
  bool after_special = true;  // the start of the text counts as "after a special token"
  bool strip = false;         // the special token before drops the whitespace after it
  for (const Fragment& f : fragments) {
    if (f.token >= 0) {
      out.push_back(f.token);
      after_special = true;
      strip = (attributes_[f.token] & kAttrRstrip) != 0;
      continue;
    }
    std::string_view raw = text.substr(f.begin, f.end - f.begin);
    if (strip) {  // C's isspace, as llama.cpp
      while (!raw.empty() && std::string_view(" \t\n\v\f\r").find(raw.front()) != std::string_view::npos)
        raw.remove_prefix(1);
      strip = false;
      if (raw.empty()) continue;
    }
    if (is_spm_) {
      encode_spm(raw, after_special, &out);
    } else {
      encode_bpe(raw, &out);
    }
    after_special = false;
  }
  if (add_special && vocab_.add_eos) out.push_back(vocab_.eos_id);
  return out;
}

void Tokenizer::encode_spm(std::string_view text, bool after_special, std::vector<int32_t>* out) const {
  std::string escaped;
  escaped.reserve(text.size() + 8);
  if (vocab_.add_space_prefix && after_special) escaped.append(kSpmSpace);
  for (char c : text) {
    if (c == ' ') {
      escaped.append(kSpmSpace);
    } else {
      escaped.push_back(c);
    }
  }
  spm_encode(escaped, spm_tables_, out);
}

void Tokenizer::encode_bpe(std::string_view text, std::vector<int32_t>* out) const {
  // llama.cpp decodes the text (bad bytes become U+FFFD) and re-encodes it
  // before splitting. For valid UTF-8 that is the identity.
  std::string canonical;
  std::string subject;  // what the regexes see: surrogates replaced, same byte offsets
  std::string_view words_from = text;
  std::string_view regex_input = text;
  if (!is_valid_utf8(text)) {
    for (uint32_t cp : decode_utf8_lenient(text)) {
      append_utf8(cp, &canonical);
      append_utf8(cp >= 0xD800 && cp <= 0xDFFF ? kReplacementChar : cp, &subject);
    }
    words_from = canonical;
    regex_input = subject;
  }
  std::string encoded;
  for (const TextSpan& span : pre_tokenizer_->split(regex_input)) {
    encoded.clear();
    append_gpt2_encoded(words_from.substr(span.begin, span.end - span.begin), &encoded);
    merges_.encode_word(encoded, token_ids_, pre_config_.ignore_merges, out);
  }
}

bool Tokenizer::is_end_of_generation(int32_t id) const {
  return std::binary_search(vocab_.end_of_generation_ids.begin(), vocab_.end_of_generation_ids.end(), id);
}

bool Tokenizer::is_control(int32_t id) const { return is_valid_id(id) && (attributes_[id] & kAttrControl) != 0; }

std::string_view Tokenizer::token_text(int32_t id) const {
  return is_valid_id(id) ? std::string_view(vocab_.tokens[id]) : std::string_view();
}

int32_t Tokenizer::token_id(std::string_view text) const { return find_id(token_ids_, text); }

}  // namespace omnibus
