#include "server/tool_request.h"

#include <set>
#include <utility>

#include <fmt/format.h>

#include "grammar/json_schema_grammar.h"
#include "grammar/regex_grammar.h"  // gbnf_literal
#include "server/openai_request.h"

namespace omnibus::server {
namespace {

bool valid_tool_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

MaybeError check_optional(const Json& obj, const char* key, const std::string& prefix, bool (Json::*is)() const,
                          const char* expected) {
  if (has_field(obj, key) && !(obj.at(key).*is)()) return wrong_type(prefix + "." + key, expected, obj.at(key));
  return std::nullopt;
}

// tools[i]: {"type": "function", "function": {"name", "description",
// "parameters", "strict"}}; `ordered` is the same value with its keys in
// the order written.
MaybeError parse_tool(const Json& tool, const OrderedJson& ordered, size_t i, ToolDefinition& out) {
  const std::string param = fmt::format("tools[{}]", i);
  if (!tool.is_object()) return wrong_type(param, "an object", tool);
  if (!has_field(tool, "type") || tool.at("type") != "function") {
    return ApiError::invalid(param + ".type", fmt::format("'{}.type' must be \"function\"", param),
                             "unsupported_value");
  }
  const std::string fparam = param + ".function";
  if (!has_field(tool, "function")) {
    return ApiError::invalid(fparam, fmt::format("'{}' is required", fparam), "missing_required_parameter");
  }
  const Json& function = tool.at("function");
  if (!function.is_object()) return wrong_type(fparam, "an object", function);
  if (!has_field(function, "name") || !function.at("name").is_string()) {
    return ApiError::invalid(fparam + ".name", fmt::format("'{}.name' must be a string", fparam),
                             "missing_required_parameter");
  }
  out.name = function.at("name").get<std::string>();
  if (!valid_tool_name(out.name)) {
    return ApiError::invalid(fparam + ".name",
                             fmt::format("'{}.name' must be 1 to 64 letters, digits, '_' or '-'", fparam));
  }
  OMNIBUS_API_RETURN_IF_ERROR(check_optional(function, "description", fparam, &Json::is_string, "a string"));
  OMNIBUS_API_RETURN_IF_ERROR(check_optional(function, "strict", fparam, &Json::is_boolean, "a boolean"));
  OMNIBUS_API_RETURN_IF_ERROR(
      check_optional(function, "parameters", fparam, &Json::is_object, "an object (a JSON Schema)"));
  // OpenAI: "omitting parameters defines a function with an empty parameter list".
  const OrderedJson& ordered_function = ordered.at("function");
  OrderedJson schema = has_field(function, "parameters")
                           ? ordered_function.at("parameters")
                           : OrderedJson{{"type", "object"}, {"properties", OrderedJson::object()}};
  // Arguments are an object (the call is read back only as one): a schema
  // without a type gets "object"; any other type is refused.
  if (!schema.contains("type")) {
    schema["type"] = "object";
  } else if (schema["type"] != "object") {
    return ApiError::invalid(
        fparam + ".parameters",
        fmt::format("the parameters of tool '{}' must describe an object (\"type\": \"object\")", out.name));
  }
  Result<std::string> gbnf = json_schema_to_gbnf(schema);
  if (!gbnf.is_ok()) {
    return ApiError::invalid(fparam + ".parameters", fmt::format("the parameters of tool '{}' cannot be used: {}",
                                                                 out.name, gbnf.status().message()));
  }
  out.arguments_gbnf = std::move(gbnf).value();
  out.template_json = python_json_dumps(ordered);
  return std::nullopt;
}

MaybeError parse_tools(std::string_view body_text, const Json& body, const ApiLimits& limits, ToolRequest& out) {
  if (!has_field(body, "tools")) return std::nullopt;
  const Json& tools = body.at("tools");
  if (!tools.is_array()) return wrong_type("tools", "an array of tools", tools);
  if (tools.empty()) return std::nullopt;
  if (tools.size() > kMaxTools) {
    return ApiError::invalid("tools",
                             fmt::format("'tools' has {} tools; at most {} are allowed", tools.size(), kMaxTools));
  }
  // Read again with keys in order: the template writes each tool as sent,
  // and a model writes an object's properties in the schema's order.
  ApiResult<OrderedJson> ordered = parse_ordered_json_object(body_text, limits.max_json_depth, limits.max_body_bytes);
  if (!ordered)
    return ApiError::invalid("tools", "the request body could not be read again: " + ordered.error().message);
  const OrderedJson& ordered_tools = ordered.value().at("tools");
  std::set<std::string> names;
  size_t grammar_bytes = 0;
  for (size_t i = 0; i < tools.size(); ++i) {
    ToolDefinition tool;
    OMNIBUS_API_RETURN_IF_ERROR(parse_tool(tools[i], ordered_tools[i], i, tool));
    if (!names.insert(tool.name).second) {
      return ApiError::invalid(fmt::format("tools[{}].function.name", i),
                               fmt::format("tool name '{}' is given twice; tool names must be unique", tool.name));
    }
    grammar_bytes += tool.arguments_gbnf.size();
    if (grammar_bytes > limits.max_grammar_bytes) {
      return ApiError::invalid(
          fmt::format("tools[{}].function.parameters", i),
          fmt::format("the tools' parameter schemas make grammars of more than {} bytes", limits.max_grammar_bytes),
          "grammar_too_large");
    }
    out.tools.push_back(std::move(tool));
  }
  return std::nullopt;
}

MaybeError parse_tool_choice(const Json& body, ToolRequest& out) {
  if (!has_field(body, "tool_choice")) return std::nullopt;
  const Json& choice = body.at("tool_choice");
  if (choice.is_string()) {
    const std::string& value = choice.get_ref<const std::string&>();
    if (value == "auto") {
      out.choice = ToolChoice::kAuto;
    } else if (value == "none") {
      out.choice = ToolChoice::kNone;
    } else if (value == "required") {
      out.choice = ToolChoice::kRequired;
    } else {
      return ApiError::invalid("tool_choice",
                               fmt::format("'tool_choice' must be \"auto\", \"none\", \"required\" or "
                                           "{{\"type\": \"function\", \"function\": {{\"name\": ...}}}}, got \"{}\"",
                                           value),
                               "unsupported_value");
    }
  } else if (choice.is_object()) {
    if (!has_field(choice, "type") || choice.at("type") != "function") {
      return ApiError::invalid("tool_choice.type", "'tool_choice.type' must be \"function\"", "unsupported_value");
    }
    if (!has_field(choice, "function") || !choice.at("function").is_object() ||
        !has_field(choice.at("function"), "name") || !choice.at("function").at("name").is_string()) {
      return ApiError::invalid("tool_choice.function.name", "'tool_choice.function.name' must be a string",
                               "missing_required_parameter");
    }
    out.choice = ToolChoice::kNamed;
    out.named = choice.at("function").at("name").get<std::string>();
  } else {
    return wrong_type("tool_choice", "a string or an object", choice);
  }
  if ((out.choice == ToolChoice::kRequired || out.choice == ToolChoice::kNamed) && out.tools.empty()) {
    return ApiError::invalid("tool_choice", "'tool_choice' asks for a tool call, but no 'tools' are given");
  }
  if (out.choice == ToolChoice::kNamed) {
    for (const ToolDefinition& t : out.tools) {
      if (t.name == out.named) return std::nullopt;
    }
    return ApiError::invalid("tool_choice.function.name",
                             fmt::format("'tool_choice' names the function '{}', which is not in 'tools'", out.named));
  }
  return std::nullopt;
}

// Python's json.dumps for one string, ensure_ascii=False: the escapes
// nlohmann writes are the same (\", \\, \b, \f, \n, \r, \t, \u00xx).
std::string python_string(const OrderedJson& s) {
  return s.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

void dumps(const OrderedJson& v, std::string& out) {
  if (v.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& [key, value] : v.items()) {
      if (!first) out += ", ";
      first = false;
      out += python_string(OrderedJson(key));
      out += ": ";
      dumps(value, out);
    }
    out += '}';
  } else if (v.is_array()) {
    out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i > 0) out += ", ";
      dumps(v[i], out);
    }
    out += ']';
  } else {
    out += python_string(v);
  }
}

