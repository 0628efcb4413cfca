#include "convert/hf_tokenizer.h"

#include <charconv>
#include <cmath>
#include <map>
#include <optional>

#include "convert/hf_tokenizer_internal.h"
#include "convert/sentencepiece_model.h"
#include "gguf/gguf_parser.h"
#include "tokenizer/spm.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "tokenizer/vocab.h"

namespace omnibus {

using namespace hf_tokenizer_internal;  // NOLINT(google-build-using-namespace): this file's own helpers

namespace {

// The Split regexes of the pre-tokenizers we run (tokenizer/pretokenizer.cpp),
// as tokenizer.json spells them; {C} is the contractions group, written
// either way.
struct KnownSplit {
  const char* pre;
  const char* regex;
};
constexpr const char* kContractionsInsensitive = R"((?i:'s|'t|'re|'ve|'m|'ll|'d))";
constexpr const char* kContractionsExpanded = R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))";
constexpr KnownSplit kKnownSplits[] = {
    {"llama-bpe", R"({C}|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
    {"qwen2", R"({C}|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
    // o200k (Phi-4-mini, gpt-oss): llama.cpp's "gpt-4o".
    {"gpt-4o", R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+{C}?)"
               R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*{C}?)"
               R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
};

// `regex` with each {C} replaced by `contractions`.
std::string with_contractions(std::string regex, std::string_view contractions) {
  for (size_t at = regex.find("{C}"); at != std::string::npos; at = regex.find("{C}", at + contractions.size()))
    regex.replace(at, 3, contractions);
  return regex;
}

bool is_byte_level(const nlohmann::json& p, bool use_regex) {
  return p.is_object() && p.value("type", "") == "ByteLevel" && p.value("use_regex", true) == use_regex &&
         !p.value("add_prefix_space", false);
}

}  // namespace

namespace hf_tokenizer_internal {

// A short description of a JSON value for an error message: its "type"
// (and a Sequence's members' types, one level down), never a dump or a
// recursion as deep as a hostile file nests.
std::string describe(const nlohmann::json& j) {
  if (j.is_string()) return j.get<std::string>().substr(0, 200);
  if (j.is_number_integer()) return std::to_string(j.get<int64_t>());
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) return std::string("a JSON ") + j.type_name();
  std::string s = j["type"].get<std::string>();
  for (const char* members : {"pretokenizers", "processors"}) {
    if (!j.contains(members) || !j[members].is_array()) continue;
    s += " of [";
    for (size_t i = 0; i < j[members].size() && i < 8; ++i) {
      const nlohmann::json& m = j[members][i];
      if (i > 0) s += ", ";
      const bool named = m.is_object() && m.contains("type") && m["type"].is_string();
      s += named ? m["type"].get<std::string>() : std::string("a JSON ") + m.type_name();  // one level only
    }
    s += "]";
  }
  return s;
}

// A token written as a string or as {"content": ...}; "" when absent or null.
std::string token_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return {};
}

// llama.cpp's converter marks added tokens that look special as control
// even when tokenizer.json does not call them special.
bool looks_special(const std::string& t) {
  auto wrapped = [&](std::string_view open, std::string_view close) {
    return t.starts_with(open) && t.ends_with(close);  // may overlap, as in llama.cpp: "<|>"
  };
  return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" || wrapped("<|", "|>") ||
         wrapped("<\xef\xbd\x9c", "\xef\xbd\x9c>") || wrapped("<unused", ">");
}

// What omnibus's tokenizer would refuse on loading the file (duplicate
// texts, byte tokens not spelled <0xXX>, merges of unknown tokens), refused
// here instead of written. A SentencePiece vocabulary is also held to what
// the sentencepiece library itself accepts: no empty piece, no NUL byte
// (the loader would cut the text there), UTF-8, finite scores.
Status check_vocabulary(const VocabData& vocab, bool sentencepiece) {
  for (size_t i = 0; sentencepiece && i < vocab.tokens.size(); ++i) {
    const std::string& t = vocab.tokens[i];
    if (t.empty() || t.find('\0') != std::string::npos || !tokenizer_internal::is_valid_utf8(t))
      return Status::corrupt("token " + std::to_string(i) + " is empty, holds a NUL byte or is not UTF-8");
    if (i < vocab.scores.size() && !std::isfinite(vocab.scores[i]))
      return Status::corrupt("token " + std::to_string(i) + " has a score that is not a finite number");
  }
  auto tokenizer = Tokenizer::create(vocab);
  if (!tokenizer.is_ok()) return Status::corrupt("the vocabulary would not load: " + tokenizer.status().message());
  return Status::ok();
}

}  // namespace hf_tokenizer_internal

