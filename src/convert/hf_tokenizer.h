// A Hugging Face tokenizer (tokenizer.json, tokenizer_config.json, and
// chat_template.jinja where transformers writes the template apart; special
// token ids config.json names) as the
// GGUF tokenizer keys llama.cpp's converter writes: byte-level BPE from
// tokenizer.json (Llama 3, Qwen2/3, SmolLM2, GPT-2 style), or a
// SentencePiece BPE from tokenizer.model (Llama 2, Mistral, Gemma), or for
// llama/mistral from a SentencePiece-style tokenizer.json without it
// (hf_spm_json.cpp).
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

// The tokenizer.* keys of a model of architecture `gguf_arch`, from
// tokenizer.model where llama.cpp would read it (llama, gemma3), else from
// tokenizer.json; the vocabulary is padded with "[PADn]" tokens (unused) to
// `vocab_size`, the model's embedding rows.
Status add_tokenizer_keys(const HfFolder& folder, const std::string& gguf_arch, int vocab_size, GgufWriter& w);

}  // namespace omnibus
