// GgufFile: opening, lookups and typed getters. Parsing lives in
// gguf_parser.cpp.
#include "gguf/gguf_file.h"

#include <string>

#include "gguf/gguf_parser.h"

namespace omnibus {
namespace {

std::string key_context(std::string_view key) { return "metadata key '" + std::string(key) + "'"; }

// `v` (the value of `key`, or nullptr when missing) converted by `convert`.
template <class Convert>
auto convert_scalar(const GgufValue* v, std::string_view key, Convert convert) -> decltype(convert(*v)) {
  if (v == nullptr) return Status::not_found(key_context(key) + " not found");
  auto r = convert(*v);
  if (!r) return r.status().with_context(key_context(key));
  return r;
}

// The elements of array `key` whose elements all convert with `convert`.
template <class T, class Convert>
Result<std::vector<T>> convert_array(const GgufValue* v, std::string_view key, const char* wanted,
                                     Convert convert) {
  if (v == nullptr) return Status::not_found(key_context(key) + " not found");
  const std::vector<GgufValue>* elems = v->array();
  if (elems == nullptr)
    return Status::invalid_argument(key_context(key) + ": expected an array of " + wanted + ", found " +
                                    gguf_type_name(v->type));
  std::vector<T> out;
  out.reserve(elems->size());
  for (size_t i = 0; i < elems->size(); ++i) {
    auto r = convert((*elems)[i]);
    if (!r) return r.status().with_context(key_context(key) + " element " + std::to_string(i));
    out.push_back(std::move(r).value());
  }
  return out;
}

}  // namespace

int64_t GgufTensorInfo::element_count() const {
  // The parser checked that this product fits in int64.
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

Result<std::unique_ptr<GgufFile>> GgufFile::open(const std::string& path) {
  OMNIBUS_ASSIGN_OR_RETURN(auto mapped, MappedFile::open(path));
  auto parsed = parse_gguf(std::move(mapped));
  if (!parsed) return parsed.status().with_context("reading '" + path + "'");
  return parsed;
}

Result<std::unique_ptr<GgufFile>> GgufFile::parse(std::unique_ptr<MappedFile> file) {
  return parse_gguf(std::move(file));
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = metadata_index_.find(std::string(key));
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Result<std::string> GgufFile::get_string(std::string_view key) const {
  return convert_scalar(find(key), key, [](const GgufValue& v) { return v.to_string_value(); });
}

Result<int64_t> GgufFile::get_int(std::string_view key) const {
  return convert_scalar(find(key), key, [](const GgufValue& v) { return v.to_int(); });
}

Result<double> GgufFile::get_float(std::string_view key) const {
  return convert_scalar(find(key), key, [](const GgufValue& v) { return v.to_double(); });
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
  return convert_scalar(find(key), key, [](const GgufValue& v) { return v.to_bool(); });
}

Result<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
  return convert_array<std::string>(find(key), key, "strings",
                                    [](const GgufValue& e) { return e.to_string_value(); });
}

Result<std::vector<double>> GgufFile::get_float_array(std::string_view key) const {
  return convert_array<double>(find(key), key, "numbers", [](const GgufValue& e) { return e.to_double(); });
}

Result<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  return convert_array<int64_t>(find(key), key, "integers", [](const GgufValue& e) { return e.to_int(); });
}

}  // namespace omnibus
