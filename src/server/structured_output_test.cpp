// Structured output on the request side: every accepted shape of
// response_format / grammar / json_schema / guided_* becomes one parsed
// grammar that all the choices share; bad ones are 400s naming the field.
#include "server/structured_output.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "grammar/grammar_automaton.h"  // grammar_accepts
#include "server/generation_request.h"
#include "server/http_test_support.h"
#include "server/openai_request.h"

namespace omnibus::server {
namespace {

const ApiLimits kLimits;
const std::string kChat = R"({"messages":[{"role":"user","content":"Hi"}])";
const std::string kCompletion = R"({"prompt":"Hi")";

// `fields` ("\"a\":1,\"b\":2") added to a chat or a completion body.
std::string body_with(bool chat, const std::string& fields) {
  return (chat ? kChat : kCompletion) + (fields.empty() ? "" : "," + fields) + "}";
}

// The grammar a body parses to on the chat or completion endpoint (null:
// none); a failure to parse fails the test.
std::shared_ptr<const Grammar> grammar_of(bool chat, const std::string& fields) {
  const std::string body = body_with(chat, fields);
  if (chat) {
    auto r = parse_chat_request(body, kLimits);
    EXPECT_TRUE(r) << body << ": " << (r ? "" : r.error().message);
    return r ? r->options.grammar : nullptr;
  }
  auto r = parse_completion_request(body, kLimits);
  EXPECT_TRUE(r) << body << ": " << (r ? "" : r.error().message);
  return r ? r->options.grammar : nullptr;
}

std::optional<ApiError> error_of(bool chat, const std::string& fields, const ApiLimits& limits = kLimits) {
  const std::string body = body_with(chat, fields);
  if (chat) {
    auto r = parse_chat_request(body, limits);
    return r ? std::nullopt : std::optional<ApiError>(r.error());
  }
  auto r = parse_completion_request(body, limits);
  return r ? std::nullopt : std::optional<ApiError>(r.error());
}

struct Shape {
  std::string fields;
  std::vector<std::string> accepted;
  std::vector<std::string> refused;
};

TEST(StructuredOutput, EachShapeBecomesAGrammarOnBothEndpoints) {
  const std::string person = R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},)"
                             R"("required":["name","age"]})";
  const std::vector<Shape> shapes = {
      {R"("response_format":{"type":"json_object"})", {R"({"a":[1,true,null]})", "{}"}, {"[]", "1", R"("x")"}},
      {R"("response_format":{"type":"json_schema","json_schema":{"name":"p","strict":true,"description":"d",)"
       R"("schema":)" +
           person + "}}",
       {R"({"name":"Ann","age":3})"},
       {R"({"name":"Ann"})", R"({"age":3,"name":"Ann"})", "{}"}},
      // No schema: any JSON object.
      {R"("response_format":{"type":"json_schema","json_schema":{"name":"p"}})", {R"({"k":1})"}, {"[1]"}},
      // llama-server's spellings.
      {R"("response_format":{"type":"json_object","schema":)" + person + "}", {R"({"name":"A","age":0})"}, {"{}"}},
      {R"("response_format":{"type":"json_schema","schema":)" + person + "}", {R"({"name":"A","age":0})"}, {"{}"}},
      {R"("json_schema":)" + person, {R"({"name":"A","age":1})"}, {R"({"name":"A","age":1.5})"}},
      {R"("grammar":"root ::= \"yes\" | \"no\"")", {"yes", "no"}, {"maybe", "yes "}},
      // vLLM's.
      {R"("guided_json":)" + person, {R"({"name":"A","age":1})"}, {"{}"}},
      {R"("guided_json":)" + Json(person).dump(), {R"({"name":"A","age":1})"}, {"{}"}},
      {R"("guided_grammar":"root ::= [0-9]+")", {"7", "123"}, {"", "a"}},
      {R"("guided_choice":["red","green","say \"hi\"\n"])", {"red", "green", "say \"hi\"\n"}, {"blue", "re"}},
  };
  for (const Shape& shape : shapes) {
    for (bool chat : {false, true}) {
      std::shared_ptr<const Grammar> g = grammar_of(chat, shape.fields);
      ASSERT_NE(g, nullptr) << shape.fields;
      for (const std::string& text : shape.accepted) EXPECT_TRUE(grammar_accepts(*g, text)) << shape.fields << text;
      for (const std::string& text : shape.refused) EXPECT_FALSE(grammar_accepts(*g, text)) << shape.fields << text;
    }
  }
}

