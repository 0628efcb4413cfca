#include "grammar/json_schema_grammar.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/grammar_automaton.h"

namespace omnibus {
namespace {

using Json = nlohmann::ordered_json;

std::string gbnf_for(const std::string& schema) {
  Result<std::string> text = json_schema_to_gbnf(Json::parse(schema));
  EXPECT_TRUE(text.is_ok()) << schema << ": " << text.status().to_string();
  return text.is_ok() ? *text : "";
}

// Converts and parses; a failure fails the test and gives an empty grammar.
Grammar grammar_for(const std::string& schema) {
  const std::string text = gbnf_for(schema);
  Result<Grammar> g = parse_gbnf(text);
  EXPECT_TRUE(g.is_ok()) << schema << "\n" << text << g.status().to_string();
  return g.is_ok() ? std::move(g).value() : parse_gbnf("root ::= \"\\x01\"\n").value();
}

std::string refusal(const std::string& schema) {
  Result<std::string> text = json_schema_to_gbnf(Json::parse(schema));
  EXPECT_FALSE(text.is_ok()) << schema << " gave\n" << (text.is_ok() ? *text : "");
  if (text.is_ok()) return "";
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  return text.status().message();
}

TEST(JsonSchemaGrammarTest, ExactTextForTinySchemas) {
  EXPECT_EQ(gbnf_for(R"({"const": "a\"b"})"), R"(root ::= "\"a\\\"b\""
)");
  EXPECT_EQ(gbnf_for(R"({"type": "integer", "minimum": 0})"), R"(root ::= [0-9] | [1-9] [0-9]+
)");
  EXPECT_EQ(gbnf_for(R"({"type": "string", "maxLength": 3})"), R"(root ::= "\"" char{0,3} "\""
char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" ([0-9a-cA-Ce-fE-F] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} | [dD] [89abAB] [0-9a-fA-F]{2} "\\u" [dD] [c-fC-F] [0-9a-fA-F]{2}))
)");
  EXPECT_EQ(gbnf_for(R"({"type": "object", "properties": {"b": {"type": "null"}, "a": {"type": "boolean"}},
                         "required": ["a"], "additionalProperties": false})"),
            R"(root ::= "{" ws (root-b-kv ws "," ws root-a-kv ws | root-a-kv ws) "}"
ws ::= | " " | "\n" [ \t]{0,20}
null ::= "null"
root-b-kv ::= "\"b\"" ws ":" ws null
boolean ::= "true" | "false"
root-a-kv ::= "\"a\"" ws ":" ws boolean
)");
}

struct Case {
  std::string schema;
  std::vector<std::string> accepted;
  std::vector<std::string> rejected;
};

void check(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    const Grammar g = grammar_for(c.schema);
    for (const std::string& text : c.accepted)
      EXPECT_TRUE(grammar_accepts(g, text)) << c.schema << "\nmust accept " << text;
    for (const std::string& text : c.rejected)
      EXPECT_FALSE(grammar_accepts(g, text)) << c.schema << "\nmust reject " << text;
  }
}

TEST(JsonSchemaGrammarTest, Primitives) {
  check({
      {R"({"type": "string"})",
       {R"("")", R"("abc")", R"("é中😀")", R"("\"\\\/\b\f\n\r\t")", R"("\u00e9\uD83D\uDE00")"},
       {"abc", R"("a)", "\"a\nb\"", "\"\x01\"", R"("\x")", R"("\u12")", R"("\uD83D")", R"("\uDE00\uD83D")", "'a'"}},
      {R"({"type": "integer"})",
       {"0", "-0", "7", "-123", "12345678901234567890"},
       {"01", "-", "+1", "1.0", "1e3", "1.", " 1", "1 ", "--1", ""}},
      {R"({"type": "number"})",
       {"0", "-0.5", "3.25", "1e10", "1E-3", "2.5e+7", "-0e0"},
       {"01", "1.", ".5", "1e", "1e+", "- 1", "0x1F", "NaN", "Infinity", "1.5.2"}},
      {R"({"type": "boolean"})", {"true", "false"}, {"True", "1", "null", "tru"}},
      {R"({"type": "null"})", {"null"}, {"", "nul", "None"}},
      {R"({"type": ["integer", "null"]})", {"5", "null"}, {"5.5", "\"5\""}},
      {R"({"type": ["number", "integer"]})", {"5", "5.5"}, {"\"5\""}},
  });
}

