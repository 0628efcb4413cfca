#include "convert/hf_folder.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace omnibus {
namespace {

Result<nlohmann::json> read_json_object(const std::filesystem::path& path, const std::string& missing) {
  std::ifstream in(path);
  if (!in) {
    if (!missing.empty()) return Status::not_found(missing);
    return nlohmann::json::object();
  }
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) return Status::corrupt(path.string() + " is not valid JSON");
  if (!j.is_object()) return Status::corrupt(path.string() + " is not a JSON object");
  return j;
}

}  // namespace

Result<HfFolder> read_hf_folder(const std::string& dir) {
  const std::filesystem::path d(dir);
  HfFolder f;
  OMNIBUS_ASSIGN_OR_RETURN(f.config, read_json_object(d / "config.json", "'" + dir +
                                                                             "' has no config.json: not a "
                                                                             "Hugging Face checkpoint folder"));
  OMNIBUS_ASSIGN_OR_RETURN(f.tokenizer, read_json_object(d / "tokenizer.json", ""));
  OMNIBUS_ASSIGN_OR_RETURN(f.tokenizer_config, read_json_object(d / "tokenizer_config.json", ""));
  if (std::ifstream jinja(d / "chat_template.jinja"); jinja) {
    std::ostringstream text;
    text << jinja.rdbuf();
    f.chat_template = text.str();
  }
  return f;
}

}  // namespace omnibus
