#include "server/json_fields.h"

#include <cmath>
#include <exception>

#include <fmt/format.h>

namespace omnibus::server {
namespace {

// Thrown from the parser callback to stop at the first too-deep container.
struct TooDeep {};

// nlohmann's messages start with "[json.exception.parse_error.101] "; the
// client needs only the part after it.
std::string strip_exception_tag(const char* what) {
  std::string_view msg(what);
  if (!msg.empty() && msg.front() == '[') {
    size_t close = msg.find("] ");
    if (close != std::string_view::npos) msg.remove_prefix(close + 2);
  }
  return std::string(msg);
}

// Json and OrderedJson share their value_t.
const char* type_name_of(Json::value_t type) {
  switch (type) {
    case Json::value_t::string: return "string";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "integer";
    case Json::value_t::number_float: return "number";
    case Json::value_t::boolean: return "boolean";
    case Json::value_t::array: return "array";
    case Json::value_t::object: return "object";
    case Json::value_t::null: return "null";
    default: return "unsupported value";
  }
}

template <class J>
ApiResult<J> parse_object_as(std::string_view body, int max_depth, size_t max_bytes, std::string_view what) {
  if (body.size() > max_bytes) {
    ApiError e = ApiError::invalid("", fmt::format("{} is {} bytes; the limit is {}", what, body.size(), max_bytes),
                                   "body_too_large");
    e.http_status = 413;
    return e;
  }
  auto on_event = [max_depth](int depth, typename J::parse_event_t event, J&) {
    if ((event == J::parse_event_t::object_start || event == J::parse_event_t::array_start) && depth >= max_depth) {
      throw TooDeep{};
    }
    return true;
  };
  J doc;
  try {
    doc = J::parse(body.begin(), body.end(), on_event);
  } catch (const TooDeep&) {
    return ApiError::invalid("", fmt::format("{} nests arrays/objects deeper than {} levels", what, max_depth),
                             "too_deep");
  } catch (const typename J::exception& ex) {
    return ApiError::invalid("", fmt::format("{} is not valid JSON: {}", what, strip_exception_tag(ex.what())),
                             "invalid_json");
  } catch (const std::exception& ex) {
    return ApiError::invalid("", fmt::format("{} could not be parsed: {}", what, ex.what()), "invalid_json");
  }
  if (!doc.is_object()) {
    return ApiError::invalid("", fmt::format("{} must be a JSON object, got {}", what, type_name_of(doc.type())),
                             "invalid_type");
  }
  return doc;
}

}  // namespace

ApiResult<Json> parse_json_object(std::string_view body, int max_depth, size_t max_bytes) {
  return parse_object_as<Json>(body, max_depth, max_bytes, "request body");
}

ApiResult<OrderedJson> parse_ordered_json_object(std::string_view text, int max_depth, size_t max_bytes,
                                                 std::string_view what) {
  return parse_object_as<OrderedJson>(text, max_depth, max_bytes, what);
}

const char* json_type_name(const Json& value) { return type_name_of(value.type()); }

ApiError wrong_type(const std::string& param, const char* expected, const Json& got) {
  return ApiError::invalid(param, fmt::format("'{}' must be {}, got {}", param, expected, json_type_name(got)),
                           "invalid_type");
}

bool has_field(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && !it->is_null();
}

MaybeError as_int(const Json& value, const std::string& param, int64_t lo, int64_t hi, int64_t& out) {
  int64_t v = 0;
  if (value.is_number_integer() && !value.is_number_unsigned()) {
    v = value.get<int64_t>();
  } else if (value.is_number_unsigned()) {
    uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi)) {
      return ApiError::invalid(param, fmt::format("'{}' must be in [{}, {}], got {}", param, lo, hi, u));
    }
    v = static_cast<int64_t>(u);
  } else if (value.is_number_float()) {
    // 16.0 is accepted as 16; 16.5, 1e309 and values past int64 are not.
    double d = value.get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || d < -9.2e18 || d > 9.2e18) {
      return ApiError::invalid(param, fmt::format("'{}' must be an integer in [{}, {}], got {}", param, lo, hi, d));
    }
    v = static_cast<int64_t>(d);
  } else {
    return wrong_type(param, "an integer", value);
  }
  if (v < lo || v > hi) return ApiError::invalid(param, fmt::format("'{}' must be in [{}, {}], got {}", param, lo, hi, v));
  out = v;
  return std::nullopt;
}

MaybeError as_float(const Json& value, const std::string& param, double lo, double hi, float& out) {
  if (!value.is_number()) return wrong_type(param, "a number", value);
  double d = value.get<double>();
  if (!std::isfinite(d)) return ApiError::invalid(param, fmt::format("'{}' must be a finite number", param));
  if (d < lo || d > hi) return ApiError::invalid(param, fmt::format("'{}' must be in [{}, {}], got {}", param, lo, hi, d));
  out = static_cast<float>(d);
  return std::nullopt;
}

MaybeError read_bool(const Json& obj, const char* key, bool& out) {
  if (!has_field(obj, key)) return std::nullopt;
  const Json& v = obj.at(key);
  if (!v.is_boolean()) return wrong_type(key, "a boolean", v);
  out = v.get<bool>();
  return std::nullopt;
}

MaybeError read_int(const Json& obj, const char* key, int64_t lo, int64_t hi, int64_t& out) {
  if (!has_field(obj, key)) return std::nullopt;
  return as_int(obj.at(key), key, lo, hi, out);
}

MaybeError read_float(const Json& obj, const char* key, double lo, double hi, float& out) {
  if (!has_field(obj, key)) return std::nullopt;
  return as_float(obj.at(key), key, lo, hi, out);
}

MaybeError read_string(const Json& obj, const char* key, std::string& out) {
  if (!has_field(obj, key)) return std::nullopt;
  const Json& v = obj.at(key);
  if (!v.is_string()) return wrong_type(key, "a string", v);
  out = v.get<std::string>();
  return std::nullopt;
}

}  // namespace omnibus::server