TEST(JsonSchemaGrammarTest, AnyValueAndJsonObject) {
  const std::vector<std::string> values = {
      "{}",    "[]",  R"({"a": [1, {"b": null}], "c": "d"})", "[1, 2.5, \"x\", true, false, null, []]", "0",
      "\"s\"", "null"};
  for (const char* schema : {"{}", "true"}) {
    const Grammar g = grammar_for(schema);
    for (const std::string& v : values) EXPECT_TRUE(grammar_accepts(g, v)) << schema << " " << v;
    EXPECT_FALSE(grammar_accepts(g, "{,}"));
    EXPECT_FALSE(grammar_accepts(g, "[1,]"));
    EXPECT_FALSE(grammar_accepts(g, "{\"a\" 1}"));
  }
  const Grammar object = parse_gbnf(json_object_gbnf()).value();
  EXPECT_TRUE(grammar_accepts(object, R"({"a": [1, {"b": null}], "c": "d"})"));
  EXPECT_TRUE(grammar_accepts(object, "{\n  \"a\": 1\n}"));
  EXPECT_TRUE(grammar_accepts(object, "{}"));
  EXPECT_FALSE(grammar_accepts(object, "[]"));
  EXPECT_FALSE(grammar_accepts(object, "\"{}\""));
  EXPECT_FALSE(grammar_accepts(object, " {}"));
}

TEST(JsonSchemaGrammarTest, WhitespaceIsBounded) {
  const Grammar g = grammar_for(R"({"type": "object", "properties": {"a": {"type": "array"}}})");
  EXPECT_TRUE(grammar_accepts(g, R"({"a":[1,2]})"));
  EXPECT_TRUE(grammar_accepts(g, R"({ "a" : [ 1 , 2 ] })"));
  EXPECT_TRUE(grammar_accepts(g, "{\n    \"a\": [\n\t\t1,\n        2\n    ]\n}"));
  EXPECT_FALSE(grammar_accepts(g, "{  \"a\":[]}"));                              // two spaces
  EXPECT_FALSE(grammar_accepts(g, "{\n\n\"a\":[]}"));                            // two newlines
  EXPECT_FALSE(grammar_accepts(g, "{\n" + std::string(21, ' ') + "\"a\":[]}"));  // indent past 20
  EXPECT_FALSE(grammar_accepts(g, "{" + std::string(30, ' ') + "\"a\":[]}"));
  EXPECT_FALSE(grammar_accepts(g, "{\"a\":[]}\n"));  // nothing after the root
}

TEST(JsonSchemaGrammarTest, Objects) {
  const std::string person = R"({"type": "object", "properties": {
      "name": {"type": "string", "minLength": 1, "maxLength": 5},
      "age": {"type": "integer", "minimum": 0},
      "email": {"type": "string", "format": "email"}},
    "required": ["name", "age"], "additionalProperties": false})";
  check({
      {person,
       {R"({"name":"Bo","age":3})", R"({"name": "Alice", "age": 0, "email": "a@b.org"})"},
       {R"({"age":3,"name":"Bo"})",                 // schema order only
        R"({"name":"Bo"})",                         // missing required
        R"({"name":"Bo","age":3,"x":1})",           // extra property
        R"({"name":"Bo","age":-1})",                // below minimum
        R"({"name":"","age":1})",                   // too short
        R"({"name":"Bobbyy","age":1})",             // too long
        R"({"name":"Bo","age":"3"})",               // wrong type
        R"({"name":"Bo","age":3,"email":"nope"})",  // bad format
        R"({"name":"Bo","age":3,})",                // trailing comma
        R"({"name":"Bo","age":3,"age":4})"}},       // duplicate
      // All optional: any subset, in order, commas only between.
      {R"({"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}}})",
       {"{}", R"({"a":1})", R"({"b":1})", R"({"c":1})", R"({"a":1,"c":3})", R"({"a":1,"b":2,"c":3})"},
       {R"({,"a":1})", R"({"a":1,})", R"({"b":1,"a":1})", R"({"d":1})"}},
      // Extra properties: after the listed ones, with keys that are not listed ones.
      {R"({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"],
           "additionalProperties": {"type": "string"}})",
       {R"({"id":1})", R"({"id":1,"x":"y","i":"","idx":"z","":"e"})"},
       {R"({"id":1,"x":2})", R"({"x":"y","id":1})", R"({"id":1,"id":"2"})", R"({"id":1,"\u0069d":"2"})"}},
      {R"({"type": "object", "additionalProperties": true})", {"{}", R"({"a":[{}]})"}, {"[]"}},
      {R"({"type": "object", "additionalProperties": false})", {"{}"}, {R"({"a":1})"}},
      // Required but not listed: allowed by additionalProperties, so it is listed with that schema.
      {R"({"type": "object", "required": ["k"], "additionalProperties": {"type": "integer"}})",
       {R"({"k":1})", R"({"k":1,"j":2})"},
       {"{}", R"({"k":"1"})", R"({"j":2})"}},
      {R"({"type": "object", "properties": {"a": false, "b": {"const": 1}}})", {R"({"b":1})", "{}"}, {R"({"a":1})"}},
      {R"({"type": "object", "properties": {"we\"ird/key": {"type": "null"}}, "required": ["we\"ird/key"]})",
       {R"({"we\"ird/key":null})"},
       {R"({"we\u0022ird/key":null})"}},
  });
}

