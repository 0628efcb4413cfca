#include "grammar/json_schema_grammar.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar/integer_range_grammar.h"
#include "grammar/json_schema_merge.h"
#include "grammar/json_schema_vocabulary.h"
#include "grammar/regex_grammar.h"

namespace omnibus {
namespace {

using json_schema::all_types;
using json_schema::format_pattern;
using json_schema::Json;
using json_schema::keyword_kind;
using json_schema::KeywordKind;
using json_schema::merge_schemas;
using json_schema::resolve_ref;
using json_schema::schema_error;
using json_schema::schema_types;
using json_schema::type_matches;

constexpr int kMaxDepth = 64;         // schema nesting, counting allOf/anyOf rewrites
constexpr size_t kMaxVisits = 20000;  // sub-schemas converted: bounds $ref copies made by allOf
// minItems, maxItems, minLength, maxLength: the grammar parser expands
// x{m,n} into copies of x, so larger counts are refused, not loosened.
constexpr uint64_t kMaxCount = 10000;
constexpr size_t kMaxPrefixItems = 100;  // each optional one nests a group

std::string pointer_escape(const std::string& key) {
  std::string out;
  for (const char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

// An integer bound: the least allowed integer for a lower bound, the
// greatest for an upper one. Nothing when outside int64.
std::optional<int64_t> integer_bound(const Json& v, bool lower, bool exclusive) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(kMax)) return std::nullopt;
  if (v.is_number_integer()) {
    const auto x = v.get<int64_t>();
    if (!exclusive) return x;
    if (lower) return x == kMax ? std::nullopt : std::optional(x + 1);
    return x == kMin ? std::nullopt : std::optional(x - 1);
  }
  const double d = v.get<double>();
  const double b =
      lower ? (exclusive ? std::floor(d) + 1 : std::ceil(d)) : (exclusive ? std::ceil(d) - 1 : std::floor(d));
  if (!(b > -9.2e18 && b < 9.2e18)) return std::nullopt;
  return static_cast<int64_t>(b);
}

// GBNF rules under unique names; written root first, then in the order made.
class RuleSet {
 public:
  // Defines `body` under a name made from `hint`, or returns the name of an
  // identical rule made from the same hint.
  std::string add(const std::string& hint, const std::string& body) {
    const std::string base = sanitize(hint);
    for (int n = 1;; ++n) {
      std::string name = n == 1 ? base : base + "-v" + std::to_string(n);
      const auto it = index_.find(name);
      if (it == index_.end()) {
        index_.emplace(name, rules_.size());
        rules_.emplace_back(name, body);
        return name;
      }
      if (rules_[it->second].second == body) return name;
    }
  }
  // A name whose body comes later (set_body), for rules that refer to
  // themselves.
  std::string reserve(const std::string& hint) {
    return add(hint, std::string("\x01").append(std::to_string(rules_.size())));
  }
  void set_body(const std::string& name, std::string body) { rules_[index_.at(name)].second = std::move(body); }

  std::string text() const {
    std::string out;
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    return out;
  }

 private:
  // Rule names are [a-zA-Z0-9-]+, and never end in "-<digits>": the GBNF
  // parser names its helper rules that way.
  static std::string sanitize(const std::string& hint) {
    std::string out;
    for (const char c : hint) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      if (ok) {
        out += c;
      } else if (!out.empty() && out.back() != '-') {
        out += '-';
      }
    }
    while (!out.empty() && out.back() == '-') out.pop_back();
    const size_t dash = out.rfind('-');
    if (dash != std::string::npos && out.find_first_not_of("0123456789", dash + 1) == std::string::npos) {
      out.insert(dash + 1, "n");
    }
    return out.empty() ? "rule" : out;
  }

  std::vector<std::pair<std::string, std::string>> rules_;
  std::unordered_map<std::string, size_t> index_;
};

// One conversion. visit() returns a GBNF expression (alternatives allowed)
// for the JSON texts valid under a sub-schema; `path` is its JSON pointer,
// `hint` the stem for the names of rules it makes.
class SchemaConverter {
 public:
  explicit SchemaConverter(const Json& root) : root_(root) {}

