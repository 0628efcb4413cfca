// Tool calling, the request side (POST /v1/chat/completions): `tools`,
// `tool_choice` and `parallel_tool_calls` parsed and checked, each tool's
// parameters schema converted to GBNF up front (a schema the converter
// refuses is a 400 naming the tool), and the grammar that forces the
// model to call when tool_choice is "required" or names a function.
//
// The call syntax is the ChatML family's (Qwen2.5, Hermes):
//   <tool_call>\n{"name": "<name>", "arguments": <object>}\n</tool_call>
// one or more of them, separated by "\n" (tool_call_splitter.h reads them
// back).
//
// Pure functions; safe from any thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "server/api_error.h"
#include "server/json_fields.h"

namespace omnibus::server {

struct ApiLimits;

// At most this many tools in one request (OpenAI's limit).
inline constexpr size_t kMaxTools = 128;

struct ToolDefinition {
  std::string name;
  // tools[i] as the chat template writes it (json.dumps style, the keys in
  // the order the client wrote them).
  std::string template_json;
  // GBNF (root rule `root`) of what its arguments may be: its `parameters`
  // schema; without one, the empty object.
  std::string arguments_gbnf;
};

enum class ToolChoice { kAuto, kNone, kRequired, kNamed };

struct ToolRequest {
  std::vector<ToolDefinition> tools;
  ToolChoice choice = ToolChoice::kAuto;
  std::string named;     // the function tool_choice names (kNamed)
  bool parallel = true;  // parallel_tool_calls: more than one call at a time
  // Tools are offered to the model and calls are read from its answer.
  bool active() const { return !tools.empty() && choice != ToolChoice::kNone; }
  // The answer must be calls (and nothing else).
  bool forced() const { return active() && (choice == ToolChoice::kRequired || choice == ToolChoice::kNamed); }
};

// `body` parsed from `body_text` (read again with its keys in order, for
// the template and the schemas). Every problem is a 400 naming the field:
// a tool that is not {"type": "function", "function": {"name", ...}}, a
// name outside ^[a-zA-Z0-9_-]{1,64}$ or given twice, a schema the
// converter refuses, more than kMaxTools tools, a tool_choice that names
// an unknown function or forces a call with no tools.
MaybeError parse_tool_request(std::string_view body_text, const Json& body, const ApiLimits& limits, ToolRequest& out);

// The grammar of a forced answer: one call (parallel false) or one or more,
// each to the named function or any tool. Refused above
// limits.max_grammar_bytes.
MaybeError tool_call_grammar(const ToolRequest& tools, const ApiLimits& limits, std::shared_ptr<const Grammar>& out);

// JSON text as Python's json.dumps(value, ensure_ascii=False) writes it
// (", " and ": " separators), which is what Jinja's tojson gives a chat
// template.
std::string python_json_dumps(const OrderedJson& value);

// Prefixes every rule name of a GBNF text with `prefix` (literals, character
// classes, comments and repetition counts left alone), so that several
// grammars can live in one.
std::string prefix_gbnf_rules(std::string_view gbnf, std::string_view prefix);

}  // namespace omnibus::server