namespace {

constexpr int kSentencePieceBpe = 2;  // TrainerSpec.model_type

// Whether llama.cpp's converter reads tokenizer.model before tokenizer.json
// for this architecture (llama, gemma3, and phi3 unless its tokenizer is
// GPT-2 style; Qwen's never ship one).
bool prefers_sentencepiece(const std::string& gguf_arch, const nlohmann::json& tokenizer_config) {
  if (gguf_arch == "phi3")  // Phi-3's own tokenizer; Phi-4-mini's is GPT-2 style (Phi3MiniModel.set_vocab)
    return !(tokenizer_config.contains("tokenizer_class") && tokenizer_config["tokenizer_class"] == "GPT2Tokenizer");
  return gguf_arch == "llama" || gguf_arch == "gemma3";
}

}  // namespace

namespace hf_tokenizer_internal {

Result<std::string> merge_text(const nlohmann::json& m) {
  if (m.is_string()) return m.get<std::string>();
  if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
    return m[0].get<std::string>() + " " + m[1].get<std::string>();
  return Status::corrupt("tokenizer.json has a merge that is neither \"a b\" nor [\"a\", \"b\"]: " + describe(m));
}

}  // namespace hf_tokenizer_internal

namespace {

Result<std::string> recognise_pre_tokenizer_unchecked(const nlohmann::json& pre) {
  if (is_byte_level(pre, true)) return std::string("gpt2");
  if (pre.is_object() && pre.value("type", "") == "Sequence" && pre.contains("pretokenizers") &&
      pre["pretokenizers"].is_array() && pre["pretokenizers"].size() == 2) {
    const auto& first = pre["pretokenizers"][0];
    const auto& second = pre["pretokenizers"][1];
    if (first.is_object() && first.value("type", "") == "Digits" && first.value("individual_digits", false) &&
        is_byte_level(second, true))
      return std::string("smollm");
    if (first.is_object() && first.value("type", "") == "Split" && first.value("behavior", "") == "Isolated" &&
        !first.value("invert", false) && first.contains("pattern") && first["pattern"].is_object() &&
        first["pattern"].contains("Regex") && first["pattern"]["Regex"].is_string() && is_byte_level(second, false)) {
      const std::string regex = first["pattern"]["Regex"].get<std::string>();
      for (const KnownSplit& k : kKnownSplits)
        for (const char* contractions : {kContractionsInsensitive, kContractionsExpanded})
          if (regex == with_contractions(k.regex, contractions)) return std::string(k.pre);
      return Status::unsupported("tokenizer.json splits by a regex omnibus does not know: " + regex);
    }
  }
  return Status::unsupported("tokenizer.json's pre_tokenizer is not one omnibus knows: " + describe(pre));
}

}  // namespace

Result<std::string> recognise_pre_tokenizer(const nlohmann::json& pre) {
  try {
    return recognise_pre_tokenizer_unchecked(pre);
  } catch (const nlohmann::json::exception& e) {
    return Status::corrupt(std::string("tokenizer.json's pre_tokenizer has a value of the wrong type: ") + e.what());
  }
}