TEST(JsonSchemaGrammarTest, Arrays) {
  check({
      {R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3})",
       {"[1,2]", "[1, 2, 3]"},
       {"[]", "[1]", "[1,2,3,4]", "[1,\"2\"]", "[1,,2]", "[1,2,]"}},
      {R"({"type": "array", "items": {"type": "string"}})",
       {"[]", "[\"a\"]", "[\"a\",\"b\",\"c\",\"d\"]"},
       {"[1]", "{}"}},
      {R"({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]})",
       {"[1,\"a\"]"},
       {"[1]", "[1,\"a\",2]", "[\"a\",1]"}},
      {R"({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 0,
           "items": {"type": "null"}, "maxItems": 4})",
       {"[]", "[1]", "[1,\"a\"]", "[1,\"a\",null,null]"},
       {"[\"a\"]", "[1,\"a\",null,null,null]", "[1,null]"}},
      {R"({"type": "array", "items": [{"const": 1}], "additionalItems": {"const": 2}})",  // draft-07 tuple
       {"[1]", "[1,2,2]"},
       {"[2]", "[1,1]"}},
      {R"({"type": "array", "maxItems": 0})", {"[]"}, {"[1]"}},
      {R"({"type": "array", "items": {"type": "integer"}, "uniqueItems": false})", {"[1,1]"}, {}},
  });
}

TEST(JsonSchemaGrammarTest, EnumConstAndCombinators) {
  check({
      {R"({"enum": ["red", "green", 3, null, [1, {"a": true}]]})",
       {R"("red")", R"("green")", "3", "null", R"([1,{"a":true}])"},
       {R"("blue")", R"("Red")", "3.0", R"([1, {"a": true}])"}},
      {R"({"type": "string", "enum": ["a", 1, "b"]})", {R"("a")", R"("b")"}, {"1"}},
      {R"({"const": {"k": [1, 2]}})", {R"({"k":[1,2]})"}, {R"({"k":[2,1]})"}},
      {R"({"anyOf": [{"type": "integer", "maximum": 5}, {"type": "string", "maxLength": 1}]})",
       {"5", "-3", R"("a")"},
       {"6", R"("ab")", "null"}},
      {R"({"oneOf": [{"type": "boolean"}, {"type": "null"}]})", {"true", "null"}, {"0"}},
      // Sibling keywords apply to every alternative.
      {R"({"type": "object", "properties": {"kind": {"type": "string"}}, "required": ["kind"],
           "anyOf": [{"properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["x"]},
                     {"properties": {"kind": {"const": "b"}}}]})",
       {R"({"kind":"a","x":1})", R"({"kind":"b"})"},
       {R"({"kind":"a"})", R"({"kind":"c"})", R"({"kind":"b","x":1})"}},
      {R"({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                     {"properties": {"b": {"type": "string"}, "a": {"minimum": 10}}, "required": ["b"]}]})",
       {R"({"a":10,"b":""})"},
       {R"({"a":9,"b":""})", R"({"a":10})", R"({"b":""})"}},
      // additionalProperties false in one part rules out the other part's properties.
      {R"({"allOf": [{"properties": {"a": {"type": "integer"}}, "additionalProperties": false},
                     {"properties": {"b": {"type": "integer"}}}]})",
       {R"({"a":1})", "{}"},
       {R"({"a":1,"b":2})"}},
      {R"({"allOf": [{"type": ["integer", "string"]}, {"type": ["number", "null"]}, {"minimum": 2}]})",
       {"2", "100"},
       {"1", "2.5", "null", "\"a\""}},
      {R"({"$ref": "#/definitions/x", "definitions": {"x": {"type": "integer", "maximum": 3}}, "minimum": 1})",
       {"1", "3"},
       {"0", "4"}},
  });
}

TEST(JsonSchemaGrammarTest, RefsAndRecursion) {
  check({
      {R"({"$defs": {"tree": {"type": "object", "properties": {"value": {"type": "integer"},
             "children": {"type": "array", "items": {"$ref": "#/$defs/tree"}}},
             "required": ["value", "children"], "additionalProperties": false}},
           "$ref": "#/$defs/tree"})",
       {R"({"value":1,"children":[]})",
        R"({"value":1,"children":[{"value":2,"children":[{"value":3,"children":[]}]}]})"},
       {R"({"value":1,"children":[{"value":2}]})", R"({"value":1})"}},
      {R"({"type": "object", "properties": {"next": {"$ref": "#"}, "v": {"type": "boolean"}}, "required": ["v"]})",
       {R"({"v":true})", R"({"next":{"next":{"v":false},"v":true},"v":true})"},
       {R"({"next":{},"v":true})"}},
      {R"({"type": "array", "items": {"$ref": "#/$defs/a~1b"}, "$defs": {"a/b": {"type": "null"}}})",
       {"[null]"},
       {"[1]"}},
  });
}

