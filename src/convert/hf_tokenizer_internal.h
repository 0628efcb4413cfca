// What the tokenizer converters (hf_tokenizer.cpp, hf_spm_json.cpp) share.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "base/status.h"
#include "convert/hf_folder.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/vocab.h"

namespace omnibus::hf_tokenizer_internal {

// A short description of a JSON value for an error message (its "type",
// one level of a Sequence's members), never a dump.
std::string describe(const nlohmann::json& j);
// A token written as a string or as {"content": ...}; "" when absent or null.
std::string token_text(const nlohmann::json& v);
// Added tokens llama.cpp's converter marks control though not called special.
bool looks_special(const std::string& t);
// What omnibus's tokenizer (and, for a SentencePiece vocabulary, the
// sentencepiece library) would refuse, refused before anything is written.
Status check_vocabulary(const VocabData& vocab, bool sentencepiece);
// A tokenizer.json merge, "a b" or ["a", "b"], as "a b".
Result<std::string> merge_text(const nlohmann::json& m);
// The special token ids, add_bos/eos and the chat template (llama.cpp's
// SpecialVocab) for a vocabulary of `n` tokens.
Status add_special_token_keys(const HfFolder& files, int64_t n, GgufWriter& w);
// A finished llama-tokenizer (SentencePiece) vocabulary: checked, its keys
// written (add_space_prefix false where the model was trained without the
// leading space and tokenizer_config.json does not say), then the special
// token keys.
Status write_llama_vocabulary(const HfFolder& files, std::vector<std::string> tokens, std::vector<float> scores,
                              std::vector<int32_t> types, bool prepends_space, GgufWriter& w);

// Whether tokenizer.json is a SentencePiece BPE (byte fallback, a Sequence
// decoder: llama.cpp's LlamaHfVocab test).
bool is_sentencepiece_json(const nlohmann::json& tokenizer);
// Its GGUF llama-tokenizer keys (hf_spm_json.cpp), for a model of
// `vocab_size` embedding rows.
Status add_sentencepiece_json_keys(const HfFolder& files, int vocab_size, GgufWriter& w);

}  // namespace omnibus::hf_tokenizer_internal
