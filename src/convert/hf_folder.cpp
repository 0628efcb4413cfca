#include "convert/hf_folder.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

namespace omnibus {
namespace {

// A regular file's text, or an error; nullopt when there is no such file.
// Directories and FIFOs are refused before they are opened (a FIFO would
// block the read, a directory throw from the stream).
Result<std::optional<std::string>> read_text(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (status.type() == std::filesystem::file_type::not_found) {
    std::error_code link_ec;  // a link to nothing is a damaged folder, not an absent file
    if (std::filesystem::is_symlink(std::filesystem::symlink_status(path, link_ec)))
      return Status::invalid_argument(path.string() + " is a link to a file that does not exist");
    return std::optional<std::string>();
  }
  if (ec || status.type() != std::filesystem::file_type::regular)
    return Status::invalid_argument(path.string() + " is not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::io_error("cannot read " + path.string() + ": " + std::strerror(errno));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Status::io_error("cannot read " + path.string());
  return std::optional<std::string>(std::move(text));
}

Result<nlohmann::json> read_json_object(const std::filesystem::path& path, const std::string& missing) {
  OMNIBUS_ASSIGN_OR_RETURN(const std::optional<std::string> text, read_text(path));
  if (!text) {
    if (!missing.empty()) return Status::not_found(missing);
    return nlohmann::json::object();
  }
  const std::string& in = *text;
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
  OMNIBUS_ASSIGN_OR_RETURN(const std::optional<std::string> jinja, read_text(d / "chat_template.jinja"));
  if (jinja) f.chat_template = *jinja;
  OMNIBUS_ASSIGN_OR_RETURN(f.sentencepiece_model, read_text(d / "tokenizer.model"));
  OMNIBUS_ASSIGN_OR_RETURN(f.added_tokens, read_json_object(d / "added_tokens.json", ""));
  return f;
}

}  // namespace omnibus