TEST(JsonSchemaGrammarTest, StringConstraints) {
  check({
      {R"({"type": "string", "minLength": 2, "maxLength": 3})",
       {R"("ab")", R"("abc")", R"("\n\u00e9")", R"("\uD83D\uDE00é")"},
       {R"("a")", R"("abcd")", R"("\uD83D\uDE00")"}},
      {R"({"type": "string", "pattern": "^[a-z]+-\\d{2}$"})",
       {R"("ab-12")"},
       {R"("ab-1")", R"("Ab-12")", R"("xab-12 ")"}},
      {R"({"type": "string", "pattern": "^\\d{3}$", "minLength": 3, "maxLength": 3})", {R"("123")"}, {R"("12")"}},
      {R"({"type": "string", "pattern": "^[a-z][a-z0-9-]*$", "minLength": 2, "maxLength": 4})",
       {R"("ab")", R"("a-9z")"},
       {R"("a")", R"("abcde")", R"("9ab")"}},
      {R"({"type": "string", "pattern": "o"})", {R"("foo")", R"("o")"}, {R"("a")"}},
      {R"({"type": "string", "format": "date"})",
       {R"("2024-01-31")", R"("2023-02-29")", R"("1999-12-01")"},
       {R"("2024-04-31")", R"("2024-13-01")", R"("2024-1-01")", R"("2024-02-30")", R"("24-01-01")"}},
      {R"({"type": "string", "format": "time"})",
       {R"("23:59:59Z")", R"("00:00:00.123+05:30")"},
       {R"("24:00:00Z")", R"("12:00:00")", R"("12:60:00Z")"}},
      {R"({"type": "string", "format": "date-time"})",
       {R"("2024-05-06T07:08:09Z")", R"("2024-05-06t07:08:09.5-01:00")"},
       {R"("2024-05-06 07:08:09Z")"}},
      {R"({"type": "string", "format": "uuid"})",
       {R"("123e4567-e89b-12d3-a456-426614174000")"},
       {R"("123e4567e89b12d3a456426614174000")", R"("123e4567-e89b-12d3-a456-42661417400g")"}},
      {R"({"type": "string", "format": "email"})",
       {R"("a.b+c@example.com")", R"("x@localhost")"},
       {R"("a..b@example.com")", R"("@example.com")", R"("a@-example.com")", R"("a@b@c")"}},
      {R"({"type": "string", "format": "ipv4"})", {R"("192.168.0.255")"}, {R"("256.1.1.1")", R"("01.1.1.1")"}},
      {R"({"type": "string", "format": "uri"})",
       {R"("https://example.com/a/b?x=1&y=%20#top")", R"("mailto:a@b.c")", R"("urn:isbn:0451450523")",
        R"("http://u:p@h:8080/")", R"("file:///etc/hosts")", R"("x:")"},
       {R"("example.com/a")", R"("http://a b/")", R"("1http://x")", R"("http://h:8a/")", R"("http://h/%zz")",
        R"("/relative")"}},
      {R"({"type": "string", "format": "uri-reference"})",
       {R"("../a/b?q")", R"("#frag")", R"("")", R"("//host/p")", R"("a:b")", R"("a/b:c")"},
       {R"("a b")", R"("%g0")", R"("http://h:x/")"}},
  });
}

// Every integer in a window around the bounds, accepted exactly when inside.
TEST(JsonSchemaGrammarTest, IntegerRangesAreExact) {
  struct Range {
    std::string bounds;
    int64_t lo;
    int64_t hi;
  };
  const std::vector<Range> ranges = {
      {R"("minimum": 0, "maximum": 0)", 0, 0},
      {R"("minimum": 7, "maximum": 1234)", 7, 1234},
      {R"("minimum": -250, "maximum": -13)", -250, -13},
      {R"("minimum": -1005, "maximum": 99)", -1005, 99},
      {R"("minimum": 100, "maximum": 1000)", 100, 1000},
      {R"("minimum": 19, "maximum": 91)", 19, 91},
      {R"("exclusiveMinimum": -3, "exclusiveMaximum": 10)", -2, 9},
      {R"("minimum": 1.5, "maximum": 30.5)", 2, 30},
      {R"("minimum": 999)", 999, 3000},
      {R"("maximum": -998)", -3000, -998},
      {R"("minimum": 1)", 1, 3000},
  };
  for (const Range& r : ranges) {
    const Grammar g = grammar_for(R"({"type": "integer", )" + r.bounds + "}");
    const bool open_above = r.bounds.find("aximum") == std::string::npos;
    const bool open_below = r.bounds.find("inimum") == std::string::npos;
    for (int64_t v = r.lo - 1100; v <= r.hi + 1100; ++v) {
      const bool inside = (v >= r.lo || open_below) && (v <= r.hi || open_above);
      ASSERT_EQ(grammar_accepts(g, std::to_string(v)), inside) << r.bounds << " at " << v;
    }
    EXPECT_FALSE(grammar_accepts(g, "-0"));
    EXPECT_FALSE(grammar_accepts(g, "007"));
    if (open_above) {
      EXPECT_TRUE(grammar_accepts(g, "123456789012345678901234567890"));
    }
    if (open_below) {
      EXPECT_TRUE(grammar_accepts(g, "-123456789012345678901234567890"));
    }
  }
  const Grammar extremes = grammar_for(R"({"type": "integer", "minimum": -9223372036854775808,
                                            "maximum": 9223372036854775807})");
  EXPECT_TRUE(grammar_accepts(extremes, "-9223372036854775808"));
  EXPECT_TRUE(grammar_accepts(extremes, "9223372036854775807"));
  EXPECT_FALSE(grammar_accepts(extremes, "-9223372036854775809"));
  EXPECT_FALSE(grammar_accepts(extremes, "9223372036854775808"));
  const Grammar non_negative = grammar_for(R"({"type": "number", "minimum": 0})");
  for (const std::string v : {"0", "0.5", "12e-3", "7"}) EXPECT_TRUE(grammar_accepts(non_negative, v)) << v;
  for (const std::string v : {"-1", "-0.5", "01"}) EXPECT_FALSE(grammar_accepts(non_negative, v)) << v;
}

// Rule names come from keys and $defs; they must not collide with each
// other, with the primitives, or with the parser's helper rules (name-N).
TEST(JsonSchemaGrammarTest, RuleNamesNeverCollide) {
  check({{R"({"type": "object", "properties": {
              "1": {"type": "array", "items": {"type": "integer"}},
              "root": {"$ref": "#/$defs/string"},
              "a_b": {"$ref": "#/$defs/ws"}, "a-b": {"type": "string", "maxLength": 2},
              "é": {"type": "array", "prefixItems": [{"type": "null"}, {"type": "boolean"}]}},
            "required": ["1", "root", "a_b", "a-b", "é"],
            "$defs": {"string": {"type": "integer"}, "ws": {"enum": ["x"]}}})",
          {R"({"1":[1,2],"root":5,"a_b":"x","a-b":"ab","é":[null,true]})"},
          {R"({"1":[1,2],"root":"5","a_b":"x","a-b":"ab","é":[null,true]})"}}});
  const std::string long_key(300, 'k');
  check(
      {{R"({"type": "object", "properties": {")" + long_key + R"(": {"type": "null"}}, "additionalProperties": true})",
        {"{\"" + long_key + "\":null}", "{\"" + long_key + "x\":1}", "{\"" + long_key.substr(1) + "\":1}"},
        {"{\"" + long_key + "\":1}"}}});
}