  Result<std::string> convert() {
    const std::string root = rules_.reserve("root");
    ref_rules_["#"] = root;
    refs_in_progress_["#"] = 0;
    OMNIBUS_ASSIGN_OR_RETURN(std::string body, visit(root_, "", "root", 0));
    rules_.set_body(root, body);
    return rules_.text();
  }

 private:
  static Status error(const std::string& path, const std::string& what) { return schema_error(path, what); }

  // --- primitives -----------------------------------------------------------
  // At most one space, or a newline and up to 20 spaces/tabs: bounded, so a
  // model cannot emit whitespace forever, yet enough for indented output.
  std::string ws() { return rules_.add("ws", R"(| " " | "\n" [ \t]{0,20})"); }
  // One character of a string: raw, a short escape, or \uXXXX where a
  // surrogate (D800-DFFF) is only allowed as a high-low pair.
  std::string json_char() {
    return rules_.add("char", R"gbnf([^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" ()gbnf"
                              R"gbnf([0-9a-cA-Ce-fE-F] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} | )gbnf"
                              R"gbnf([dD] [89abAB] [0-9a-fA-F]{2} "\\u" [dD] [c-fC-F] [0-9a-fA-F]{2})))gbnf");
  }
  std::string string_rule() { return rules_.add("string", R"("\"" )" + json_char() + R"(* "\"")"); }
  std::string integer_rule() { return rules_.add("integer", R"("-"? ("0" | [1-9] [0-9]*))"); }
  std::string fraction_exponent() { return R"(("." [0-9]+)? ([eE] [-+]? [0-9]+)?)"; }
  std::string number_rule() { return rules_.add("number", integer_rule() + " " + fraction_exponent()); }
  std::string boolean_rule() { return rules_.add("boolean", R"("true" | "false")"); }
  std::string null_rule() { return rules_.add("null", R"("null")"); }
  // Any JSON value; value, object and array refer to each other.
  std::string value_rule() {
    if (!any_value_.empty()) return any_value_;
    any_value_ = rules_.reserve("value");
    any_object_ = rules_.reserve("object");
    const std::string array = rules_.reserve("array");
    const std::string w = ws();
    const std::string member = string_rule() + " " + w + R"( ":" )" + w + " " + any_value_ + " " + w;
    rules_.set_body(
        any_value_,
        join_nonempty({any_object_, array, string_rule(), number_rule(), boolean_rule(), null_rule()}, " | "));
    rules_.set_body(any_object_, R"("{" )" + w + " (" + member + R"( ("," )" + w + " " + member + R"()*)? "}")");
    const std::string element = any_value_ + " " + w;
    rules_.set_body(array, R"("[" )" + w + " (" + element + R"( ("," )" + w + " " + element + R"()*)? "]")");
    return any_value_;
  }
  std::string any_object_rule() {
    value_rule();
    return any_object_;
  }

  // A rule name for `expression` (itself when it already is one).
  std::string as_rule(const std::string& hint, const std::string& expression) {
    const bool is_name = !expression.empty() && std::all_of(expression.begin(), expression.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    });
    return is_name ? expression : rules_.add(hint, expression);
  }