namespace hf_tokenizer_internal {

// What llama.cpp's SpecialVocab writes beside any vocabulary: the special
// token ids, whether BOS/EOS are added, the chat template. `n` tokens.
Status add_special_token_keys(const HfFolder& files, int64_t n, GgufWriter& w) {
  // Special tokens: tokenizer_config.json names them by text, found among
  // tokenizer.json's added tokens (the first of that text), config.json by id.
  const nlohmann::json& tok = files.tokenizer;
  const nlohmann::json& tc = files.tokenizer_config;
  const auto added_id = [&](const std::string& text) -> int64_t {
    if (text.empty() || !tok.contains("added_tokens") || !tok["added_tokens"].is_array()) return -1;
    for (const auto& added : tok["added_tokens"])
      if (added.is_object() && token_text(added) == text && added.contains("id") && added["id"].is_number_integer())
        return added["id"].get<int64_t>();
    return -1;
  };
  // Hugging Face's names and GGUF's keys.
  for (const auto& [kind, gguf_key] :
       {std::pair{"bos", "tokenizer.ggml.bos_token_id"}, std::pair{"eos", "tokenizer.ggml.eos_token_id"},
        std::pair{"unk", "tokenizer.ggml.unknown_token_id"},
        std::pair{"sep", "tokenizer.ggml.seperator_token_id"},  // GGUF's spelling
        std::pair{"pad", "tokenizer.ggml.padding_token_id"}, std::pair{"mask", "tokenizer.ggml.mask_token_id"}}) {
    const std::string key = std::string(kind) + "_token";
    int64_t id = -1;
    if (tc.contains(key)) id = added_id(token_text(tc[key]));
    if (id >= n) id = -1;  // out of range: config.json's id is tried, as llama.cpp does
    const std::string id_key = key + "_id";
    // config.json's id; in text_config (a multimodal model's) only where the
    // top level has none (a list there, as Gemma 3's eos, counts as one).
    const nlohmann::json& top = files.config;
    const bool top_has = top.contains(id_key) && !top[id_key].is_null();
    const nlohmann::json* level =
        top_has ? &top[id_key]
        : top.contains("text_config") && top["text_config"].is_object() && top["text_config"].contains(id_key)
            ? &top["text_config"][id_key]
            : nullptr;
    if (id < 0 && level != nullptr && level->is_number_integer()) id = level->get<int64_t>();
    if (id >= 0 && id < n) w.set_uint32(gguf_key, static_cast<uint32_t>(id));
  }
  // add_bos/add_eos as llama.cpp's SpecialVocab reads them: a ByteLevel
  // post-processor adds neither, a TemplateProcessing adds the special
  // tokens around its $A (Llama 3 prepends <|begin_of_text|>); a flag in
  // tokenizer_config.json counts only where the post-processor said nothing.
  std::optional<bool> add_bos, add_eos;
  const nlohmann::json* post = tok.contains("post_processor") ? &tok["post_processor"] : nullptr;
  std::vector<const nlohmann::json*> processors;
  if (post != nullptr && post->is_object()) {
    if (post->contains("processors") && (*post)["processors"].is_array())
      for (const auto& p : (*post)["processors"]) processors.push_back(&p);
    else
      processors.push_back(post);
  }
  auto special_id = [](const nlohmann::json& item) -> std::string {
    if (!item.is_object() || !item.contains("SpecialToken") || !item["SpecialToken"].is_object()) return {};
    return token_text(item["SpecialToken"].value("id", nlohmann::json()));
  };
  const std::string bos_text = tc.contains("bos_token") ? token_text(tc["bos_token"]) : "";
  const std::string eos_text = tc.contains("eos_token") ? token_text(tc["eos_token"]) : "";
  for (const nlohmann::json* p : processors) {
    if (!p->is_object()) continue;
    const std::string type = p->value("type", "");
    if (type == "ByteLevel") {
      if (!add_bos) add_bos = false;
      if (!add_eos) add_eos = false;
    } else if (type == "TemplateProcessing" && p->contains("single") && (*p)["single"].is_array() &&
               (*p)["single"].size() > 1) {
      const auto& single = (*p)["single"];
      if (const std::string first = special_id(single.front()); !first.empty()) add_bos = first == bos_text;
      if (const std::string last = special_id(single.back()); !last.empty()) add_eos = last == eos_text;
    }
  }
  for (auto [kind, flag] : {std::pair{"bos", &add_bos}, std::pair{"eos", &add_eos}}) {
    const std::string key = std::string("add_") + kind + "_token";
    if (!*flag && tc.contains(key) && tc[key].is_boolean()) *flag = tc[key].get<bool>();
  }
  if (add_bos) w.set_bool("tokenizer.ggml.add_bos_token", *add_bos);
  if (add_eos) w.set_bool("tokenizer.ggml.add_eos_token", *add_eos);
  // tokenizer_config.json's template first, then chat_template.jinja (as llama.cpp).
  std::string chat_template;
  if (tc.contains("chat_template")) {
    const auto& t = tc["chat_template"];
    if (t.is_string()) chat_template = t.get<std::string>();
    if (t.is_array())  // named templates: the default one
      for (const auto& named : t)
        if (named.is_object() && named.value("name", "") == "default" && named.contains("template") &&
            named["template"].is_string())
          chat_template = named["template"].get<std::string>();
  }
  if (chat_template.empty()) chat_template = files.chat_template;
  if (!chat_template.empty()) w.set_string("tokenizer.chat_template", chat_template);
  return Status::ok();
}

// A finished llama-tokenizer (SentencePiece) vocabulary: checked, written,
// then the special token keys.
Status write_llama_vocabulary(const HfFolder& files, std::vector<std::string> tokens, std::vector<float> scores,
                              std::vector<int32_t> types, bool prepends_space, GgufWriter& w) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (static_cast<uint64_t>(n) * 3 > kGgufMaxMetadataElements)
    return Status::unsupported("a vocabulary of " + std::to_string(n) + " tokens is more than GGUF readers take (" +
                               std::to_string(kGgufMaxMetadataElements) + " array elements in all)");
  VocabData vocab;
  vocab.model = "llama";
  vocab.pre = "default";
  vocab.tokens = std::move(tokens);
  vocab.scores = std::move(scores);
  vocab.token_types = std::move(types);
  OMNIBUS_RETURN_IF_ERROR(check_vocabulary(vocab, /*sentencepiece=*/true));
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string("tokenizer.ggml.pre", "default");
  w.set_string_array("tokenizer.ggml.tokens", vocab.tokens);
  w.set_float32_array("tokenizer.ggml.scores", vocab.scores);
  w.set_int32_array("tokenizer.ggml.token_type", vocab.token_types);
  // A model trained without the leading space (add_dummy_prefix false) is
  // run without it, unless tokenizer_config.json says (add_prefix_space,
  // written by the caller as llama.cpp writes it); llama.cpp's converter
  // leaves the key out, and GGUF's llama tokenizer then adds the space the
  // model never saw.
  const nlohmann::json& config = files.tokenizer_config;
  const bool said = config.contains("add_prefix_space") && config["add_prefix_space"].is_boolean();
  if (!prepends_space && !said) w.set_bool("tokenizer.ggml.add_space_prefix", false);
  return add_special_token_keys(files, n, w);
}

}  // namespace hf_tokenizer_internal

