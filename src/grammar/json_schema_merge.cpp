#include "grammar/json_schema_merge.h"

#include <algorithm>
#include <optional>

namespace omnibus::json_schema {
namespace {

constexpr size_t kMaxParts = 256;  // also bounds $ref chains that loop through allOf

// The schemas that must all hold: `members`, the targets of their $refs and
// the parts of their nested allOf, each without those keywords. oneOf
// becomes anyOf (the converter reads them alike).
Result<std::vector<Json>> flatten(const Json& root, const std::vector<Json>& members, const std::string& path) {
  std::vector<Json> queue = members;
  std::vector<Json> parts;
  for (size_t i = 0; i < queue.size(); ++i) {
    if (queue.size() > kMaxParts) return schema_error(path, "allOf with too many parts (counting $ref targets)");
    Json m = queue[i];
    if (m.is_boolean()) {
      if (m.get<bool>()) continue;
      return schema_error(path, "allOf contains schema false");
    }
    if (!m.is_object()) return schema_error(path, "a schema must be an object or a boolean");
    if (m.contains("$ref")) {
      if (!m["$ref"].is_string()) return schema_error(path, "$ref must be a string");
      OMNIBUS_ASSIGN_OR_RETURN(const Json* target, resolve_ref(root, m["$ref"].get<std::string>(), path));
      queue.push_back(*target);
      m.erase("$ref");
    }
    if (m.contains("allOf")) {
      if (!m["allOf"].is_array() || m["allOf"].empty()) return schema_error(path, "allOf must be a non-empty array");
      for (const Json& x : m["allOf"]) queue.push_back(x);
      m.erase("allOf");
    }
    if (m.contains("oneOf")) {
      if (m.contains("anyOf")) return schema_error(path, "anyOf together with oneOf is unsupported");
      Json alternatives = m["oneOf"];
      m.erase("oneOf");
      m["anyOf"] = std::move(alternatives);
    }
    parts.push_back(std::move(m));
  }
  return parts;
}

struct Merged {
  Json out = Json::object();
  std::optional<std::vector<std::string>> types;
  std::optional<std::vector<Json>> values;  // enum and const
  bool object_keywords = false;             // properties or additionalProperties seen
};

// Adds keyword `k` of one part.
Status merge_keyword(const std::string& k, const Json& v, Merged& m, const std::string& path) {
  const bool lower = k.rfind("min", 0) == 0 || k == "exclusiveMinimum";
  const bool upper = k.rfind("max", 0) == 0 || k == "exclusiveMaximum";
  Json& out = m.out;
  if (k == "type") {
    OMNIBUS_ASSIGN_OR_RETURN(std::vector<std::string> t, schema_types(Json{{"type", v}}, path));
    m.types = m.types ? intersect_types(*m.types, t) : t;
  } else if (k == "enum" || k == "const") {
    if (k == "enum" && (!v.is_array() || v.empty())) return schema_error(path, "enum must be a non-empty array");
    const std::vector<Json> these = k == "enum" ? std::vector<Json>(v.begin(), v.end()) : std::vector<Json>{v};
    if (!m.values) m.values = these;
    std::erase_if(*m.values, [&](const Json& x) { return std::find(these.begin(), these.end(), x) == these.end(); });
  } else if (k == "properties" || k == "additionalProperties") {
    if (k == "properties" && !v.is_object()) return schema_error(path, "properties must be an object");
    m.object_keywords = true;  // merged once all parts are seen
  } else if (k == "required") {
    if (!v.is_array()) return schema_error(path, "required must be an array");
    Json& r = out["required"];
    if (r.is_null()) r = Json::array();
    for (const Json& name : v) {
      if (std::find(r.begin(), r.end(), name) == r.end()) r.push_back(name);
    }
  } else if ((lower || upper) && v.is_number()) {
    if (!out.contains(k) || (lower ? v > out[k] : v < out[k])) out[k] = v;
  } else if (k == "uniqueItems") {
    if (!v.is_boolean()) return schema_error(path, "uniqueItems must be a boolean");
    out[k] = (out.contains(k) && out[k] == true) || v.get<bool>();
  } else if (out.contains(k) && out[k] != v) {
    return schema_error(path, "allOf parts disagree on '" + k + "'; merging them is unsupported");
  } else {
    out[k] = v;
  }
  return Status::ok();
}

// A key is allowed by a part that lists it, or whose additionalProperties
// is not false; its value must then satisfy what each part says of it.
void merge_properties(const std::vector<Json>& parts, Json& out) {
  std::vector<std::string> keys;
  bool has_properties = false;
  for (const Json& m : parts) {
    if (!m.contains("properties")) continue;
    has_properties = true;
    for (auto it = m["properties"].begin(); it != m["properties"].end(); ++it) {
      if (std::find(keys.begin(), keys.end(), it.key()) == keys.end()) keys.push_back(it.key());
    }
  }
  Json properties = Json::object();
  for (const std::string& key : keys) {
    Json schemas = Json::array();
    bool forbidden = false;
    for (const Json& m : parts) {
      if (m.contains("properties") && m["properties"].contains(key)) {
        schemas.push_back(m["properties"][key]);
      } else if (m.contains("additionalProperties")) {
        const Json& a = m["additionalProperties"];
        forbidden = forbidden || a == false;
        if (a.is_object()) schemas.push_back(a);
      }
    }
    if (!forbidden) properties[key] = schemas.size() == 1 ? schemas[0] : Json{{"allOf", schemas}};
  }
  if (has_properties) out["properties"] = std::move(properties);

  Json extra = Json::array();
  bool any_false = false;
  bool any_true = false;
  for (const Json& m : parts) {
    if (!m.contains("additionalProperties")) continue;
    const Json& a = m["additionalProperties"];
    any_false = any_false || a == false;
    any_true = any_true || a == true;
    if (a.is_object()) extra.push_back(a);
  }
  if (any_false) {
    out["additionalProperties"] = false;
  } else if (!extra.empty()) {
    out["additionalProperties"] = extra.size() == 1 ? extra[0] : Json{{"allOf", extra}};
  } else if (any_true) {
    out["additionalProperties"] = true;
  }
}

}  // namespace

Result<Json> merge_schemas(const Json& root, const std::vector<Json>& members, const std::string& path) {
  OMNIBUS_ASSIGN_OR_RETURN(std::vector<Json> parts, flatten(root, members, path));
  Merged merged;
  for (const Json& part : parts) {
    for (auto it = part.begin(); it != part.end(); ++it) {
      const KeywordKind kind = keyword_kind(it.key());
      if (kind == KeywordKind::kIgnored) continue;
      if (kind == KeywordKind::kRefused) return schema_error(path, "unsupported keyword '" + it.key() + "'");
      OMNIBUS_RETURN_IF_ERROR(merge_keyword(it.key(), it.value(), merged, path));
    }
  }
  if (merged.object_keywords) merge_properties(parts, merged.out);
  if (merged.types) {
    if (merged.types->empty()) return schema_error(path, "allOf parts allow no common type");
    merged.out["type"] = *merged.types;
  }
  if (merged.values) {
    if (merged.values->empty()) return schema_error(path, "allOf parts allow no common enum/const value");
    merged.out["enum"] = *merged.values;
  }
  return merged.out;
}

}  // namespace omnibus::json_schema