  // --- dispatch ---------------------------------------------------------------
  Result<std::string> visit(const Json& s, const std::string& path, const std::string& hint, int depth) {
    if (depth > kMaxDepth) return error(path, "schema nested deeper than " + std::to_string(kMaxDepth) + " levels");
    if (++visits_ > kMaxVisits) return error(path, "schema too large to convert");
    if (s.is_boolean()) {
      if (s.get<bool>()) return value_rule();
      return error(path, "schema false matches nothing");
    }
    if (!s.is_object()) return error(path, "a schema must be an object or a boolean");
    Json rest = Json::object();  // the validating keywords besides $ref and the combinators
    for (auto it = s.begin(); it != s.end(); ++it) {
      const KeywordKind kind = keyword_kind(it.key());
      if (kind == KeywordKind::kRefused) return error(path, "unsupported keyword '" + it.key() + "'");
      static const std::vector<std::string> kCombinators = {"$ref", "allOf", "anyOf", "oneOf"};
      const bool combinator = std::count(kCombinators.begin(), kCombinators.end(), it.key()) > 0;
      if (kind != KeywordKind::kIgnored && !combinator) rest[it.key()] = it.value();
    }
    const bool has_ref = s.contains("$ref");
    const bool has_all = s.contains("allOf");
    if (s.contains("anyOf") && s.contains("oneOf")) return error(path, "anyOf together with oneOf is unsupported");
    const char* alt_key = s.contains("anyOf") ? "anyOf" : s.contains("oneOf") ? "oneOf" : nullptr;
    if (has_all || (has_ref && (!rest.empty() || alt_key))) {
      // Every part must hold: merge them into one schema.
      std::vector<Json> members;
      if (has_ref) members.push_back(Json{{"$ref", s["$ref"]}});
      if (alt_key) members.push_back(Json{{alt_key, s[alt_key]}});
      if (has_all) members.push_back(Json{{"allOf", s["allOf"]}});
      if (!rest.empty()) members.push_back(rest);
      OMNIBUS_ASSIGN_OR_RETURN(Json merged, merge_schemas(root_, members, path));
      return visit(merged, path, hint, depth + 1);
    }
    if (has_ref) return visit_ref(s["$ref"], path, hint, depth);
    if (alt_key) return visit_alternatives(s[alt_key], rest, path + "/" + alt_key, hint, depth);
    if (s.contains("enum") || s.contains("const")) return visit_enum(s, path);
    return visit_types(s, path, hint, depth);
  }

  // anyOf, or oneOf read as anyOf (the grammar cannot check that only one
  // alternative matches). `rest`, the sibling keywords, joins each one.
  Result<std::string> visit_alternatives(const Json& list, const Json& rest, const std::string& path,
                                         const std::string& hint, int depth) {
    if (!list.is_array() || list.empty()) return error(path, "expected a non-empty array of schemas");
    std::vector<std::string> expressions;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string item_path = path + "/" + std::to_string(i);
      const std::string item_hint = hint + "-alt" + std::to_string(i);
      Result<std::string> e = std::string();
      if (rest.empty()) {
        e = visit(list[i], item_path, item_hint, depth + 1);
      } else {
        OMNIBUS_ASSIGN_OR_RETURN(Json merged, merge_schemas(root_, std::vector<Json>{rest, list[i]}, item_path));
        e = visit(merged, item_path, item_hint, depth + 1);
      }
      if (!e.is_ok()) return e.status();
      if (std::find(expressions.begin(), expressions.end(), *e) == expressions.end()) expressions.push_back(*e);
    }
    return join_nonempty(expressions, " | ");
  }

  Result<std::string> visit_ref(const Json& ref_value, const std::string& path, const std::string& hint, int depth) {
    if (!ref_value.is_string()) return error(path, "$ref must be a string");
    const auto ref = ref_value.get<std::string>();
    if (const auto it = ref_rules_.find(ref); it != ref_rules_.end()) {
      // Reaching a $ref again before consuming a character ({"anyOf":
      // [{"$ref": "#"}]}) would be left recursion: no grammar for it.
      const auto open = refs_in_progress_.find(ref);
      if (open != refs_in_progress_.end() && open->second == container_depth_) {
        return error(path, "$ref '" + ref + "' refers to itself without an object or array in between");
      }
      return it->second;
    }
    OMNIBUS_ASSIGN_OR_RETURN(const Json* target, resolve_ref(root_, ref, path));
    const std::string name = rules_.reserve(ref.substr(ref.find_last_of('/') + 1));
    ref_rules_[ref] = name;
    refs_in_progress_[ref] = container_depth_;
    Result<std::string> body = visit(*target, ref.substr(1), name, depth + 1);
    refs_in_progress_.erase(ref);
    if (!body.is_ok()) return body.status();
    rules_.set_body(name, *body);
    return name;
  }

