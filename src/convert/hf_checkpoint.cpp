#include "convert/hf_checkpoint.h"

#include <algorithm>
#include <filesystem>

namespace omnibus {

Result<HfCheckpoint> HfCheckpoint::open(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> paths;
  // model*.safetensors only, as llama.cpp's converter: Mistral's folders
  // also hold consolidated.safetensors, the same weights under other names.
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with("model") || !name.ends_with(".safetensors")) continue;
    if (!it->is_regular_file(ec)) return Status::invalid_argument(it->path().string() + " is not a regular file");
    paths.push_back(it->path().string());
  }
  if (ec) return Status::io_error("cannot list '" + dir + "': " + ec.message());
  if (paths.empty()) return Status::not_found("'" + dir + "' holds no model*.safetensors file");
  std::sort(paths.begin(), paths.end());
  HfCheckpoint c;
  for (const std::string& path : paths) {
    OMNIBUS_ASSIGN_OR_RETURN(auto file, SafetensorsFile::open(path));
    for (const SafetensorsTensor& t : file->tensors()) {
      const auto [it, added] = c.by_name_.emplace(t.name, &t);
      if (!added) return Status::corrupt("tensor '" + t.name + "' is in two files (" + path + " and another)");
    }
    c.files_.push_back(std::move(file));
  }
  return c;
}

std::vector<std::string> HfCheckpoint::paths() const {
  std::vector<std::string> out;
  for (const auto& f : files_) out.push_back(f->path());
  return out;
}

const SafetensorsTensor* HfCheckpoint::find(const std::string& name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

}  // namespace omnibus
