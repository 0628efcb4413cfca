#include "server/structured_output.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "grammar/json_schema_grammar.h"
#include "grammar/regex_grammar.h"  // gbnf_literal

namespace omnibus::server {
namespace {

// The constraint one field asks for: GBNF text, or a schema still to convert.
// The schema is read again from the body as OrderedJson, which keeps its
// properties in the order written (Json sorts them, and a model writes an
// object's properties in the grammar's order). `param` is where an error
// points (the schema inside response_format, say).
struct Constraint {
  std::string param;
  std::string gbnf;
  std::vector<std::string> schema_path;  // keys from the body to the schema
  bool schema_is_text = false;           // the value there is the schema's JSON text

  static Constraint text(std::string param, std::string gbnf) {
    Constraint c;
    c.param = std::move(param);
    c.gbnf = std::move(gbnf);
    return c;
  }
  static Constraint schema(std::string param, std::vector<std::string> path, bool is_text) {
    Constraint c;
    c.param = std::move(param);
    c.schema_path = std::move(path);
    c.schema_is_text = is_text;
    return c;
  }
};

// A field that constrains the output, and its value that asks for nothing.
struct ConstraintField {
  const char* name;
  bool (*neutral)(const Json&);
};

bool never(const Json&) { return false; }
bool is_empty_string(const Json& v) { return v.is_string() && v.get_ref<const std::string&>().empty(); }
bool is_text_format(const Json& v) { return v.is_object() && v.contains("type") && v.at("type") == "text"; }

constexpr ConstraintField kConstraintFields[] = {
    {"response_format", is_text_format},  // OpenAI
    {"grammar", is_empty_string},         // llama-server
    {"json_schema", never},               // llama-server
    {"guided_json", never},               // vLLM
    {"guided_grammar", is_empty_string},  // vLLM
    {"guided_choice", never},             // vLLM
};

// `path`: the keys from the body to `schema`; `param`: their dotted name.
MaybeError from_schema(const Json& schema, std::vector<std::string> path, Constraint& out) {
  std::string param = path[0];
  for (size_t i = 1; i < path.size(); ++i) param += "." + path[i];
  if (!schema.is_object()) return wrong_type(param, "an object (a JSON Schema)", schema);
  out = Constraint::schema(std::move(param), std::move(path), /*is_text=*/false);
  return std::nullopt;
}

MaybeError check_optional_type(const Json& obj, const char* key, const std::string& prefix, bool (Json::*is)() const,
                               const char* expected) {
  if (has_field(obj, key) && !(obj.at(key).*is)()) return wrong_type(prefix + "." + key, expected, obj.at(key));
  return std::nullopt;
}

// OpenAI's {"type": "json_schema", "json_schema": {"name", "description",
// "schema", "strict"}}.
//
// A missing `schema` means any JSON object. OpenAI's reference marks the
// field optional; llama-server reads a missing one as {} (any JSON value);
// vLLM refuses the request ("one kind of structured outputs constraint ...
// none are specified"). Any object is what JSON mode gives and what OpenAI's
// structured outputs always return at the root, so a client that leaves the
// schema out gets JSON it can parse either way. `strict` changes nothing
// here: the schema is always enforced (as vLLM and llama-server do; OpenAI
// without strict only aims for it).
//
// llama-server's README also shows the schema flat in response_format
// ({"type": "json_schema", "schema": {...}}); it is taken when there is no
// json_schema object.
MaybeError from_json_schema_format(const Json& format, Constraint& out) {
  if (!has_field(format, "json_schema")) {
    if (has_field(format, "schema")) return from_schema(format.at("schema"), {"response_format", "schema"}, out);
    return ApiError::invalid("response_format.json_schema",
                             "'response_format.json_schema' is required when 'response_format.type' is "
                             "\"json_schema\"",
                             "missing_required_parameter");
  }
  if (has_field(format, "schema")) {
    return ApiError::invalid("response_format.schema",
                             "'response_format.schema' and 'response_format.json_schema' are both given; send the "
                             "schema once, as 'response_format.json_schema.schema'");
  }
  const Json& wrapper = format.at("json_schema");
  const std::string param = "response_format.json_schema";
  if (!wrapper.is_object()) return wrong_type(param, "an object", wrapper);
  OMNIBUS_API_RETURN_IF_ERROR(check_optional_type(wrapper, "name", param, &Json::is_string, "a string"));
  OMNIBUS_API_RETURN_IF_ERROR(check_optional_type(wrapper, "description", param, &Json::is_string, "a string"));
  OMNIBUS_API_RETURN_IF_ERROR(check_optional_type(wrapper, "strict", param, &Json::is_boolean, "a boolean"));
  if (has_field(wrapper, "schema")) {
    return from_schema(wrapper.at("schema"), {"response_format", "json_schema", "schema"}, out);
  }
  out = Constraint::text(param, json_object_gbnf());
  return std::nullopt;
}

// {"type": "text" | "json_object" | "json_schema", ...}; llama-server's
// {"type": "json_object", "schema": {...}} is a schema too.
MaybeError from_response_format(const Json& format, std::optional<Constraint>& out) {
  if (!format.is_object()) return wrong_type("response_format", "an object", format);
  if (!has_field(format, "type")) {
    return ApiError::invalid("response_format.type", "'response_format.type' is required",
                             "missing_required_parameter");
  }
  const Json& type = format.at("type");
  if (!type.is_string()) return wrong_type("response_format.type", "a string", type);
  const std::string& name = type.get_ref<const std::string&>();
  if (name == "text") return std::nullopt;
  out.emplace();
  if (name == "json_schema") return from_json_schema_format(format, *out);
  if (name == "json_object") {
    if (has_field(format, "schema")) return from_schema(format.at("schema"), {"response_format", "schema"}, *out);
    *out = Constraint::text("response_format", json_object_gbnf());
    return std::nullopt;
  }
  return ApiError::invalid("response_format.type",
                           fmt::format("'response_format.type' must be \"text\", \"json_object\" or \"json_schema\", "
                                       "got \"{}\"",
                                       name),
                           "unsupported_value");
}

MaybeError from_grammar_text(const Json& value, const char* field, std::optional<Constraint>& out) {
  if (!value.is_string()) return wrong_type(field, "a string (a GBNF grammar)", value);
  out = Constraint::text(field, value.get<std::string>());
  return std::nullopt;
}

// vLLM's guided_json: the schema, or its JSON text (parsed when converted).
MaybeError from_guided_json(const Json& value, std::optional<Constraint>& out) {
  out.emplace();
  if (!value.is_string()) return from_schema(value, {"guided_json"}, *out);
  *out = Constraint::schema("guided_json", {"guided_json"}, /*is_text=*/true);
  return std::nullopt;
}

// vLLM's guided_choice: the output is exactly one of the strings.
MaybeError from_guided_choice(const Json& value, std::optional<Constraint>& out) {
  if (!value.is_array()) return wrong_type("guided_choice", "an array of strings", value);
  if (value.empty()) return ApiError::invalid("guided_choice", "'guided_choice' must hold at least one string");
  std::string gbnf = "root ::= ";
  for (size_t i = 0; i < value.size(); ++i) {
    if (!value[i].is_string()) return wrong_type(fmt::format("guided_choice[{}]", i), "a string", value[i]);
    if (i > 0) gbnf += " | ";
    gbnf += gbnf_literal(value[i].get_ref<const std::string&>());
  }
  out = Constraint::text("guided_choice", std::move(gbnf));
  return std::nullopt;
}

MaybeError constraint_of(const Json& body, const char* field, std::optional<Constraint>& out) {
  const Json& value = body.at(field);
  const std::string_view name = field;
  if (name == "response_format") return from_response_format(value, out);
  if (name == "grammar" || name == "guided_grammar") return from_grammar_text(value, field, out);
  if (name == "json_schema") {
    out.emplace();
    return from_schema(value, {field}, *out);
  }
  if (name == "guided_json") return from_guided_json(value, out);
  return from_guided_choice(value, out);
}

// Costs parse_gbnf does not bound yet, checked on the text first: it
// recurses once per level of nested parentheses (~300 bytes of stack each;
// 40,000 levels overflow an 8 MiB stack); every helper rule it makes for a
// group or a repetition copies the name of the rule it is in (a 100 KB name
// with "x"{0,10000} would take 2 GB); and its nullable-rule pass is
// quadratic in a chain of rules ("a ::= b", "b ::= c", ...: 20,000 of them
// take 3 s). The text is read the way its lexer reads it: literals "..."
// and classes [...] with \ escapes, # comments to the end of the line.
constexpr int kMaxGroupNesting = 1000;
constexpr uint64_t kMaxHelperNameBytes = uint64_t{32} << 20;
// For a grammar a client wrote (a schema's converter makes rules that the
// pass settles in a few rounds, and a large schema may make more).
constexpr size_t kMaxGivenRules = 4096;

bool is_gbnf_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

// How many helper rules the repetition "{m}", "{m,}" or "{m,n}" at text[i]
// makes (n - m, or 1 for an unbounded one); i moves to its last character.
uint64_t repetition_helpers(std::string_view text, size_t& i) {
  auto number = [&](uint64_t& out) {
    bool any = false;
    for (; i + 1 < text.size() && text[i + 1] >= '0' && text[i + 1] <= '9'; ++i, any = true) {
      out = std::min<uint64_t>(out * 10 + static_cast<uint64_t>(text[i + 1] - '0'), uint64_t{1} << 32);
    }
    return any;
  };
  auto skip_space = [&] {
    while (i + 1 < text.size() && (text[i + 1] == ' ' || text[i + 1] == '\t')) ++i;
  };
  uint64_t min = 0, max = 0;
  skip_space();
  number(min);
  skip_space();
  if (i + 1 >= text.size() || text[i + 1] != ',') return 0;  // {m}: written out, no helper
  ++i;
  skip_space();
  if (!number(max)) return 1;  // {m,}
  return max > min ? max - min : 0;
}

MaybeError check_gbnf_shape(std::string_view text, const std::string& param, size_t max_rules) {
  int depth = 0;
  size_t rules = 0;
  size_t name = 0;          // the name being read
  size_t last_name = 0;     // the last name read
  size_t rule_name = 0;     // the name of the rule being defined
  uint64_t name_bytes = 0;  // copied into helper rules' names
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (is_gbnf_name_char(c)) {
      ++name;
      continue;
    }
    if (name > 0) last_name = name;
    name = 0;
    uint64_t helpers = 0;
    if (c == '"' || c == '[') {
      const char close = c == '"' ? '"' : ']';
      for (++i; i < text.size() && text[i] != close; ++i) {
        if (text[i] == '\\') ++i;
      }
    } else if (c == '#') {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
    } else if (c == ':' && text.substr(i, 3) == "::=") {
      if (++rules > max_rules) {
        return ApiError::invalid(param, fmt::format("'{}' defines more than {} rules", param, max_rules));
      }
      rule_name = last_name;
      i += 2;
    } else if (c == '(') {
      if (++depth > kMaxGroupNesting) {
        return ApiError::invalid(param,
                                 fmt::format("'{}' nests parentheses more than {} deep", param, kMaxGroupNesting));
      }
      helpers = 1;
    } else if (c == ')') {
      depth = std::max(0, depth - 1);
    } else if (c == '*' || c == '+' || c == '?') {
      helpers = 1;
    } else if (c == '{') {
      helpers = repetition_helpers(text, i);
    }
    name_bytes += helpers * (rule_name + 8);
    if (name_bytes > kMaxHelperNameBytes) {
      return ApiError::invalid(param, fmt::format("'{}' is too large to compile: its groups and repetitions copy "
                                                  "their rule's name more than {} MiB in all; use shorter rule "
                                                  "names or fewer repetitions",
                                                  param, kMaxHelperNameBytes >> 20));
    }
  }
  return std::nullopt;
}

// The schema at c.schema_path, read from the body again with its keys in
// order, to GBNF. The first parse passed the same text, so the second
// cannot fail on it; a schema given as text is parsed here, as the body was.
MaybeError convert_schema(std::string_view body_text, const ApiLimits& limits, Constraint& c) {
  ApiResult<OrderedJson> body = parse_ordered_json_object(body_text, limits.max_json_depth, limits.max_body_bytes);
  if (!body) return ApiError::invalid(c.param, "the request body could not be read again: " + body.error().message);
  const OrderedJson* schema = &body.value();
  for (const std::string& key : c.schema_path) {
    if (!schema->is_object() || !schema->contains(key)) {
      return ApiError::invalid(c.param, fmt::format("'{}' could not be found again in the request body", c.param));
    }
    schema = &schema->at(key);
  }
  ApiResult<OrderedJson> from_text = OrderedJson();
  if (c.schema_is_text) {
    if (!schema->is_string()) return ApiError::invalid(c.param, fmt::format("'{}' must be a string", c.param));
    from_text = parse_ordered_json_object(schema->get_ref<const std::string&>(), limits.max_json_depth,
                                          limits.max_body_bytes, "'" + c.param + "'");
    if (!from_text) return ApiError::invalid(c.param, from_text.error().message, from_text.error().code);
    schema = &from_text.value();
  }
  if (!schema->is_object()) return ApiError::invalid(c.param, fmt::format("'{}' must be an object", c.param));
  Result<std::string> gbnf = json_schema_to_gbnf(*schema);
  if (!gbnf.is_ok()) {
    return ApiError::invalid(c.param, fmt::format("'{}' cannot be used: {}", c.param, gbnf.status().message()));
  }
  c.gbnf = std::move(gbnf).value();
  return std::nullopt;
}

}  // namespace