  Result<std::string> visit_enum(const Json& s, const std::string& path) {
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string& k = it.key();
      if (keyword_kind(k) != KeywordKind::kIgnored && k != "enum" && k != "const" && k != "type") {
        return error(path, "'" + k + "' together with enum or const is unsupported");
      }
    }
    std::vector<Json> values;
    if (s.contains("enum")) {
      if (!s["enum"].is_array() || s["enum"].empty()) return error(path, "enum must be a non-empty array");
      values.assign(s["enum"].begin(), s["enum"].end());
    }
    if (s.contains("const")) {
      if (s.contains("enum") && std::find(values.begin(), values.end(), s["const"]) == values.end()) values.clear();
      if (!s.contains("enum")) values.push_back(s["const"]);
    }
    std::vector<std::string> types;
    if (s.contains("type")) {
      OMNIBUS_ASSIGN_OR_RETURN(types, schema_types(s, path));
    }
    std::vector<std::string> literals;
    for (const Json& v : values) {
      if (!types.empty() &&
          std::none_of(types.begin(), types.end(), [&](const std::string& t) { return type_matches(v, t); })) {
        continue;
      }
      std::string text;
      try {
        text = v.dump();
      } catch (const Json::exception&) {
        return error(path, "enum value is not valid UTF-8");
      }
      const std::string literal = gbnf_literal(text);
      if (std::find(literals.begin(), literals.end(), literal) == literals.end()) literals.push_back(literal);
    }
    if (literals.empty()) return error(path, "no value of enum/const is allowed by the schema");
    return join_nonempty(literals, " | ");
  }

  Result<std::string> visit_types(const Json& s, const std::string& path, const std::string& hint, int depth) {
    OMNIBUS_ASSIGN_OR_RETURN(std::vector<std::string> types, schema_types(s, path));
    bool constrained = false;  // some keyword of a single type
    for (auto it = s.begin(); it != s.end(); ++it) {
      const KeywordKind k = keyword_kind(it.key());
      constrained = constrained || (k != KeywordKind::kIgnored && k != KeywordKind::kAny);
    }
    // Every type (integer folded into number) and nothing narrowing them.
    if (types.size() == all_types().size() - 1 && !constrained) return value_rule();
    std::vector<std::string> alternatives;
    for (const std::string& t : types) {
      Result<std::string> e = std::string();
      const std::string type_hint = types.size() > 1 ? hint + "-" + t : hint;
      if (t == "null") {
        e = null_rule();
      } else if (t == "boolean") {
        e = boolean_rule();
      } else if (t == "integer") {
        e = visit_integer(s, path);
      } else if (t == "number") {
        e = visit_number(s, path);
      } else if (t == "string") {
        e = visit_string(s, path);
      } else if (t == "array") {
        e = visit_array(s, path, type_hint, depth);
      } else {
        e = visit_object(s, path, type_hint, depth);
      }
      if (!e.is_ok()) return e.status();
      alternatives.push_back(*e);
    }
    return join_nonempty(alternatives, " | ");
  }

  // A non-negative integer keyword (minLength ...), nothing when absent.
  Result<std::optional<uint64_t>> count(const Json& s, const char* key, const std::string& path) const {
    if (!s.contains(key)) return std::optional<uint64_t>();
    const Json& v = s[key];
    const bool whole = v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0) ||
                       (v.is_number_float() && v.get<double>() >= 0 && std::trunc(v.get<double>()) == v);
    if (!whole) return error(path, std::string(key) + " must be a non-negative integer");
    const double d = v.get<double>();
    if (d > static_cast<double>(kMaxCount)) {
      return error(path, std::string(key) + " above " + std::to_string(kMaxCount) + " is unsupported");
    }
    return std::optional(static_cast<uint64_t>(d));
  }

  Result<std::string> visit_string(const Json& s, const std::string& path) {
    OMNIBUS_ASSIGN_OR_RETURN(std::optional<uint64_t> min, count(s, "minLength", path));
    OMNIBUS_ASSIGN_OR_RETURN(std::optional<uint64_t> max, count(s, "maxLength", path));
    if (min && max && *min > *max) return error(path, "minLength is greater than maxLength");
    const std::string quote = R"("\"")";
    std::optional<std::string> pattern;
    if (s.contains("pattern") && s.contains("format"))
      return error(path, "pattern together with format is unsupported");
    if (s.contains("format")) {
      if (!s["format"].is_string()) return error(path, "format must be a string");
      pattern = format_pattern(s["format"].get<std::string>());
      if (!pattern) return error(path, "unsupported format '" + s["format"].get<std::string>() + "'");
    } else if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) return error(path, "pattern must be a string");
      pattern = s["pattern"].get<std::string>();
    }
    if (pattern) {
      Result<RegexGbnf> regex = regex_to_gbnf(*pattern, min.value_or(0), max);
      if (!regex.is_ok()) return error(path, regex.status().message());
      return join_nonempty({quote, regex->expression.empty() ? "" : "(" + regex->expression + ")", quote}, " ");
    }
    if (!min && !max) return string_rule();
    return quote + " " + gbnf_repeat(json_char(), min.value_or(0), max) + " " + quote;
  }

  Result<std::string> visit_integer(const Json& s, const std::string& path) {
    std::optional<int64_t> lo;
    std::optional<int64_t> hi;
    struct Bound {
      const char* key;
      bool lower;
      bool exclusive;
    };
    for (const Bound& bound : {Bound{"minimum", true, false}, Bound{"exclusiveMinimum", true, true},
                               Bound{"maximum", false, false}, Bound{"exclusiveMaximum", false, true}}) {
      if (!s.contains(bound.key)) continue;
      const Json& v = s[bound.key];
      if (!v.is_number()) return error(path, std::string(bound.key) + " must be a number");
      const std::optional<int64_t> b = integer_bound(v, bound.lower, bound.exclusive);
      if (!b) return error(path, std::string(bound.key) + " is outside the supported 64-bit range");
      if (bound.lower) lo = lo ? std::max(*lo, *b) : *b;
      if (!bound.lower) hi = hi ? std::min(*hi, *b) : *b;
    }
    if (!lo && !hi) return integer_rule();
    if (lo && hi && *lo > *hi) return error(path, "no integer lies between minimum and maximum");
    return integer_range_gbnf(lo, hi);
  }

  // Only "minimum": 0 is expressible for numbers with fractions and
  // exponents (no leading "-"); other bounds are refused.
  Result<std::string> visit_number(const Json& s, const std::string& path) {
    for (const char* key : {"maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
      if (s.contains(key)) return error(path, std::string(key) + " on a number is unsupported (use type integer)");
    }
    if (!s.contains("minimum")) return number_rule();
    const Json& v = s["minimum"];
    if (!v.is_number() || v != 0) return error(path, "minimum other than 0 on a number is unsupported");
    return R"(("0" | [1-9] [0-9]*) )" + fraction_exponent();
  }

  Result<std::string> visit_array(const Json& s, const std::string& path, const std::string& hint, int depth);
  Result<std::string> visit_object(const Json& s, const std::string& path, const std::string& hint, int depth);
  // A quoted key that differs from every one in `listed`.
  std::string other_key(const std::vector<std::vector<JsonChar>>& listed, const std::string& hint);
  std::string key_trie(const std::vector<const std::vector<JsonChar>*>& keys, size_t depth, const std::string& hint);

  const Json& root_;
  RuleSet rules_;
  std::string any_value_;
  std::string any_object_;
  std::map<std::string, std::string> ref_rules_;  // $ref → its rule
  std::map<std::string, int> refs_in_progress_;   // $ref → container_depth_ when entered
  int container_depth_ = 0;                       // objects and arrays around the current schema
  size_t visits_ = 0;
};