namespace {

// tokenizer.json's byte-level BPE (llama.cpp's _set_vocab_gpt2).
Status add_bpe_keys(const HfFolder& files, int vocab_size, GgufWriter& w) {
  const nlohmann::json& tok = files.tokenizer;
  if (tok.empty()) return Status::not_found("the folder has no tokenizer.json (byte-level BPE tokenizers convert)");
  if (!tok.contains("model") || !tok["model"].is_object()) return Status::corrupt("tokenizer.json has no model");
  const nlohmann::json& model = tok["model"];
  if (model.value("type", "") != "BPE")
    return Status::unsupported("tokenizer.json's model is " + describe(model.value("type", nlohmann::json())) +
                               "; byte-level BPE converts");
  if (model.contains("byte_fallback") && model["byte_fallback"].is_boolean() && model["byte_fallback"].get<bool>())
    return Status::unsupported(
        "tokenizer.json is a BPE with byte fallback (SentencePiece style), which converts without its "
        "tokenizer.model for llama/mistral only; byte-level BPE converts");
  OMNIBUS_ASSIGN_OR_RETURN(
      const std::string pre,
      recognise_pre_tokenizer(tok.contains("pre_tokenizer") ? tok["pre_tokenizer"] : nlohmann::json()));
  if (!model.contains("vocab") || !model["vocab"].is_object() || !model.contains("merges") ||
      !model["merges"].is_array())
    return Status::corrupt("tokenizer.json's model needs a vocab object and a merges array");

  // Tokens by id: the vocabulary, then the added tokens.
  std::map<int64_t, std::pair<std::string, TokenType>> by_id;
  for (const auto& [text, id] : model["vocab"].items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= (1 << 24))
      return Status::corrupt("tokenizer.json gives '" + text + "' the id " + describe(id));
    by_id[id.get<int64_t>()] = {text, TokenType::kNormal};
  }
  if (tok.contains("added_tokens") && tok["added_tokens"].is_array()) {
    for (const auto& added : tok["added_tokens"]) {
      if (!added.is_object() || !added.contains("id") || !added["id"].is_number_integer() ||
          !added.contains("content") || !added["content"].is_string() || added["id"].get<int64_t>() < 0 ||
          added["id"].get<int64_t>() >= (1 << 24))
        return Status::corrupt("tokenizer.json has an added token without an id and content: " + describe(added));
      const std::string text = added["content"].get<std::string>();
      const bool special = added.value("special", false) || looks_special(text);
      by_id[added["id"].get<int64_t>()] = {text, special ? TokenType::kControl : TokenType::kUserDefined};
    }
  }
  const int64_t n = std::max<int64_t>(vocab_size, by_id.empty() ? 0 : by_id.rbegin()->first + 1);
  if (n > vocab_size)
    return Status::corrupt("tokenizer.json has ids up to " + std::to_string(n - 1) + " but the model embeds " +
                           std::to_string(vocab_size) + " tokens");
  std::vector<std::string> tokens(n);
  std::vector<int32_t> types(n);
  for (int64_t i = 0; i < n; ++i) {
    const auto it = by_id.find(i);
    if (it == by_id.end()) {
      tokens[i] = "[PAD" + std::to_string(i) + "]";
      types[i] = static_cast<int32_t>(TokenType::kUnused);
    } else {
      tokens[i] = it->second.first;
      types[i] = static_cast<int32_t>(it->second.second);
    }
  }
  std::vector<std::string> merges;
  merges.reserve(model["merges"].size());
  for (const auto& m : model["merges"]) {
    OMNIBUS_ASSIGN_OR_RETURN(std::string text, merge_text(m));
    merges.push_back(std::move(text));
  }
  if (tokens.size() * 2 + merges.size() > kGgufMaxMetadataElements)
    return Status::unsupported("a vocabulary of " + std::to_string(tokens.size()) + " tokens and " +
                               std::to_string(merges.size()) + " merges is more than GGUF readers take (" +
                               std::to_string(kGgufMaxMetadataElements) + " array elements in all)");
  VocabData vocab;
  vocab.model = "gpt2";
  vocab.pre = pre;
  vocab.tokens = tokens;
  vocab.token_types = types;
  vocab.merges = merges;
  OMNIBUS_RETURN_IF_ERROR(check_vocabulary(vocab, /*sentencepiece=*/false));
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", pre);
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  w.set_int32_array("tokenizer.ggml.token_type", types);
  w.set_string_array("tokenizer.ggml.merges", merges);

