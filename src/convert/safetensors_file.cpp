#include "convert/safetensors_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <set>

namespace omnibus {
namespace {

// The format's own limit on the header (safetensors' README: 100 MB).
constexpr uint64_t kMaxHeaderBytes = 100u << 20;
constexpr size_t kMaxDims = 8;

Result<SafetensorsDType> parse_dtype(const std::string& name, const std::string& where) {
  if (name == "F32") return SafetensorsDType::kF32;
  if (name == "F16") return SafetensorsDType::kF16;
  if (name == "BF16") return SafetensorsDType::kBF16;
  if (name == "U8") return SafetensorsDType::kU8;
  return Status::unsupported(where + " has dtype " + name +
                             "; F32, F16 and BF16 are read (and U8, of which gpt-oss's MXFP4 blocks convert)");
}

// A non-negative integer that fits in int64, or an error naming `what`.
Result<int64_t> small_unsigned(const nlohmann::json& v, const std::string& what) {
  if (v.is_number_unsigned() && v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX))
    return static_cast<int64_t>(v.get<uint64_t>());
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return v.get<int64_t>();
  return Status::corrupt(what + " is not a non-negative integer");
}

Result<SafetensorsTensor> parse_entry(const std::string& name, const nlohmann::json& entry,
                                      std::span<const uint8_t> data) {
  const std::string where = "tensor '" + name + "'";
  if (!entry.is_object()) return Status::corrupt(where + ": its header entry is not an object");
  const auto dtype = entry.find("dtype");
  const auto shape = entry.find("shape");
  const auto offsets = entry.find("data_offsets");
  if (dtype == entry.end() || !dtype->is_string() || shape == entry.end() || !shape->is_array() ||
      offsets == entry.end() || !offsets->is_array() || offsets->size() != 2)
    return Status::corrupt(where + ": needs a string dtype, a shape array and two data_offsets");
  SafetensorsTensor t;
  t.name = name;
  OMNIBUS_ASSIGN_OR_RETURN(t.dtype, parse_dtype(dtype->get<std::string>(), where));
  if (shape->size() > kMaxDims) return Status::corrupt(where + " has " + std::to_string(shape->size()) + " dimensions");
  int64_t elements = 1;
  for (const auto& d : *shape) {
    OMNIBUS_ASSIGN_OR_RETURN(const int64_t n, small_unsigned(d, where + ": a dimension"));
    if (n != 0 && elements > INT64_MAX / n) return Status::corrupt(where + " has too many elements");
    elements *= n;
    t.shape.push_back(n);
  }
  OMNIBUS_ASSIGN_OR_RETURN(const int64_t begin, small_unsigned((*offsets)[0], where + ": data_offsets[0]"));
  OMNIBUS_ASSIGN_OR_RETURN(const int64_t end, small_unsigned((*offsets)[1], where + ": data_offsets[1]"));
  if (begin > end || static_cast<uint64_t>(end) > data.size())
    return Status::corrupt(where + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                           "] do not lie within the " + std::to_string(data.size()) + " bytes of data");
  const int bytes_per = safetensors_dtype_bytes(t.dtype);
  if (elements > INT64_MAX / bytes_per || elements * bytes_per != end - begin)
    return Status::corrupt(where + ": " + std::to_string(elements) + " elements of " + safetensors_dtype_name(t.dtype) +
                           " do not fill its " + std::to_string(end - begin) + " bytes");
  t.bytes = data.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
  return t;
}

}  // namespace

const char* safetensors_dtype_name(SafetensorsDType t) {
  switch (t) {
    case SafetensorsDType::kF32: return "F32";
    case SafetensorsDType::kF16: return "F16";
    case SafetensorsDType::kBF16: return "BF16";
    case SafetensorsDType::kU8: return "U8";
  }
  return "?";
}

int safetensors_dtype_bytes(SafetensorsDType t) {
  switch (t) {
    case SafetensorsDType::kF32: return 4;
    case SafetensorsDType::kU8: return 1;
    default: return 2;
  }
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

int64_t SafetensorsTensor::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  OMNIBUS_ASSIGN_OR_RETURN(auto file, MappedFile::open(path));
  auto parsed = from_mapping(std::move(file));
  if (!parsed.is_ok()) return parsed.status().with_context(path);
  return parsed;
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::parse(std::span<const uint8_t> bytes) {
  return from_mapping(MappedFile::from_memory(bytes));
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::from_mapping(std::unique_ptr<MappedFile> file) {
  const std::span<const uint8_t> all = file->bytes();
  if (all.size() < 8) return Status::corrupt("shorter than the 8-byte header length: not a safetensors file");
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = header_bytes << 8 | all[i];
  if (header_bytes > kMaxHeaderBytes || header_bytes > all.size() - 8)
    return Status::corrupt("header length " + std::to_string(header_bytes) + " does not fit the file's " +
                           std::to_string(all.size()) + " bytes: not a safetensors file");
  const auto header_text = all.subspan(8, header_bytes);
  // A name given twice would be read as its last entry (the reference
  // reader refuses it): the parser's callback sees every key.
  std::string repeated;
  std::set<std::string> names;
  const nlohmann::json::parser_callback_t on_key = [&](int depth, nlohmann::json::parse_event_t event,
                                                       nlohmann::json& parsed) {
    if (depth == 1 && event == nlohmann::json::parse_event_t::key && !names.insert(parsed.get<std::string>()).second &&
        repeated.empty())
      repeated = parsed.get<std::string>();
    return true;
  };
  const nlohmann::json header = nlohmann::json::parse(header_text.begin(), header_text.end(), on_key, false);
  if (header.is_discarded() || !header.is_object()) return Status::corrupt("the header is not a JSON object");
  if (!repeated.empty()) return Status::corrupt("the header names tensor '" + repeated + "' twice");
  const std::span<const uint8_t> data = all.subspan(8 + header_bytes);
  auto out = std::unique_ptr<SafetensorsFile>(new SafetensorsFile());
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    if (name.empty()) return Status::corrupt("a tensor has an empty name");
    OMNIBUS_ASSIGN_OR_RETURN(SafetensorsTensor t, parse_entry(name, entry, data));
    out->tensors_.push_back(std::move(t));
  }
  std::sort(out->tensors_.begin(), out->tensors_.end(),
            [](const SafetensorsTensor& a, const SafetensorsTensor& b) { return a.bytes.data() < b.bytes.data(); });
  // Each tensor against the last non-empty one before it (an empty tensor
  // overlaps nothing, wherever its offsets point, and hides nothing).
  const SafetensorsTensor* prev = nullptr;
  for (const SafetensorsTensor& t : out->tensors_) {
    if (t.bytes.empty()) continue;
    if (prev != nullptr && prev->bytes.data() + prev->bytes.size() > t.bytes.data())
      return Status::corrupt("tensors '" + prev->name + "' and '" + t.name + "' overlap");
    prev = &t;
  }
  out->file_ = std::move(file);
  return out;
}

}  // namespace omnibus
