// A Hugging Face tokenizer (tokenizer.json, tokenizer_config.json, and
// chat_template.jinja where transformers writes the template apart; special
// token ids config.json names) as the
// GGUF tokenizer keys llama.cpp's converter writes. Byte-level BPE only
// (Llama 3, Qwen2/3, SmolLM2, GPT-2 style); a SentencePiece-style BPE with
// byte fallback is refused by name.
//
// tokenizer.ggml.pre is recognised from tokenizer.json's pre_tokenizer itself
// (the Split regex, or GPT-2's and SmolLM's byte-level settings), where
// llama.cpp hashes the ids the Hugging Face tokenizer gives a probe text: we
// have no Hugging Face tokenizer to run. An unknown pre-tokenizer is refused
// with what it is, not guessed.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "base/status.h"
#include "convert/hf_folder.h"
#include "gguf/gguf_writer.h"

namespace omnibus {

// The name tokenizer.ggml.pre gets for a tokenizer.json pre_tokenizer, or an error.
Result<std::string> recognise_pre_tokenizer(const nlohmann::json& pre_tokenizer);

// The tokenizer.* keys; the vocabulary is padded with "[PADn]" tokens
// (unused) to `vocab_size`, the model's embedding rows.
Status add_tokenizer_keys(const HfFolder& folder, int vocab_size, GgufWriter& w);

}  // namespace omnibus