// The schema's properties are written in the order the client gave, not
// sorted (the request body is otherwise read as sorted Json).
TEST(StructuredOutput, SchemaPropertiesKeepTheirOrder) {
  const std::string schema = R"({"type":"object","properties":{"zeta":{"type":"integer"},"alpha":{"type":"integer"}},)"
                             R"("required":["zeta","alpha"]})";
  for (const std::string& fields :
       {R"("response_format":{"type":"json_schema","json_schema":{"name":"o","schema":)" + schema + "}}",
        R"("guided_json":)" + schema, R"("guided_json":)" + Json(schema).dump()}) {
    std::shared_ptr<const Grammar> g = grammar_of(true, fields);
    ASSERT_NE(g, nullptr);
    EXPECT_TRUE(grammar_accepts(*g, R"({"zeta":1,"alpha":2})")) << fields;
    EXPECT_FALSE(grammar_accepts(*g, R"({"alpha":2,"zeta":1})")) << fields;
  }
}

TEST(StructuredOutput, NeutralValuesAskForNothing) {
  for (const std::string& fields :
       {std::string(), std::string(R"("response_format":{"type":"text"})"), std::string(R"("response_format":null)"),
        std::string(R"("grammar":"")"), std::string(R"("guided_grammar":"")"), std::string(R"("json_schema":null)"),
        std::string(R"("guided_json":null,"guided_choice":null,"grammar":null)"),
        // A neutral field next to a real one is not a second constraint.
        std::string(R"("response_format":{"type":"text"},"grammar":"")")}) {
    for (bool chat : {false, true}) EXPECT_EQ(grammar_of(chat, fields), nullptr) << fields;
  }
  EXPECT_NE(grammar_of(true, R"("response_format":{"type":"text"},"grammar":"root ::= \"a\"")"), nullptr);
}

TEST(StructuredOutput, ErrorsNameTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("response_format":"json")", "response_format"},
      {R"("response_format":{})", "response_format.type"},
      {R"("response_format":{"type":1})", "response_format.type"},
      {R"("response_format":{"type":"xml"})", "response_format.type"},
      {R"("response_format":{"type":"json_schema"})", "response_format.json_schema"},
      {R"("response_format":{"type":"json_schema","json_schema":"s"})", "response_format.json_schema"},
      {R"("response_format":{"type":"json_schema","json_schema":{"name":1}})", "response_format.json_schema.name"},
      {R"("response_format":{"type":"json_schema","json_schema":{"strict":"true"}})",
       "response_format.json_schema.strict"},
      {R"("response_format":{"type":"json_schema","json_schema":{"description":[]}})",
       "response_format.json_schema.description"},
      {R"("response_format":{"type":"json_schema","json_schema":{"schema":[]}})", "response_format.json_schema.schema"},
      {R"("response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object",)"
       R"("patternProperties":{"a":{}}}}})",
       "response_format.json_schema.schema"},
      {R"("response_format":{"type":"json_schema","json_schema":{"schema":{"$ref":"#/$defs/none"}}})",
       "response_format.json_schema.schema"},
      {R"("response_format":{"type":"json_schema","json_schema":{"schema":{}},"schema":{}})", "response_format.schema"},
      {R"("response_format":{"type":"json_object","schema":"s"})", "response_format.schema"},
      {R"("grammar":1)", "grammar"},
      {R"("grammar":"root ::= value")", "grammar"},
      {R"("grammar":"root ::= (\"a\"")", "grammar"},
      {R"("grammar":"start ::= \"a\"")", "grammar"},
      {R"("json_schema":"{}")", "json_schema"},
      {R"("guided_json":[])", "guided_json"},
      {R"("guided_json":"not json")", "guided_json"},
      {R"("guided_json":"[1]")", "guided_json"},
      {R"("guided_json":"{\"type\":\"object\",\"patternProperties\":{}}")", "guided_json"},
      {R"("guided_grammar":"root ::= [a-")", "guided_grammar"},
      {R"("guided_choice":"a")", "guided_choice"},
      {R"("guided_choice":[])", "guided_choice"},
      {R"("guided_choice":["a",1])", "guided_choice[1]"},
  };
  for (const auto& [fields, param] : cases) {
    for (bool chat : {false, true}) {
      const std::optional<ApiError> e = error_of(chat, fields);
      ASSERT_TRUE(e) << fields;
      EXPECT_EQ(e->http_status, 400) << fields;
      EXPECT_EQ(e->param, param) << fields << ": " << e->message;
      EXPECT_NE(e->message.find(param), std::string::npos) << e->message;
    }
  }
  // The parser's and the converter's own words reach the client.
  EXPECT_NE(error_of(true, R"("grammar":"root ::= value")")->message.find("undefined rule 'value'"), std::string::npos);
  EXPECT_NE(error_of(true, R"("json_schema":{"type":"object","patternProperties":{"a":{}}})")
                ->message.find("patternProperties"),
            std::string::npos);
}

TEST(StructuredOutput, TwoConstraintsAreRefusedNamingBoth) {
  const std::vector<std::string> two = {
      R"("grammar":"root ::= \"a\"","response_format":{"type":"json_object"})",
      R"("json_schema":{},"guided_json":{})",
      R"("guided_choice":["a"],"guided_grammar":"root ::= \"a\"")",
      R"("response_format":{"type":"json_schema","json_schema":{}},"guided_choice":["a"])",
  };
  for (const std::string& fields : two) {
    for (bool chat : {false, true}) {
      const std::optional<ApiError> e = error_of(chat, fields);
      ASSERT_TRUE(e) << fields;
      EXPECT_EQ(e->http_status, 400);
      EXPECT_NE(e->message.find("both constrain the output"), std::string::npos) << e->message;
    }
  }
  const std::optional<ApiError> e = error_of(true, two[0]);
  EXPECT_EQ(e->param, "grammar");
  EXPECT_NE(e->message.find("'response_format'"), std::string::npos) << e->message;
  EXPECT_NE(e->message.find("'grammar'"), std::string::npos) << e->message;
}

// vLLM's other structured-output fields stay refused.
TEST(StructuredOutput, RegexAndStructuredOutputsStayRefused) {
  for (const char* fields : {R"("guided_regex":"a+")", R"("structured_outputs":{"json":{}})"}) {
    const std::optional<ApiError> e = error_of(true, fields);
    ASSERT_TRUE(e) << fields;
    EXPECT_EQ(e->code, "unsupported_parameter") << fields;
  }
}

TEST(StructuredOutput, CompileCostIsBounded) {
  ApiLimits small = kLimits;
  small.max_grammar_bytes = 64;
  const std::string big = R"("grammar":"root ::= \")" + std::string(100, 'a') + R"(\"")";
  std::optional<ApiError> e = error_of(false, big, small);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "grammar");
  EXPECT_EQ(e->code, "grammar_too_large");
  EXPECT_FALSE(error_of(false, big));  // within the default 1 MiB
  e = error_of(true, R"("json_schema":{"type":"object","properties":{"a":{"type":"string"}}})", small);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "json_schema");
  EXPECT_EQ(e->code, "grammar_too_large");

  // Past what the parser would survive or afford (deep nesting recurses;
  // helper rules copy their rule's name), refused before it is parsed.
  const size_t n = 100000;
  e = error_of(true, R"("grammar":"root ::= )" + std::string(n, '(') + R"(\"a\")" + std::string(n, ')') + "\"");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "grammar");
  EXPECT_NE(e->message.find("nests parentheses"), std::string::npos) << e->message;
  const std::string name(100000, 'r');
  e = error_of(true, R"("grammar":"root ::= )" + name + R"(\n)" + name + R"( ::= \"x\"{0,10000}")");
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("too large to compile"), std::string::npos) << e->message;
  std::string chain = R"("grammar":"root ::= r0\n)";
  for (int i = 0; i < 5000; ++i) chain += fmt::format(R"(r{} ::= r{}\n)", i, i + 1);
  e = error_of(true, chain + R"(r5000 ::= \"a\"")");
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("more than 4096 rules"), std::string::npos) << e->message;
  // Parentheses inside literals, classes and comments are text.
  const std::string parens(2000, '(');
  EXPECT_NE(grammar_of(true, R"("grammar":"root ::= \")" + parens + R"(\" [)" + parens + "] # " + parens + R"(\n")"),
            nullptr);
}