  return add_special_token_keys(files, n, w);
}

// tokenizer.model's SentencePiece BPE (llama.cpp's _set_vocab_sentencepiece):
// every piece with its score and type, then added_tokens.json and
// tokenizer_config.json's added_tokens_decoder over them, in a vocabulary
// of the model's `vocab_size` tokens.
Status add_sentencepiece_keys(const HfFolder& files, int vocab_size, bool phi3_rules, GgufWriter& w) {
  OMNIBUS_ASSIGN_OR_RETURN(const SentencePieceModel spm,
                           parse_sentencepiece_model(*files.sentencepiece_model, vocab_size));
  if (spm.model_type != kSentencePieceBpe) {
    const char* kind = spm.model_type == 1   ? "unigram"
                       : spm.model_type == 3 ? "word"
                       : spm.model_type == 4 ? "char"
                                             : "unknown";
    std::string message = "tokenizer.model is a SentencePiece ";
    message += kind;
    message +=
        " model; BPE models (Llama 2, Mistral, Gemma) convert (GGUF's llama tokenizer merges pieces by score, "
        "which is how a BPE model tokenizes)";
    return Status::unsupported(message);
  }
  const int64_t n = vocab_size;
  std::vector<std::string> tokens(n);
  std::vector<float> scores(n, -10000.0f);
  std::vector<int32_t> types(n, static_cast<int32_t>(TokenType::kUnused));
  for (int64_t i = 0; i < n; ++i) tokens[i] = "[PAD" + std::to_string(i) + "]";
  // Pieces past the model's embedding rows are left out, as llama.cpp does.
  for (int64_t i = 0; i < n && i < static_cast<int64_t>(spm.pieces.size()); ++i) {
    const SentencePiece& p = spm.pieces[i];
    tokens[i] = p.text;
    scores[i] = p.score;
    // A user-defined piece stays normal here (llama.cpp asks the processor
    // only IsUnknown, IsControl, IsUnused and IsByte).
    const auto t = static_cast<TokenType>(p.type);
    const bool kept =
        t == TokenType::kUnknown || t == TokenType::kControl || t == TokenType::kUnused || t == TokenType::kByte;
    types[i] = static_cast<int32_t>(kept ? t : TokenType::kNormal);
  }
  const auto slot = [&](const nlohmann::json& id, const std::string& where) -> Result<int64_t> {
    if (!id.is_number_integer() || id.get<int64_t>() < 0)
      return Status::corrupt(where + " gives a token the id " + id.dump().substr(0, 64));
    return id.get<int64_t>() < n ? id.get<int64_t>() : -1;  // out of range: left out, as llama.cpp does
  };
  for (const auto& [text, id_json] : files.added_tokens.items()) {
    OMNIBUS_ASSIGN_OR_RETURN(const int64_t id, slot(id_json, "added_tokens.json"));
    if (id < 0) continue;
    tokens[id] = text;
    scores[id] = -1000.0f;
    types[id] = static_cast<int32_t>(TokenType::kUserDefined);
  }
  const nlohmann::json& tc = files.tokenizer_config;
  // An added token over its slot. llama.cpp's generic rule: control where
  // special or special-looking, else user-defined with its ▁ as a space;
  // Phi-3's (Phi3MiniModel): control where special, else user-defined as written.
  const auto overlay = [&](int64_t id, std::string text, bool special) {
    if (!phi3_rules) {
      special = special || looks_special(text);
      if (!special) text = tokenizer_internal::replace_spm_spaces(text);
    }
    tokens[id] = std::move(text);
    scores[id] = -1000.0f;
    types[id] = static_cast<int32_t>(special ? TokenType::kControl : TokenType::kUserDefined);
  };
  const auto is_special = [](const nlohmann::json& token) {
    return token.contains("special") && token["special"].is_boolean() && token["special"].get<bool>();
  };
  if (tc.contains("added_tokens_decoder") && tc["added_tokens_decoder"].is_object()) {
    for (const auto& [key, token] : tc["added_tokens_decoder"].items()) {
      int64_t parsed = -1;
      const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), parsed);
      const bool canonical =
          !key.empty() && (key.size() == 1 || key[0] != '0');  // "400", not "0400": one slot, one key
      if (ec != std::errc() || end != key.data() + key.size() || !canonical || !token.is_object() ||
          !token.contains("content") || !token["content"].is_string())
        return Status::corrupt(
            "tokenizer_config.json's added_tokens_decoder has an entry that is not an id with "
            "its content");
      OMNIBUS_ASSIGN_OR_RETURN(const int64_t id, slot(nlohmann::json(parsed), "tokenizer_config.json"));
      if (id >= 0) overlay(id, token["content"].get<std::string>(), is_special(token));
    }
  }
  // Phi-3 also takes tokenizer.json's added tokens, by the same rule.
  const nlohmann::json& tok = files.tokenizer;
  if (phi3_rules && tok.contains("added_tokens") && tok["added_tokens"].is_array()) {
    for (const auto& token : tok["added_tokens"]) {
      if (!token.is_object() || !token.contains("id") || !token.contains("content") || !token["content"].is_string())
        return Status::corrupt("tokenizer.json has an added token without an id and content");
      OMNIBUS_ASSIGN_OR_RETURN(const int64_t id, slot(token["id"], "tokenizer.json"));
      if (id >= 0) overlay(id, token["content"].get<std::string>(), is_special(token));
    }
  }

  return write_llama_vocabulary(files, std::move(tokens), std::move(scores), std::move(types), spm.add_dummy_prefix, w);
}

}  // namespace