// Counts the objects and arrays around the schema being converted.
class ContainerScope {
 public:
  explicit ContainerScope(int& depth) : depth_(depth) { ++depth_; }
  ~ContainerScope() { --depth_; }
  ContainerScope(const ContainerScope&) = delete;
  ContainerScope& operator=(const ContainerScope&) = delete;

 private:
  int& depth_;
};

// Items are written "[" ws item ws ("," ws item ws)* "]": prefix items in
// turn (required up to minItems, then each optional only if the one before
// is there), then the `items` schema repeated.
Result<std::string> SchemaConverter::visit_array(const Json& s, const std::string& path, const std::string& hint,
                                                 int depth) {
  static const Json kAnything = true;
  std::vector<const Json*> prefix;
  const Json* tail = nullptr;  // schema of items after the prefix; none allowed when null
  std::string prefix_key = "prefixItems";
  std::string tail_key = "items";
  if (s.contains("prefixItems") || (s.contains("items") && s["items"].is_array())) {
    if (!s.contains("prefixItems")) {  // draft-07 tuple
      prefix_key = "items";
      tail_key = "additionalItems";
    }
    const Json& list = s[prefix_key];
    if (!list.is_array()) return error(path, prefix_key + " must be an array");
    if (list.size() > kMaxPrefixItems) {
      return error(path, prefix_key + " longer than " + std::to_string(kMaxPrefixItems) + " is unsupported");
    }
    for (const Json& item : list) prefix.push_back(&item);
    // Unlike JSON Schema, a tuple is closed unless `items` says otherwise.
    if (s.contains(tail_key)) tail = &s[tail_key];
  } else {
    tail = s.contains("items") ? &s["items"] : &kAnything;
  }
  if (tail && tail->is_boolean() && !tail->get<bool>()) tail = nullptr;
  OMNIBUS_ASSIGN_OR_RETURN(std::optional<uint64_t> min_items, count(s, "minItems", path));
  OMNIBUS_ASSIGN_OR_RETURN(std::optional<uint64_t> max_items, count(s, "maxItems", path));
  // A prefix item that is `false` ends the array before it.
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (prefix[i]->is_boolean() && !prefix[i]->get<bool>()) {
      prefix.resize(i);
      tail = nullptr;
    }
  }
  const uint64_t k = prefix.size();
  // Unlike JSON Schema, prefix items are all required unless minItems says otherwise.
  const uint64_t lo = min_items.value_or(k);
  std::optional<uint64_t> hi = max_items;
  if (!tail) hi = std::min(hi.value_or(k), k);
  if (hi && lo > *hi) return error(path, "minItems is more than the array can hold");
  if (s.contains("uniqueItems")) {
    const Json& unique = s["uniqueItems"];
    if (!unique.is_boolean()) return error(path, "uniqueItems must be a boolean");
    if (unique.get<bool>() && (!hi || *hi > 1))
      return error(path, "uniqueItems true is unsupported (unless maxItems <= 1)");
  }

  ContainerScope scope(container_depth_);
  const std::string w = ws();
  const std::string comma = R"("," )" + w + " ";
  std::vector<std::string> items;
  for (size_t i = 0; i < k && (!hi || i < *hi); ++i) {
    const std::string item_hint = hint + "-item" + std::to_string(i);
    OMNIBUS_ASSIGN_OR_RETURN(
        std::string e, visit(*prefix[i], path + "/" + prefix_key + "/" + std::to_string(i), item_hint, depth + 1));
    items.push_back(as_rule(item_hint, e) + " " + w);
  }
  std::string rest;  // the items from index k on
  if (tail && (!hi || *hi > k)) {
    OMNIBUS_ASSIGN_OR_RETURN(std::string e, visit(*tail, path + "/" + tail_key, hint + "-item", depth + 1));
    const std::string item = as_rule(hint + "-item", e) + " " + w;
    const uint64_t need = lo > k ? lo - k : 0;
    const std::optional<uint64_t> room = hi ? std::optional(*hi - k) : std::nullopt;
    if (k == 0) {  // the first item has no comma
      const std::string more = gbnf_repeat("(" + comma + item + ")", need > 0 ? need - 1 : 0,
                                           room ? std::optional(*room - 1) : std::nullopt);
      rest = join_nonempty({item, more}, " ");
      if (need == 0) rest = "(" + rest + ")?";
    } else {
      rest = gbnf_repeat("(" + comma + item + ")", need, room);
    }
  }
  for (size_t i = items.size(); i-- > 0;) {
    const std::string written = join_nonempty({i ? comma + items[i] : items[i], rest}, " ");
    rest = i < lo ? written : "(" + written + ")?";
  }
  return join_nonempty({R"("[")", w, rest, R"("]")"}, " ");
}