// The grammar is parsed once per request: every choice (n, and every
// prompt of a list) gets the same immutable object.
TEST(StructuredOutput, ChoicesShareOneGrammar) {
  auto r = parse_completion_request(R"({"prompt":["a","b"],"n":3,"guided_choice":["x","y"]})", kLimits);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_NE(r->options.grammar, nullptr);
  PreparedGeneration g;
  g.options = r->options;
  g.prompts = {{{1, 2}, ""}, {{3}, ""}};
  const std::vector<EngineRequest> requests = make_engine_requests(g, "cmpl-1");
  ASSERT_EQ(requests.size(), 6u);
  for (const EngineRequest& request : requests) EXPECT_EQ(request.grammar.get(), r->options.grammar.get());

  g.options.grammar = nullptr;
  for (const EngineRequest& request : make_engine_requests(g, "cmpl-2")) EXPECT_EQ(request.grammar, nullptr);
}

TEST(StructuredOutput, OverHttpEveryChoiceIsSubmittedWithTheGrammar) {
  testing::ServerHarness h;
  const Json body = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                     {"max_tokens", 2},
                     {"n", 2},
                     {"response_format", {{"type", "json_object"}}}};
  testing::HttpReply r = h.post("/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const auto submitted = h.service().submitted();
  ASSERT_EQ(submitted.size(), 2u);
  ASSERT_NE(submitted[0].grammar, nullptr);
  EXPECT_EQ(submitted[0].grammar, submitted[1].grammar);

  testing::HttpReply bad = h.post("/v1/completions", Json{{"prompt", "Hi"}, {"grammar", "root ::= nothing"}});
  ASSERT_EQ(bad.status, 400) << bad.body;
  EXPECT_EQ(bad.json()["error"]["param"], "grammar");
  EXPECT_EQ(h.service().submitted().size(), 2u);  // nothing more ran
}

