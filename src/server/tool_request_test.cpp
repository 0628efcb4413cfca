#include "server/tool_request.h"

#include <gtest/gtest.h>

#include <string>

#include "grammar/grammar_automaton.h"  // grammar_accepts
#include "server/openai_request.h"

namespace omnibus::server {
namespace {

const ApiLimits kLimits;

const std::string kWeather =
    R"({"type":"function","function":{"name":"get_weather","description":"Weather in a city","parameters":)"
    R"({"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}}})";
const std::string kNow = R"({"type":"function","function":{"name":"now"}})";

std::string chat_body(const std::string& fields) {
  return R"({"messages":[{"role":"user","content":"Hi"}])" + (fields.empty() ? "" : "," + fields) + "}";
}

// "<ok>" or the param of the 400.
std::string error_param(const std::string& fields) {
  ApiResult<ChatRequest> r = parse_chat_request(chat_body(fields), kLimits);
  return r ? "<ok>" : r.error().param;
}

TEST(ToolRequestTest, ParsesToolsChoiceAndParallel) {
  ApiResult<ChatRequest> r = parse_chat_request(
      chat_body(R"("tools":[)" + kWeather + "," + kNow + R"(],"parallel_tool_calls":false)"), kLimits);
  ASSERT_TRUE(r) << r.error().message;
  const ToolRequest& t = r.value().tools;
  ASSERT_EQ(t.tools.size(), 2u);
  EXPECT_EQ(t.choice, ToolChoice::kAuto);
  EXPECT_FALSE(t.parallel);
  EXPECT_TRUE(t.active());
  EXPECT_FALSE(t.forced());
  EXPECT_FALSE(r.value().options.grammar);  // "auto": unconstrained
  // As the chat template writes it: json.dumps style, keys in the order sent.
  EXPECT_EQ(t.tools[0].template_json,
            R"({"type": "function", "function": {"name": "get_weather", "description": "Weather in a city", )"
            R"("parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": )"
            R"("integer"}}, "required": ["city"]}}})");
  EXPECT_EQ(t.tools[1].name, "now");
}

TEST(ToolRequestTest, BadToolsAre400sNamingTheField) {
  EXPECT_EQ(error_param(R"("tools":{})"), "tools");
  EXPECT_EQ(error_param(R"("tools":[{"type":"retrieval"}])"), "tools[0].type");
  EXPECT_EQ(error_param(R"("tools":[{"type":"function"}])"), "tools[0].function");
  EXPECT_EQ(error_param(R"("tools":[{"type":"function","function":{"name":"a b"}}])"), "tools[0].function.name");
  EXPECT_EQ(error_param(R"("tools":[{"type":"function","function":{"description":"x"}}])"), "tools[0].function.name");
  EXPECT_EQ(error_param(R"("tools":[)" + kNow + "," + kNow + "]"), "tools[1].function.name");
  EXPECT_EQ(error_param(R"("tools":[{"type":"function","function":{"name":"f","parameters":[]}}])"),
            "tools[0].function.parameters");
  // A schema the converter refuses names the tool.
  ApiResult<ChatRequest> bad = parse_chat_request(
      chat_body(R"("tools":[{"type":"function","function":{"name":"f","parameters":{"not":{}}}}])"), kLimits);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().param, "tools[0].function.parameters");
  EXPECT_NE(bad.error().message.find("tool 'f'"), std::string::npos) << bad.error().message;
  // Arguments are an object: another type is refused (a probe got a forced
  // call of "arguments": "Paris" that could not be read back).
  for (const char* schema : {R"({"type":"string"})", R"({"type":"integer"})", R"({"type":["object","null"]})"}) {
    ApiResult<ChatRequest> scalar = parse_chat_request(
        chat_body(std::string(R"("tools":[{"type":"function","function":{"name":"f","parameters":)") + schema + "}}]"),
        kLimits);
    ASSERT_FALSE(scalar) << schema;
    EXPECT_NE(scalar.error().message.find("must describe an object"), std::string::npos) << scalar.error().message;
  }
  std::string many = R"("tools":[)";
  for (size_t i = 0; i <= kMaxTools; ++i)
    many += (i ? "," : "") + std::string(R"({"type":"function","function":{"name":"f)") + std::to_string(i) + R"("}})";
  EXPECT_EQ(error_param(many + "]"), "tools");
}