TEST(JsonSchemaGrammarTest, PropertyOrderFollowsTheSchema) {
  const std::string schema =
      R"({"type": "object", "properties": {"zeta": {"type": "integer"}, "alpha": {"type": "integer"}},
                                 "required": ["zeta", "alpha"]})";
  const Grammar ordered = parse_gbnf(json_schema_to_gbnf(Json::parse(schema)).value()).value();
  EXPECT_TRUE(grammar_accepts(ordered, R"({"zeta":1,"alpha":2})"));
  EXPECT_FALSE(grammar_accepts(ordered, R"({"alpha":2,"zeta":1})"));
  // nlohmann::json keeps keys sorted, so that order is all it can give.
  const Grammar sorted = parse_gbnf(json_schema_to_gbnf(nlohmann::json::parse(schema)).value()).value();
  EXPECT_TRUE(grammar_accepts(sorted, R"({"alpha":2,"zeta":1})"));
}

// Many optional properties: the grammar grows linearly (a hostile probe
// made 270 MB of GBNF from a 134 KB schema of 4,500 optional properties),
// and still takes any of them in order, with commas only between.
TEST(JsonSchemaGrammarTest, ManyOptionalPropertiesStayLinear) {
  nlohmann::ordered_json properties = nlohmann::ordered_json::object();
  for (int i = 0; i < 4500; ++i) properties[std::string("p").append(std::to_string(i))] = {{"type", "integer"}};
  const nlohmann::ordered_json schema = {{"type", "object"}, {"properties", properties}};
  Result<std::string> text = json_schema_to_gbnf(schema);
  ASSERT_TRUE(text.is_ok()) << text.status().to_string();
  EXPECT_LT(text->size(), size_t{4} << 20);
  const Grammar g = parse_gbnf(*text).value();
  EXPECT_TRUE(grammar_accepts(g, "{}"));
  EXPECT_TRUE(grammar_accepts(g, R"({"p7":1,"p300":2,"p4499":3})"));
  EXPECT_TRUE(grammar_accepts(g, R"({"p4499":3})"));
  EXPECT_FALSE(grammar_accepts(g, R"({"p300":2,"p7":1})"));
  EXPECT_FALSE(grammar_accepts(g, R"({"p7":1,})"));
  EXPECT_FALSE(grammar_accepts(g, R"({,"p7":1})"));
}