// Members are written in the order of `properties`, required ones always,
// optional ones when wanted, then any additional ones; commas only between.
Result<std::string> SchemaConverter::visit_object(const Json& s, const std::string& path, const std::string& hint,
                                                  int depth) {
  static const Json kAnything = true;
  struct Property {
    std::string key;
    const Json* schema;
    std::string path;
    bool required = false;
  };
  std::vector<Property> properties;
  if (s.contains("properties")) {
    if (!s["properties"].is_object()) return error(path, "properties must be an object");
    for (auto it = s["properties"].begin(); it != s["properties"].end(); ++it) {
      properties.push_back({it.key(), &it.value(), path + "/properties/" + pointer_escape(it.key())});
    }
  }
  // Schema of the properties not listed; none allowed when null. Absent, it
  // allows none when `properties` is given (the intent of nearly every
  // schema written for structured output), any otherwise.
  const Json* extra = s.contains("properties") ? nullptr : &kAnything;
  if (s.contains("additionalProperties")) {
    const Json& a = s["additionalProperties"];
    extra = a.is_boolean() && !a.get<bool>() ? nullptr : &a;
  }
  if (s.contains("required")) {
    if (!s["required"].is_array()) return error(path, "required must be an array");
    for (const Json& name : s["required"]) {
      if (!name.is_string()) return error(path, "required must list strings");
      const auto key = name.get<std::string>();
      const auto p =
          std::find_if(properties.begin(), properties.end(), [&](const Property& q) { return q.key == key; });
      if (p != properties.end()) {
        p->required = true;
      } else if (extra) {
        properties.push_back({key, extra, path + "/additionalProperties", true});
      } else {
        return error(path, "required property '" + key + "' is not allowed (not in properties)");
      }
    }
  }
  for (size_t i = properties.size(); i-- > 0;) {  // a property whose schema is false must be absent
    if (!properties[i].schema->is_boolean() || properties[i].schema->get<bool>()) continue;
    if (properties[i].required) return error(path, "required property '" + properties[i].key + "' has schema false");
    properties.erase(properties.begin() + static_cast<std::ptrdiff_t>(i));
  }
  OMNIBUS_ASSIGN_OR_RETURN(std::optional<uint64_t> min_properties, count(s, "minProperties", path));
  OMNIBUS_ASSIGN_OR_RETURN(std::optional<uint64_t> max_properties, count(s, "maxProperties", path));
  const auto required_count = static_cast<uint64_t>(
      std::count_if(properties.begin(), properties.end(), [](const Property& p) { return p.required; }));
  if (min_properties && required_count < *min_properties) {
    return error(path, "minProperties above the number of required properties is unsupported");
  }
  if (max_properties && (extra || properties.size() > *max_properties)) {
    return error(path, "maxProperties below the number of allowed properties is unsupported");
  }
  if (properties.empty() && extra && extra->is_boolean()) return any_object_rule();

  ContainerScope scope(container_depth_);
  const std::string w = ws();
  const std::string colon = " " + w + R"( ":" )" + w + " ";
  std::vector<std::string> members;  // rules for "key": value
  std::vector<std::vector<JsonChar>> listed;
  for (const Property& p : properties) {
    const std::string value_hint = hint + "-" + p.key;
    OMNIBUS_ASSIGN_OR_RETURN(std::string value, visit(*p.schema, p.path, value_hint, depth + 1));
    std::optional<std::vector<JsonChar>> chars = json_chars(p.key);
    if (!chars) return error(path, "property name is not valid UTF-8");
    std::string spelled = "\"";
    for (const JsonChar& c : *chars) spelled += c.spelling;
    members.push_back(
        rules_.add(value_hint + "-kv", gbnf_literal(spelled + "\"") + colon + as_rule(value_hint, value)));
    listed.push_back(std::move(*chars));
  }
  std::optional<std::string> extra_member;
  if (extra) {
    OMNIBUS_ASSIGN_OR_RETURN(std::string value,
                             visit(*extra, path + "/additionalProperties", hint + "-extra", depth + 1));
    const std::string key = other_key(listed, hint + "-extra-key");
    extra_member = rules_.add(hint + "-extra-kv", key + colon + as_rule(hint + "-extra", value));
  }

  const std::string comma = R"("," )" + w + " ";
  const size_t n = members.size();
  // after[i]: members i.. once one has been written, each after a comma.
  // Written inline each would repeat all that follow it, and `first` below
  // repeats each: a grammar quadratic in the number of optional members
  // (270 MB for 4,500 of them). Past a few hundred bytes it becomes a rule
  // of its own, referred to by name: linear.
  constexpr size_t kInlineRestBytes = 256;
  std::vector<std::string> after(n + 1);
  if (extra_member) after[n] = "(" + comma + *extra_member + " " + w + ")*";
  for (size_t i = n; i-- > 0;) {
    const std::string member = comma + members[i] + " " + w;
    after[i] = join_nonempty({properties[i].required ? member : "(" + member + ")?", after[i + 1]}, " ");
    if (after[i].size() > kInlineRestBytes) after[i] = rules_.add(hint + "-rest-" + std::to_string(i), after[i]);
  }
  // The first member written: an optional one followed by the rest, up to
  // and including the first required one.
  std::vector<std::string> first;
  bool required_seen = false;
  for (size_t i = 0; i < n && !required_seen; ++i) {
    first.push_back(join_nonempty({members[i] + " " + w, after[i + 1]}, " "));
    required_seen = properties[i].required;
  }
  if (!required_seen && extra_member) first.push_back(join_nonempty({*extra_member + " " + w, after[n]}, " "));
  std::string body;
  if (!first.empty()) body = "(" + join_nonempty(first, " | ") + (required_seen ? ")" : ")?");
  return join_nonempty({R"("{")", w, body, R"("}")"}, " ");
}