MaybeError parse_output_constraint(std::string_view body_text, const Json& body, const ApiLimits& limits,
                                   std::shared_ptr<const Grammar>& out) {
  // Which fields ask for a constraint, before any is converted: two are
  // refused outright, not after the first one's (possibly costly) grammar.
  const char* field = nullptr;
  for (const ConstraintField& f : kConstraintFields) {
    if (!has_field(body, f.name) || f.neutral(body.at(f.name))) continue;
    if (field != nullptr) {
      return ApiError::invalid(
          f.name, fmt::format("'{}' and '{}' both constrain the output; send only one of them", field, f.name));
    }
    field = f.name;
  }
  if (field == nullptr) return std::nullopt;

  std::optional<Constraint> constraint;
  OMNIBUS_API_RETURN_IF_ERROR(constraint_of(body, field, constraint));
  if (!constraint) return std::nullopt;  // response_format {"type": "text", ...}
  if (!constraint->schema_path.empty()) OMNIBUS_API_RETURN_IF_ERROR(convert_schema(body_text, limits, *constraint));
  if (constraint->gbnf.size() > limits.max_grammar_bytes) {
    return ApiError::invalid(constraint->param,
                             fmt::format("'{}' {} a grammar of {} bytes; the limit is {}", constraint->param,
                                         constraint->schema_path.empty() ? "is" : "makes", constraint->gbnf.size(),
                                         limits.max_grammar_bytes),
                             "grammar_too_large");
  }
  const bool given = constraint->schema_path.empty();
  OMNIBUS_API_RETURN_IF_ERROR(
      check_gbnf_shape(constraint->gbnf, constraint->param, given ? kMaxGivenRules : ~size_t{0}));
  Result<Grammar> grammar = parse_gbnf(constraint->gbnf);
  if (!grammar.is_ok()) {
    // A given grammar's own mistake; for a schema, a grammar the converter
    // should not have made, still the request's 400 rather than a crash.
    return ApiError::invalid(constraint->param,
                             fmt::format("'{}' cannot be used: {}", constraint->param, grammar.status().message()));
  }
  out = std::make_shared<const Grammar>(std::move(grammar).value());
  return std::nullopt;
}

}  // namespace omnibus::server
