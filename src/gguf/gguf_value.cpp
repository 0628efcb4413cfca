// GgufValue: typed access, builders and the short display form.
#include <bit>
#include <cstdio>
#include <string>

#include "gguf/gguf_file.h"

namespace omnibus {
namespace {

bool is_unsigned_type(GgufType t) {
  return t == GgufType::kUint8 || t == GgufType::kUint16 || t == GgufType::kUint32 ||
         t == GgufType::kUint64;
}

bool is_signed_type(GgufType t) {
  return t == GgufType::kInt8 || t == GgufType::kInt16 || t == GgufType::kInt32 ||
         t == GgufType::kInt64;
}

std::string type_error(const GgufValue& v, const char* wanted) {
  std::string actual = gguf_type_name(v.type);
  if (v.type == GgufType::kArray) actual += std::string(" of ") + gguf_type_name(v.element_type);
  return std::string("expected ") + wanted + ", found " + actual;
}

// Escapes control characters and cuts long strings so `describe` stays one
// short line whatever a file holds.
std::string quote_for_display(const std::string& s) {
  constexpr size_t kMaxShown = 60;
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < kMaxShown; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > kMaxShown) out += "...";
  out += "\"";
  return out;
}

std::string describe_float(double d) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", d);
  return buf;
}

}  // namespace

const char* gguf_type_name(GgufType t) {
  switch (t) {
    case GgufType::kUint8: return "uint8";
    case GgufType::kInt8: return "int8";
    case GgufType::kUint16: return "uint16";
    case GgufType::kInt16: return "int16";
    case GgufType::kUint32: return "uint32";
    case GgufType::kInt32: return "int32";
    case GgufType::kFloat32: return "float32";
    case GgufType::kBool: return "bool";
    case GgufType::kString: return "string";
    case GgufType::kArray: return "array";
    case GgufType::kUint64: return "uint64";
    case GgufType::kInt64: return "int64";
    case GgufType::kFloat64: return "float64";
  }
  return "unknown";
}

bool gguf_type_known(uint32_t id) { return id <= static_cast<uint32_t>(GgufType::kFloat64); }

bool GgufValue::is_integer() const { return is_unsigned_type(type) || is_signed_type(type); }

bool GgufValue::is_float() const { return type == GgufType::kFloat32 || type == GgufType::kFloat64; }

Result<int64_t> GgufValue::to_int() const {
  if (const auto* u = std::get_if<uint64_t>(&value); u && is_unsigned_type(type)) {
    if (*u > static_cast<uint64_t>(INT64_MAX))
      return Status::out_of_range("value " + std::to_string(*u) + " does not fit in int64");
    return static_cast<int64_t>(*u);
  }
  if (const auto* i = std::get_if<int64_t>(&value); i && is_signed_type(type)) return *i;
  return Status::invalid_argument(type_error(*this, "an integer"));
}

Result<uint64_t> GgufValue::to_uint() const {
  if (const auto* u = std::get_if<uint64_t>(&value); u && is_unsigned_type(type)) return *u;
  if (const auto* i = std::get_if<int64_t>(&value); i && is_signed_type(type)) {
    if (*i < 0) return Status::out_of_range("value " + std::to_string(*i) + " is negative");
    return static_cast<uint64_t>(*i);
  }
  return Status::invalid_argument(type_error(*this, "an integer"));
}

Result<double> GgufValue::to_double() const {
  if (const auto* d = std::get_if<double>(&value); d && is_float()) return *d;
  if (const auto* u = std::get_if<uint64_t>(&value); u && is_unsigned_type(type))
    return static_cast<double>(*u);
  if (const auto* i = std::get_if<int64_t>(&value); i && is_signed_type(type))
    return static_cast<double>(*i);
  return Status::invalid_argument(type_error(*this, "a number"));
}

Result<bool> GgufValue::to_bool() const {
  if (const auto* b = std::get_if<bool>(&value); b && type == GgufType::kBool) return *b;
  return Status::invalid_argument(type_error(*this, "a bool"));
}

Result<std::string> GgufValue::to_string_value() const {
  if (const auto* s = std::get_if<std::string>(&value); s && type == GgufType::kString) return *s;
  return Status::invalid_argument(type_error(*this, "a string"));
}

const std::vector<GgufValue>* GgufValue::array() const {
  if (type != GgufType::kArray) return nullptr;
  return std::get_if<std::vector<GgufValue>>(&value);
}

std::string GgufValue::describe() const {
  if (const auto* elems = array()) {
    constexpr size_t kMaxListed = 8;
    const bool nested = element_type == GgufType::kArray;
    if (elems->size() > kMaxListed || (nested && !elems->empty()))
      return std::string("[") + gguf_type_name(element_type) + " x " + std::to_string(elems->size()) + "]";
    std::string out = "[";
    for (size_t i = 0; i < elems->size(); ++i) {
      if (i > 0) out += ", ";
      out += (*elems)[i].describe();
    }
    return out + "]";
  }
  if (const auto* s = std::get_if<std::string>(&value)) return quote_for_display(*s);
  if (const auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (const auto* d = std::get_if<double>(&value)) return describe_float(*d);
  if (const auto* u = std::get_if<uint64_t>(&value)) return std::to_string(*u);
  if (const auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  return "?";
}

GgufValue GgufValue::of_uint(GgufType t, uint64_t v) {
  GgufValue out;
  out.type = t;
  out.value = v;
  return out;
}

GgufValue GgufValue::of_int(GgufType t, int64_t v) {
  GgufValue out;
  out.type = t;
  out.value = v;
  return out;
}

GgufValue GgufValue::of_float32(float v) {
  GgufValue out;
  out.type = GgufType::kFloat32;
  out.value = static_cast<double>(v);
  return out;
}

GgufValue GgufValue::of_float64(double v) {
  GgufValue out;
  out.type = GgufType::kFloat64;
  out.value = v;
  return out;
}

GgufValue GgufValue::of_bool(bool v) {
  GgufValue out;
  out.type = GgufType::kBool;
  out.value = v;
  return out;
}

GgufValue GgufValue::of_string(std::string v) {
  GgufValue out;
  out.type = GgufType::kString;
  out.value = std::move(v);
  return out;
}

GgufValue GgufValue::of_array(GgufType element_type, std::vector<GgufValue> elements) {
  GgufValue out;
  out.type = GgufType::kArray;
  out.element_type = element_type;
  out.value = std::move(elements);
  return out;
}

// Exact equality: same types and the same bits (so NaNs and -0.0 round-trip
// checks are meaningful).
bool GgufValue::operator==(const GgufValue& other) const {
  if (type != other.type || value.index() != other.value.index()) return false;
  if (type == GgufType::kArray && element_type != other.element_type) return false;
  if (const auto* d = std::get_if<double>(&value))
    return std::bit_cast<uint64_t>(*d) == std::bit_cast<uint64_t>(std::get<double>(other.value));
  if (const auto* a = std::get_if<std::vector<GgufValue>>(&value))
    return *a == std::get<std::vector<GgufValue>>(other.value);
  return value == other.value;
}

}  // namespace omnibus