TEST(JsonSchemaGrammarTest, OpenAiStrictModeSchema) {
  const Grammar g = grammar_for(R"({
    "type": "object",
    "properties": {
      "steps": {"type": "array", "items": {"$ref": "#/$defs/step"}},
      "final_answer": {"type": "string"},
      "confidence": {"type": ["number", "null"]},
      "mood": {"anyOf": [{"type": "string", "enum": ["happy", "sad"]}, {"type": "null"}]}
    },
    "required": ["steps", "final_answer", "confidence", "mood"],
    "additionalProperties": false,
    "$defs": {"step": {"type": "object", "properties": {"explanation": {"type": "string"}, "output": {"type": "string"}},
                       "required": ["explanation", "output"], "additionalProperties": false}}
  })");
  EXPECT_TRUE(grammar_accepts(
      g, R"({"steps":[{"explanation":"e","output":"o"}],"final_answer":"x","confidence":0.9,"mood":null})"));
  EXPECT_TRUE(grammar_accepts(
      g, "{\n  \"steps\": [],\n  \"final_answer\": \"\",\n  \"confidence\": null,\n  \"mood\": \"sad\"\n}"));
  EXPECT_FALSE(
      grammar_accepts(g, R"({"steps":[{"explanation":"e"}],"final_answer":"x","confidence":0.9,"mood":null})"));
  EXPECT_FALSE(grammar_accepts(g, R"({"steps":[],"final_answer":"x","confidence":0.9,"mood":"angry"})"));
}

// Writes random JSON texts valid under a schema, for the subset of keywords
// the tests below use, with random (bounded) whitespace and string escapes.
class InstanceWriter {
 public:
  InstanceWriter(const Json& root, uint32_t seed) : root_(root), rng_(seed) {}
  std::string write() { return value(root_, 0); }

 private:
  size_t pick(size_t n) { return n == 0 ? 0 : rng_() % n; }
  bool coin() { return rng_() % 2 == 0; }
  int64_t between(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng_() % static_cast<uint64_t>(hi - lo + 1));
  }

  std::string ws() {
    switch (pick(4)) {
      case 0:
      case 1: return "";
      case 2: return " ";
      default: {
        std::string s = "\n";
        for (size_t n = pick(21); n > 0; --n) s += coin() ? ' ' : '\t';
        return s;
      }
    }
  }

  const Json& resolve(const std::string& ref) {
    return ref == "#" ? root_ : root_.at(Json::json_pointer(ref.substr(1)));
  }

  std::string value(const Json& s, int depth) {
    if (s.is_boolean() || s.empty()) return any(depth);
    if (s.contains("$ref")) return value(resolve(s["$ref"]), depth);
    if (s.contains("anyOf")) return value(s["anyOf"][pick(s["anyOf"].size())], depth);
    if (s.contains("enum")) return s["enum"][pick(s["enum"].size())].dump();
    if (s.contains("const")) return s["const"].dump();
    const Json& t = s["type"];
    const std::string type = t.is_array() ? t[pick(t.size())].get<std::string>() : t.get<std::string>();
    if (type == "object") return object(s, depth);
    if (type == "array") return array(s, depth);
    if (type == "string") return string(s.value("minLength", 0), s.value("maxLength", s.value("minLength", 0) + 6));
    if (type == "integer") return integer(s);
    if (type == "number") return number(s.contains("minimum"));
    if (type == "boolean") return coin() ? "true" : "false";
    return "null";
  }

  std::string object(const Json& s, int depth) {
    std::string out = "{";
    out += ws();
    bool first = true;
    auto member = [&](const std::string& key, const Json& schema) {
      if (!first) out.append(",").append(ws());
      out.append(Json(key).dump()).append(ws()).append(":").append(ws()).append(value(schema, depth + 1)).append(ws());
      first = false;
    };
    const Json required = s.value("required", Json::array());
    const Json properties = s.value("properties", Json::object());
    for (auto it = properties.begin(); it != properties.end(); ++it) {
      const bool is_required = std::find(required.begin(), required.end(), it.key()) != required.end();
      if (is_required || (depth <= 3 && coin())) member(it.key(), it.value());
    }
    const Json extra = s.value("additionalProperties", Json(!s.contains("properties")));
    if (!(extra.is_boolean() && !extra.get<bool>())) {
      for (size_t i = depth > 3 ? 0 : pick(3); i > 0; --i) member("extra" + std::to_string(i), extra);
    }
    return out + "}";
  }

  std::string array(const Json& s, int depth) {
    const Json prefix = s.value("prefixItems", Json::array());
    const size_t lo = s.value("minItems", prefix.size());
    const size_t hi = s.value("maxItems", lo + 4);
    const size_t n = depth > 3 ? lo : lo + pick(hi - lo + 1);  // deep down, as small as allowed
    std::string out = "[";
    out += ws();
    for (size_t i = 0; i < n; ++i) {
      const Json item = i < prefix.size() ? prefix[i] : s.value("items", Json(true));
      if (i > 0) out.append(",").append(ws());
      out.append(value(item, depth + 1)).append(ws());
    }
    return out + "]";
  }

  // Each piece is one character, raw or escaped.
  std::string string(size_t lo, size_t hi) {
    static const std::vector<std::string> kPieces = {"a",      "Z",   "0",   " ",       "é",
                                                     "中",     "😀",   "\\n", "\\\"",    "\\\\",
                                                     "\\/",    "\\t", "\\b", "\\u00e9", "\\uD83D\\uDE00",
                                                     "\\u0001"};
    std::string out = "\"";
    for (size_t n = lo + pick(hi - lo + 1); n > 0; --n) out += kPieces[pick(kPieces.size())];
    return out + "\"";
  }

  std::string integer(const Json& s) {
    if (!s.contains("minimum") && !s.contains("maximum") && pick(8) == 0) return coin() ? "-98765432109876543210" : "0";
    return std::to_string(between(s.value("minimum", int64_t{-100000}), s.value("maximum", int64_t{100000})));
  }

  std::string number(bool non_negative) {
    std::string out = non_negative || coin() ? "" : "-";
    out += pick(3) == 0 ? "0" : std::to_string(between(1, 1000000));
    if (coin()) out.append(".").append(std::to_string(between(0, 999)));
    if (pick(3) == 0) out += std::string(coin() ? "e" : "E") + (coin() ? "-" : "+") + std::to_string(between(0, 300));
    return out;
  }

  std::string any(int depth) {
    static const Json kScalar = Json::parse(R"({"type": ["string", "integer", "number", "boolean", "null"]})");
    static const Json kAnything =
        Json::parse(R"({"type": ["string", "integer", "number", "boolean", "null", "object", "array"]})");
    return value(depth > 3 ? kScalar : kAnything, depth);
  }

  const Json& root_;
  std::mt19937 rng_;
};