Status add_tokenizer_keys(const HfFolder& files, const std::string& gguf_arch, int vocab_size, GgufWriter& w) {
  try {
    // add_prefix_space in tokenizer_config.json, for llama (LlamaModel.set_vocab).
    const nlohmann::json& tc = files.tokenizer_config;
    if (gguf_arch == "llama" && tc.contains("add_prefix_space") && tc["add_prefix_space"].is_boolean())
      w.set_bool("tokenizer.ggml.add_space_prefix", tc["add_prefix_space"].get<bool>());
    if (files.sentencepiece_model && prefers_sentencepiece(gguf_arch, tc)) {
      OMNIBUS_RETURN_IF_ERROR(add_sentencepiece_keys(files, vocab_size, gguf_arch == "phi3", w));
      // Gemma's pieces carry their own spaces (Gemma3Model.set_vocab).
      if (gguf_arch == "gemma3") w.set_bool("tokenizer.ggml.add_space_prefix", false);
      return Status::ok();
    }
    // A SentencePiece BPE without its tokenizer.model (llama.cpp's
    // LlamaModel falls back to tokenizer.json likewise).
    if (gguf_arch == "llama" && is_sentencepiece_json(files.tokenizer))
      return add_sentencepiece_json_keys(files, vocab_size, w);
    return add_bpe_keys(files, vocab_size, w);
  } catch (const nlohmann::json::exception& e) {
    return Status::corrupt(std::string("a tokenizer file (tokenizer.json, tokenizer_config.json, added_tokens.json) "
                                       "or config.json has a value of the wrong type: ") +
                           e.what());
  }
}

}  // namespace omnibus