// A rule name's characters, as parse_gbnf reads them.
bool is_rule_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

}  // namespace

MaybeError parse_tool_request(std::string_view body_text, const Json& body, const ApiLimits& limits, ToolRequest& out) {
  OMNIBUS_API_RETURN_IF_ERROR(parse_tools(body_text, body, limits, out));
  OMNIBUS_API_RETURN_IF_ERROR(parse_tool_choice(body, out));
  OMNIBUS_API_RETURN_IF_ERROR(read_bool(body, "parallel_tool_calls", out.parallel));
  return std::nullopt;
}

std::string python_json_dumps(const OrderedJson& value) {
  std::string out;
  dumps(value, out);
  return out;
}

std::string prefix_gbnf_rules(std::string_view gbnf, std::string_view prefix) {
  std::string out;
  out.reserve(gbnf.size() * 2);
  for (size_t i = 0; i < gbnf.size();) {
    const char c = gbnf[i];
    if (c == '"' || c == '[' || c == '{') {  // a literal, a class or a repetition count: copied as is
      const char close = c == '"' ? '"' : c == '[' ? ']' : '}';
      size_t j = i + 1;
      while (j < gbnf.size() && gbnf[j] != close) j += gbnf[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, gbnf.size());
      out.append(gbnf.substr(i, j - i));
      i = j;
    } else if (c == '#') {
      const size_t end = std::min(gbnf.find('\n', i), gbnf.size());
      out.append(gbnf.substr(i, end - i));
      i = end;
    } else if (is_rule_char(c)) {
      size_t j = i;
      while (j < gbnf.size() && is_rule_char(gbnf[j])) ++j;
      out.append(prefix).append(gbnf.substr(i, j - i));
      i = j;
    } else {
      out.push_back(c);
      ++i;
    }
  }
  return out;
}