TEST(JsonSchemaGrammarTest, AcceptsRandomValidInstances) {
  const std::vector<std::string> schemas = {
      "{}",
      R"({"type": "object"})",
      R"({"type": "object", "properties": {
            "a": {"type": "integer", "minimum": -50, "maximum": 50},
            "b": {"type": "string", "minLength": 1, "maxLength": 4},
            "c": {"type": "array", "items": {"type": "number"}, "maxItems": 3},
            "d": {"type": "number", "minimum": 0}},
          "required": ["b"], "additionalProperties": {"type": ["boolean", "null"]}})",
      R"({"type": "array", "prefixItems": [{"type": "integer"}, {"enum": ["x", "y", 3]}],
          "items": {"type": "string"}, "minItems": 1, "maxItems": 5})",
      R"({"$defs": {"tree": {"type": "object", "properties": {
             "value": {"type": ["integer", "null"]},
             "children": {"type": "array", "items": {"$ref": "#/$defs/tree"}, "maxItems": 2}},
           "required": ["value", "children"], "additionalProperties": false}},
          "$ref": "#/$defs/tree"})",
      R"({"type": "object", "properties": {
            "steps": {"type": "array", "items": {"type": "object",
              "properties": {"explanation": {"type": "string"}, "output": {"type": "string"}},
              "required": ["explanation", "output"], "additionalProperties": false}},
            "answer": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "integer", "minimum": 0, "maximum": 9}]},
            "tag": {"const": "done"}},
          "required": ["steps", "answer", "tag"], "additionalProperties": false})",
  };
  for (const std::string& schema : schemas) {
    const Json parsed = Json::parse(schema);
    const Grammar g = grammar_for(schema);
    InstanceWriter writer(parsed, 42);
    for (int i = 0; i < 300; ++i) {
      const std::string text = writer.write();
      ASSERT_TRUE(Json::accept(text)) << "the test's writer made invalid JSON: " << text;
      ASSERT_TRUE(grammar_accepts(g, text)) << schema << "\nmust accept " << text;
    }
  }
}

// Schemas made of random keywords with random (often wrong) values: the
// conversion never throws or crashes, and every grammar it gives parses.
TEST(JsonSchemaGrammarTest, RandomSchemasConvertOrFailCleanly) {
  std::mt19937 rng(7);
  const std::vector<std::string> keys = {"type",
                                         "enum",
                                         "const",
                                         "properties",
                                         "required",
                                         "additionalProperties",
                                         "items",
                                         "prefixItems",
                                         "minItems",
                                         "maxItems",
                                         "minLength",
                                         "maxLength",
                                         "pattern",
                                         "format",
                                         "minimum",
                                         "maximum",
                                         "exclusiveMinimum",
                                         "anyOf",
                                         "oneOf",
                                         "allOf",
                                         "$ref",
                                         "uniqueItems",
                                         "title",
                                         "not",
                                         "minProperties",
                                         "additionalItems"};
  const std::vector<Json> atoms = {"string", "integer", "number",    "object", "array",     "null", "boolean", "date",
                                   "^a+$",   "(",       "#/$defs/a", "#",      "#/$defs/b", 0,      3,         -2,
                                   1.5,      10001,     true,        false,    nullptr,     "a",    "b"};
  std::function<Json(int)> schema = [&](int depth) -> Json {
    if (depth > 3 || rng() % 6 == 0) return rng() % 2 ? Json(true) : Json::object();
    Json s = Json::object();
    for (size_t n = 1 + rng() % 3; n > 0; --n) {
      const std::string& key = keys[rng() % keys.size()];
      switch (rng() % 5) {
        case 0: s[key] = atoms[rng() % atoms.size()]; break;
        case 1: s[key] = schema(depth + 1); break;
        case 2: s[key] = Json::array({schema(depth + 1), schema(depth + 1)}); break;
        case 3: s[key] = Json::array({atoms[rng() % atoms.size()], atoms[rng() % atoms.size()]}); break;
        default: s[key] = Json{{"a", schema(depth + 1)}, {"b", schema(depth + 1)}}; break;
      }
    }
    return s;
  };
  int converted = 0;
  for (int i = 0; i < 3000; ++i) {
    Json s = schema(0);
    if (s.is_object())
      s["$defs"] = Json{{"a", schema(1)}, {"b", Json{{"type", "array"}, {"items", {{"$ref", "#/$defs/b"}}}}}};
    Result<std::string> text = Status::internal("not run");
    try {
      text = json_schema_to_gbnf(s);
    } catch (const std::exception& e) {
      FAIL() << s.dump() << " threw " << e.what();
    }
    if (!text.is_ok()) {
      EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument) << s.dump();
      continue;
    }
    ++converted;
    Result<Grammar> g = parse_gbnf(*text);
    ASSERT_TRUE(g.is_ok()) << s.dump() << "\n" << *text << g.status().to_string();
    for (const char* t : {"{}", "[]", "1", "\"a\"", "null", "[[]]"}) grammar_accepts(*g, t);
  }
  EXPECT_GT(converted, 300);
}

