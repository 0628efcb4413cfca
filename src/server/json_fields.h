// Typed, range-checked reads of fields from an untrusted JSON object, each
// failure an ApiError that names the field, what was expected and what came.
// A field that is absent or null leaves the output untouched (the default
// stays), as OpenAI treats null as "not given". Internal to server/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/api_error.h"

// Returns the ApiError from the enclosing function if `expr` yields one.
#define OMNIBUS_API_RETURN_IF_ERROR(expr)                 \
  do {                                                    \
    std::optional<::omnibus::server::ApiError> api_err_ = (expr); \
    if (api_err_) return *api_err_;                       \
  } while (0)

namespace omnibus::server {

using Json = nlohmann::json;
// Keeps an object's keys in the order written (Json sorts them): for JSON
// Schemas, whose property order is the order a model writes them in.
using OrderedJson = nlohmann::ordered_json;
using MaybeError = std::optional<ApiError>;

// Parses a request body that must be one JSON object. Nesting deeper than
// `max_depth` is refused while parsing (the parser itself is not recursive,
// and a refused document is never built), so a body of 100,000 '[' cannot
// exhaust the stack. Never throws.
ApiResult<Json> parse_json_object(std::string_view body, int max_depth, size_t max_bytes);
// The same keeping keys in order, for a JSON text that is not the body
// (`what` names it in errors, e.g. "'guided_json'").
ApiResult<OrderedJson> parse_ordered_json_object(std::string_view text, int max_depth, size_t max_bytes,
                                                 std::string_view what = "request body");

// "string", "integer", "number", "boolean", "array", "object", "null".
const char* json_type_name(const Json& value);

ApiError wrong_type(const std::string& param, const char* expected, const Json& got);

// Lookups: `param` is the name used in errors (e.g. "messages[0].content").
MaybeError read_bool(const Json& obj, const char* key, bool& out);
MaybeError read_int(const Json& obj, const char* key, int64_t lo, int64_t hi, int64_t& out);
MaybeError read_float(const Json& obj, const char* key, double lo, double hi, float& out);
MaybeError read_string(const Json& obj, const char* key, std::string& out);

// Value (not lookup) forms, for array elements and nested fields.
MaybeError as_int(const Json& value, const std::string& param, int64_t lo, int64_t hi, int64_t& out);
MaybeError as_float(const Json& value, const std::string& param, double lo, double hi, float& out);

// True if the key is present and not null.
bool has_field(const Json& obj, const char* key);

}  // namespace omnibus::server