std::string SchemaConverter::other_key(const std::vector<std::vector<JsonChar>>& listed, const std::string& hint) {
  if (listed.empty()) return string_rule();
  std::vector<const std::vector<JsonChar>*> keys;
  for (const std::vector<JsonChar>& k : listed) keys.push_back(&k);
  return rules_.add(hint, R"("\"" )" + key_trie(keys, 0, hint));
}

// The rest of a key whose first `depth` characters equal those of `keys`
// (spelled canonically): end it (unless that makes one of them), continue
// with one of them, or leave them all with a different character.
std::string SchemaConverter::key_trie(const std::vector<const std::vector<JsonChar>*>& keys, size_t depth,
                                      const std::string& hint) {
  bool ends_here = false;
  std::map<uint32_t, std::vector<const std::vector<JsonChar>*>> next;
  for (const std::vector<JsonChar>* k : keys) {
    if (k->size() == depth) {
      ends_here = true;
    } else {
      next[(*k)[depth].code_point].push_back(k);
    }
  }
  std::vector<std::string> alternatives;
  if (!ends_here) alternatives.push_back(R"("\"")");
  std::vector<uint32_t> taken;
  for (const auto& [code_point, group] : next) {
    taken.push_back(code_point);
    alternatives.push_back(gbnf_literal((*group[0])[depth].spelling) + " " + key_trie(group, depth + 1, hint));
  }
  alternatives.push_back(json_char_not_in(taken) + " " + json_char() + R"(* "\"")");
  // Each character nests a group; a rule now and then keeps the nesting
  // within what the GBNF parser accepts for long keys.
  if (depth % 32 == 31) return rules_.add(hint + "-rest", join_nonempty(alternatives, " | "));
  return "(" + join_nonempty(alternatives, " | ") + ")";
}

}  // namespace

Result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema) {
  return SchemaConverter(schema).convert();
}

Result<std::string> json_schema_to_gbnf(const nlohmann::json& schema) {
  return json_schema_to_gbnf(nlohmann::ordered_json(schema));
}

std::string json_object_gbnf() {
  const Result<std::string> grammar = json_schema_to_gbnf(nlohmann::ordered_json{{"type", "object"}});
  return grammar.is_ok() ? grammar.value() : std::string();
}

}  // namespace omnibus