TEST(ToolRequestTest, BadToolChoiceIs400NamingTheField) {
  const std::string tools = R"("tools":[)" + kWeather + "],";
  EXPECT_EQ(error_param(tools + R"("tool_choice":"always")"), "tool_choice");
  EXPECT_EQ(error_param(tools + R"("tool_choice":3)"), "tool_choice");
  EXPECT_EQ(error_param(tools + R"("tool_choice":{"type":"function","function":{"name":"nope"}})"),
            "tool_choice.function.name");
  EXPECT_EQ(error_param(tools + R"("tool_choice":{"type":"function"})"), "tool_choice.function.name");
  EXPECT_EQ(error_param(R"("tool_choice":"required")"), "tool_choice");
  EXPECT_EQ(error_param(tools + R"("tool_choice":"required","response_format":{"type":"json_object"})"), "tool_choice");
  EXPECT_EQ(error_param(tools + R"("parallel_tool_calls":"yes")"), "parallel_tool_calls");
  EXPECT_EQ(error_param(R"("tool_choice":"auto")"), "<ok>");
  EXPECT_EQ(error_param(R"("tool_choice":"none","tools":[])"), "<ok>");
}

TEST(ToolRequestTest, ForcedChoiceBuildsTheCallGrammar) {
  const std::string tools = R"("tools":[)" + kWeather + "," + kNow + "],";
  const std::string weather =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Oslo\"}}\n</tool_call>";
  const std::string now = "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>";
  ApiResult<ChatRequest> required = parse_chat_request(chat_body(tools + R"("tool_choice":"required")"), kLimits);
  ASSERT_TRUE(required) << required.error().message;
  const Grammar& g = *required.value().options.grammar;
  EXPECT_TRUE(grammar_accepts(g, weather));
  EXPECT_TRUE(grammar_accepts(g, now));
  EXPECT_TRUE(grammar_accepts(g, weather + "\n" + now));
  EXPECT_FALSE(grammar_accepts(g, ""));
  EXPECT_FALSE(grammar_accepts(g, "Sure! " + now));
  EXPECT_FALSE(grammar_accepts(g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(grammar_accepts(g, "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>"));

  ApiResult<ChatRequest> one = parse_chat_request(
      chat_body(tools + R"("tool_choice":{"type":"function","function":{"name":"now"}},"parallel_tool_calls":false)"),
      kLimits);
  ASSERT_TRUE(one) << one.error().message;
  EXPECT_TRUE(grammar_accepts(*one.value().options.grammar, now));
  EXPECT_FALSE(grammar_accepts(*one.value().options.grammar, weather));
  EXPECT_FALSE(grammar_accepts(*one.value().options.grammar, now + "\n" + now));
}

TEST(ToolRequestTest, HistoryToolCallsAreRenderedAsTheTemplateWrites) {
  ApiResult<ChatRequest> r = parse_chat_request(
      R"({"messages":[{"role":"user","content":"Weather?"},{"role":"assistant","content":null,"tool_calls":[)"
      R"({"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"days\":2}"}}]},)"
      R"({"role":"tool","tool_call_id":"c1","content":"sunny"}]})",
      kLimits);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r.value().messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(r.value().messages[1].tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.value().messages[1].tool_calls[0].arguments_json, R"({"city": "Paris", "days": 2})");
  EXPECT_EQ(r.value().messages[2].tool_call_id, "c1");
  auto param = [](const std::string& call) {
    ApiResult<ChatRequest> bad = parse_chat_request(
        R"({"messages":[{"role":"assistant","content":null,"tool_calls":[)" + call + "]}]}", kLimits);
    return bad ? std::string("<ok>") : bad.error().param;
  };
  EXPECT_EQ(param(R"({"type":"function","function":{"name":"f","arguments":"not json"}})"),
            "messages[0].tool_calls[0].function.arguments");
  EXPECT_EQ(param(R"({"type":"function","function":{"name":"f","arguments":7}})"),
            "messages[0].tool_calls[0].function.arguments");
  EXPECT_EQ(param(R"({"type":"function","function":{"arguments":"{}"}})"), "messages[0].tool_calls[0].function.name");
  EXPECT_EQ(param(R"({"type":"function","function":{"name":"f","arguments":{"a":1}}})"), "<ok>");
}

TEST(ToolRequestTest, PrefixesGbnfRuleNamesOnly) {
  EXPECT_EQ(prefix_gbnf_rules("root ::= item (\",\" item){0,3} [a-z]* # root comment\nitem ::= \"root\"", "t0-"),
            "t0-root ::= t0-item (\",\" t0-item){0,3} [a-z]* # root comment\nt0-item ::= \"root\"");
}

TEST(ToolRequestTest, PythonJsonDumps) {
  EXPECT_EQ(python_json_dumps(OrderedJson::parse(R"({"b":[1,2.5,null,true],"a":"é\n\"x\""})")),
            "{\"b\": [1, 2.5, null, true], \"a\": \"é\\n\\\"x\\\"\"}");
}

}  // namespace
}  // namespace omnibus::server
