// What JSON Schema's keywords mean to the converter (json_schema_grammar.h):
// which are supported, refused or ignored, the type names, formats as
// patterns, and $ref resolution. Internal to grammar/.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace omnibus::json_schema {

// Ordered, so `properties` keep the order they were written in.
using Json = nlohmann::ordered_json;

enum class KeywordKind {
  kIgnored,  // annotations ("title", "$comment", ...) and unknown keywords
  kRefused,  // validation we cannot express ("not", "patternProperties", ...)
  kAny,      // applies to every type ("type", "enum", "anyOf", "$ref", ...)
  kString,   // minLength, maxLength, pattern, format
  kNumber,   // minimum, maximum, exclusiveMinimum, exclusiveMaximum
  kObject,   // properties, required, additionalProperties, min/maxProperties
  kArray,    // items, prefixItems, additionalItems, min/maxItems, uniqueItems
};
KeywordKind keyword_kind(const std::string& key);

// "object", "array", "string", "number", "integer", "boolean", "null".
const std::vector<std::string>& all_types();
// Whether a JSON value is of a type ("integer" includes 2.0).
bool type_matches(const Json& value, const std::string& type);
// Types allowed by both lists ("integer" is in "number").
std::vector<std::string> intersect_types(const std::vector<std::string>& a, const std::vector<std::string>& b);
// The types schema `s` allows, in all_types() order, "integer" left out
// when "number" is in. Without "type", the types whose keywords appear (a
// narrowing JSON Schema does not make, but one that only refuses values).
Result<std::vector<std::string>> schema_types(const Json& s, const std::string& path);

// invalid_argument "json_schema: <what> at <path>" (or "at the root").
Status schema_error(const std::string& path, const std::string& what);

// The schema `ref` ("#" or "#/json/pointer") names within `root`; only
// references into the same document are supported. The result points into
// `root`.
Result<const Json*> resolve_ref(const Json& root, const std::string& ref, const std::string& path);

// A pattern (regex_grammar.h) for a supported "format", or nothing.
std::optional<std::string> format_pattern(std::string_view format);

}  // namespace omnibus::json_schema