TEST(JsonSchemaGrammarTest, RefusesWhatItCannotExpress) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"type": "object", "properties": {"a": {"patternProperties": {"x": {}}}}})",
       "json_schema: unsupported keyword 'patternProperties' at /properties/a"},
      {R"({"not": {"type": "null"}})", "unsupported keyword 'not' at the root"},
      {R"({"if": {}, "then": {}})", "unsupported keyword"},
      {R"({"type": "array", "contains": {}})", "unsupported keyword 'contains'"},
      {R"({"type": "integer", "multipleOf": 2})", "unsupported keyword 'multipleOf'"},
      {R"({"type": "object", "dependentSchemas": {}})", "unsupported keyword 'dependentSchemas'"},
      {R"({"type": "array", "items": {"type": "integer"}, "uniqueItems": true})", "uniqueItems"},
      {"false", "schema false matches nothing"},
      {R"({"type": "strin"})", "unknown type \"strin\""},
      {R"({"type": "string", "format": "iri"})", "unsupported format 'iri'"},
      {R"({"type": "string", "pattern": "(a)\\1"})", "backreference"},
      {R"({"type": "string", "pattern": "^[a-z]+[0-9]+$", "maxLength": 5})", "minLength/maxLength"},
      {R"({"type": "string", "minLength": 3, "maxLength": 2})", "minLength is greater than maxLength"},
      {R"({"type": "string", "maxLength": 1000000})", "maxLength above"},
      {R"({"type": "integer", "minimum": 5, "maximum": 4})", "no integer lies between"},
      {R"({"type": "integer", "minimum": 1e30})", "outside the supported 64-bit range"},
      {R"({"type": "number", "maximum": 5})", "maximum on a number is unsupported"},
      {R"({"type": "number", "minimum": 1})", "minimum other than 0"},
      {R"({"type": "object", "properties": {"a": {}}, "required": ["b"], "additionalProperties": false})",
       "required property 'b' is not allowed"},
      {R"({"type": "object", "properties": {"a": false}, "required": ["a"]})", "has schema false"},
      {R"({"type": "object", "minProperties": 1})", "minProperties"},
      {R"({"type": "array", "prefixItems": [{}, {}], "maxItems": 3, "minItems": 3})", "minItems is more than"},
      {R"({"$ref": "#/$defs/missing"})", "$ref '#/$defs/missing' does not resolve"},
      {R"({"$ref": "https://example.com/schema.json"})", "only local $ref"},
      {R"({"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "null"}]}}, "$ref": "#/$defs/a"})",
       "refers to itself without an object or array"},
      {R"({"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"})", "too many parts"},
      {R"({"allOf": [{"type": "string"}, {"type": "integer"}]})", "no common type"},
      {R"({"allOf": [{"pattern": "a"}, {"pattern": "b"}]})", "disagree on 'pattern'"},
      {R"({"anyOf": []})", "non-empty array"},
      {R"({"anyOf": [{}], "oneOf": [{}]})", "anyOf together with oneOf"},
      {R"({"enum": ["a"], "minLength": 3})", "together with enum"},
      {R"({"type": "integer", "enum": ["a"]})", "no value of enum/const"},
  };
  for (const auto& [schema, message] : cases) {
    EXPECT_NE(refusal(schema).find(message), std::string::npos) << schema << "\nwanted: " << message;
  }
  std::string deep = "{}";
  for (int i = 0; i < 80; ++i) deep = R"({"type": "array", "items": )" + deep + "}";
  EXPECT_NE(refusal(deep).find("nested deeper"), std::string::npos);
}

TEST(JsonSchemaGrammarTest, IgnoresAnnotations) {
  check({{R"({"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "x", "title": "T",
              "description": "d", "examples": [1], "default": 0, "$comment": "c", "deprecated": false,
              "readOnly": true, "writeOnly": false, "x-vendor": 1, "type": "integer"})",
          {"1"},
          {"\"1\""}}});
}

}  // namespace
}  // namespace omnibus
