// The JSON files of a Hugging Face checkpoint folder, read and checked to be
// JSON objects (their contents are checked by hf_config and hf_tokenizer).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "base/status.h"

namespace omnibus {

struct HfFolder {
  nlohmann::json config;            // config.json
  nlohmann::json tokenizer;         // tokenizer.json (an empty object when absent)
  nlohmann::json tokenizer_config;  // tokenizer_config.json (an empty object when absent)
  std::string chat_template;        // chat_template.jinja, when present
};

// config.json must be there.
Result<HfFolder> read_hf_folder(const std::string& dir);

}  // namespace omnibus
