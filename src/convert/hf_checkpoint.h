// A Hugging Face checkpoint folder's weights: its model*.safetensors files
// (model.safetensors or the shards model-00001-of-0000N.safetensors), memory-mapped,
// each tensor found by its name. A name held by two files is an error.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "convert/safetensors_file.h"

namespace omnibus {

class HfCheckpoint {
 public:
  static Result<HfCheckpoint> open(const std::string& dir);

  // nullptr when no file holds `name`.
  const SafetensorsTensor* find(const std::string& name) const;
  // By name.
  const std::map<std::string, const SafetensorsTensor*>& tensors() const { return by_name_; }
  // The files read, sorted.
  std::vector<std::string> paths() const;

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const SafetensorsTensor*> by_name_;
};

}  // namespace omnibus
