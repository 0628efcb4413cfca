// The JSON files of a Hugging Face checkpoint folder, read and checked to be
// JSON objects, and its SentencePiece tokenizer.model (their contents are
// checked by hf_config and hf_tokenizer).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "base/status.h"

namespace omnibus {

struct HfFolder {
  nlohmann::json config;            // config.json
  nlohmann::json tokenizer;         // tokenizer.json (an empty object when absent)
  nlohmann::json tokenizer_config;  // tokenizer_config.json (an empty object when absent)
  std::string chat_template;        // chat_template.jinja, when present
  // tokenizer.model (a SentencePiece model, protobuf) when present, and
  // added_tokens.json (an empty object when absent), which goes with it.
  std::optional<std::string> sentencepiece_model;
  nlohmann::json added_tokens;
};

// The folder's files the converted file must never be written over.
inline constexpr const char* kHfFolderFiles[] = {"config.json",         "tokenizer.json",  "tokenizer_config.json",
                                                 "chat_template.jinja", "tokenizer.model", "added_tokens.json"};

// config.json must be there.
Result<HfFolder> read_hf_folder(const std::string& dir);

}  // namespace omnibus