MaybeError tool_call_grammar(const ToolRequest& tools, const ApiLimits& limits, std::shared_ptr<const Grammar>& out) {
  std::string gbnf = tools.parallel ? "root ::= tool-call (\"\\n\" tool-call)*\n" : "root ::= tool-call\n";
  std::string alternatives;
  std::string rules;
  for (size_t k = 0; k < tools.tools.size(); ++k) {
    const ToolDefinition& t = tools.tools[k];
    if (tools.choice == ToolChoice::kNamed && t.name != tools.named) continue;
    const std::string prefix = fmt::format("t{}-", k);
    if (!alternatives.empty()) alternatives += " | ";
    alternatives += prefix + "call";
    // The name is checked to be plain ([a-zA-Z0-9_-]), so it needs no JSON escape.
    rules += fmt::format("{}call ::= {} {}root {}\n", prefix,
                         gbnf_literal("<tool_call>\n{\"name\": \"" + t.name + "\", \"arguments\": "), prefix,
                         gbnf_literal("}\n</tool_call>"));
    rules += prefix_gbnf_rules(t.arguments_gbnf, prefix);
    rules += '\n';
  }
  gbnf += "tool-call ::= " + alternatives + "\n" + rules;
  if (gbnf.size() > limits.max_grammar_bytes) {
    return ApiError::invalid("tools",
                             fmt::format("the tools make a call grammar of {} bytes; the limit is {}", gbnf.size(),
                                         limits.max_grammar_bytes),
                             "grammar_too_large");
  }
  Result<Grammar> grammar = parse_gbnf(gbnf);
  if (!grammar.is_ok()) {
    return ApiError::invalid("tools", "the tools' call grammar cannot be used: " + grammar.status().message());
  }
  out = std::make_shared<const Grammar>(std::move(grammar).value());
  return std::nullopt;
}

}  // namespace omnibus::server
