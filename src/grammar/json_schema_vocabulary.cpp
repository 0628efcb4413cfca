#include "grammar/json_schema_vocabulary.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace omnibus::json_schema {

// Formats as patterns. Approximations, all within the RFC 3339 / 4122 /
// 5321 / 1123 / 2673 syntax: dates check the day against the month but let
// February have 29 days in every year; times have no leap second and at
// most 9 fraction digits; emails are dot-atom local parts at a host name
// (no quoted local parts or address literals); host name labels are 1-63
// characters but the 253-character total is not checked.
std::optional<std::string> format_pattern(std::string_view format) {
  static const std::string kDate =
      R"(\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|02-(?:0[1-9]|[12]\d)))";
  static const std::string kTime =
      R"((?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,9})?(?:[Zz]|[+-](?:[01]\d|2[0-3]):[0-5]\d))";
  static const std::string kLabel = R"([A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)";
  static const std::string kHost = kLabel + R"((?:\.)" + kLabel + ")*";
  static const std::string kAtom = R"([A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)";
  static const std::string kOctet = R"((?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))";
  if (format == "date") return "^" + kDate + "$";
  if (format == "time") return "^" + kTime + "$";
  if (format == "date-time") return "^" + kDate + "[Tt]" + kTime + "$";
  if (format == "uuid") return R"(^[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$)";
  if (format == "email") return "^" + kAtom + R"((?:\.)" + kAtom + ")*@" + kHost + "$";
  if (format == "hostname") return "^" + kHost + "$";
  if (format == "ipv4") return "^(?:" + kOctet + R"(\.){3})" + kOctet + "$";
  // RFC 3986 (appendix A), without IP-literal hosts ("[::1]"): a subset,
  // so every string it allows is a URI.
  static const std::string kPct = "%[0-9A-Fa-f]{2}";
  static const std::string kUnreservedOrSub = R"([A-Za-z0-9\-._~!$&'()*+,;=])";
  static const std::string kPchar = "(?:" + kUnreservedOrSub + "|[:@]|" + kPct + ")";
  static const std::string kAuthority =
      "(?:(?:" + kUnreservedOrSub + "|:|" + kPct + ")*@)?(?:" + kUnreservedOrSub + "|" + kPct + ")*(?::[0-9]*)?";
  static const std::string kSegments = "(?:/" + kPchar + "*)*";
  static const std::string kAfterPath = "(?:\\?(?:" + kPchar + "|[/?])*)?(?:#(?:" + kPchar + "|[/?])*)?";
  static const std::string kHierPart =
      "(?://" + kAuthority + kSegments + "|/(?:" + kPchar + "+" + kSegments + ")?|" + kPchar + "+" + kSegments + ")?";
  static const std::string kUri = "[A-Za-z][A-Za-z0-9+.\\-]*:" + kHierPart + kAfterPath;
  // A relative reference's first segment has no ':' (it would read as a scheme).
  static const std::string kRelative = "(?://" + kAuthority + kSegments + "|/(?:" + kPchar + "+" + kSegments +
                                       ")?|(?:" + kUnreservedOrSub + "|@|" + kPct + ")+" + kSegments + ")?" +
                                       kAfterPath;
  if (format == "uri") return "^" + kUri + "$";
  if (format == "uri-reference") return "^(?:" + kUri + "|" + kRelative + ")$";
  return std::nullopt;
}

KeywordKind keyword_kind(const std::string& key) {
  using K = KeywordKind;
  static const std::unordered_map<std::string, KeywordKind> kKinds = {
      {"type", K::kAny},
      {"enum", K::kAny},
      {"const", K::kAny},
      {"anyOf", K::kAny},
      {"oneOf", K::kAny},
      {"allOf", K::kAny},
      {"$ref", K::kAny},
      {"minLength", K::kString},
      {"maxLength", K::kString},
      {"pattern", K::kString},
      {"format", K::kString},
      {"minimum", K::kNumber},
      {"maximum", K::kNumber},
      {"exclusiveMinimum", K::kNumber},
      {"exclusiveMaximum", K::kNumber},
      {"properties", K::kObject},
      {"required", K::kObject},
      {"additionalProperties", K::kObject},
      {"minProperties", K::kObject},
      {"maxProperties", K::kObject},
      {"items", K::kArray},
      {"prefixItems", K::kArray},
      {"additionalItems", K::kArray},
      {"minItems", K::kArray},
      {"maxItems", K::kArray},
      {"uniqueItems", K::kArray},
      {"not", K::kRefused},
      {"if", K::kRefused},
      {"then", K::kRefused},
      {"else", K::kRefused},
      {"dependentSchemas", K::kRefused},
      {"dependentRequired", K::kRefused},
      {"dependencies", K::kRefused},
      {"contains", K::kRefused},
      {"minContains", K::kRefused},
      {"maxContains", K::kRefused},
      {"patternProperties", K::kRefused},
      {"propertyNames", K::kRefused},
      {"unevaluatedItems", K::kRefused},
      {"unevaluatedProperties", K::kRefused},
      {"multipleOf", K::kRefused},
      {"$dynamicRef", K::kRefused},
      {"$dynamicAnchor", K::kRefused},
      {"$recursiveRef", K::kRefused},
      {"$recursiveAnchor", K::kRefused},
  };
  const auto it = kKinds.find(key);
  return it == kKinds.end() ? K::kIgnored : it->second;
}