// Random edits of valid bodies never crash or throw (the fuzz target does
// this at scale: tests/fuzz/openai_request_fuzz.cpp).
TEST(StructuredOutput, MangledBodiesGiveAValueOrAnError) {
  const std::vector<std::string> seeds = {
      body_with(true, R"("response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object",)"
                      R"("properties":{"a":{"type":"array","items":{"type":"string","pattern":"^[a-z]{2,4}$"},)"
                      R"("maxItems":3}},"required":["a"]}}})"),
      body_with(false, R"("grammar":"root ::= (\"a\" | [b-d]+)* \"e\"{2,5} # c\nx ::= \"y\"")"),
      body_with(true, R"("guided_choice":["a","b\"c"],"n":2)"),
      body_with(false, R"("guided_json":"{\"type\":\"integer\",\"minimum\":3}")"),
  };
  std::mt19937 rng(1234);
  const std::string alphabet = "{}[]()\":,\\ab01 *+?|#\n-^.";
  for (const std::string& seed : seeds) {
    for (int round = 0; round < 300; ++round) {
      std::string body = seed;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < edits; ++k) {
        const size_t at = rng() % body.size();
        switch (rng() % 3) {
          case 0: body[at] = alphabet[rng() % alphabet.size()]; break;
          case 1: body.erase(at, 1 + rng() % 3); break;
          default: body.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
        }
        if (body.empty()) body.push_back('{');
      }
      (void)parse_chat_request(body, kLimits);
      (void)parse_completion_request(body, kLimits);
    }
  }
}

}  // namespace
}  // namespace omnibus::server