const std::vector<std::string>& all_types() {
  static const std::vector<std::string> kTypes = {"object", "array", "string", "number", "integer", "boolean", "null"};
  return kTypes;
}

bool type_matches(const Json& v, const std::string& type) {
  if (type == "integer") return v.is_number_integer() || (v.is_number_float() && std::trunc(v.get<double>()) == v);
  return (type == "object" && v.is_object()) || (type == "array" && v.is_array()) ||
         (type == "string" && v.is_string()) || (type == "number" && v.is_number()) ||
         (type == "boolean" && v.is_boolean()) || (type == "null" && v.is_null());
}

std::vector<std::string> intersect_types(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  const auto allows = [](const std::vector<std::string>& set, const std::string& t) {
    return std::count(set.begin(), set.end(), t) > 0 ||
           (t == "integer" && std::count(set.begin(), set.end(), "number"));
  };
  std::vector<std::string> out;
  for (const std::string& t : all_types()) {
    if (allows(a, t) && allows(b, t)) out.push_back(t);
  }
  if (std::count(out.begin(), out.end(), "number")) out.erase(std::find(out.begin(), out.end(), "integer"));
  return out;
}

Status schema_error(const std::string& path, const std::string& what) {
  return Status::invalid_argument("json_schema: " + what + " at " + (path.empty() ? "the root" : path));
}

Result<std::vector<std::string>> schema_types(const Json& s, const std::string& path) {
  std::vector<std::string> named;
  if (s.contains("type")) {
    const Json& t = s["type"];
    const std::vector<Json> list = t.is_array() ? std::vector<Json>(t.begin(), t.end()) : std::vector<Json>{t};
    for (const Json& name : list) {
      if (!name.is_string() || std::count(all_types().begin(), all_types().end(), name.get<std::string>()) == 0) {
        return schema_error(path, "unknown type " + name.dump());
      }
      named.push_back(name.get<std::string>());
    }
    if (named.empty()) return schema_error(path, "type must not be an empty list");
  } else {
    for (auto it = s.begin(); it != s.end(); ++it) {
      switch (keyword_kind(it.key())) {
        case KeywordKind::kString: named.push_back("string"); break;
        case KeywordKind::kNumber: named.push_back("number"); break;
        case KeywordKind::kObject: named.push_back("object"); break;
        case KeywordKind::kArray: named.push_back("array"); break;
        default: break;
      }
    }
    if (named.empty()) named = all_types();
  }
  std::vector<std::string> out;
  const bool has_number = std::count(named.begin(), named.end(), "number") > 0;
  for (const std::string& t : all_types()) {
    if (std::count(named.begin(), named.end(), t) && !(t == "integer" && has_number)) out.push_back(t);
  }
  return out;
}

Result<const Json*> resolve_ref(const Json& root, const std::string& ref, const std::string& path) {
  if (ref.empty() || ref[0] != '#')
    return schema_error(path, "only local $ref ('#/...') is supported, not '" + ref + "'");
  if (ref.size() > 1 && ref[1] != '/') return schema_error(path, "$ref to an anchor ('" + ref + "') is unsupported");
  const Json* node = &root;
  size_t at = 1;
  while (at < ref.size()) {
    const size_t end = std::min(ref.find('/', at + 1), ref.size());
    std::string key;
    for (size_t i = at + 1; i < end; ++i) {
      if (ref[i] == '~' && i + 1 < end && (ref[i + 1] == '0' || ref[i + 1] == '1')) {
        key += ref[++i] == '0' ? '~' : '/';
      } else {
        key += ref[i];
      }
    }
    at = end;
    if (node->is_object() && node->contains(key)) {
      node = &(*node)[key];
    } else if (node->is_array() && !key.empty() && key.size() < 10 &&
               std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
               std::stoul(key) < node->size()) {
      node = &(*node)[std::stoul(key)];
    } else {
      return schema_error(path, "$ref '" + ref + "' does not resolve");
    }
  }
  return node;
}

}  // namespace omnibus::json_schema
