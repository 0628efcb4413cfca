// Malformed and hostile bodies: the parsers must answer each with a request
// or a 400, never a throw or a crash, and the error must still render as a
// JSON body. Deterministic (fixed seed).
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/openai_request.h"
#include "server/openai_response.h"

namespace omnibus::server {
namespace {

const char* const kCompletionBody =
    R"({"model":"m","prompt":"Hello there","max_tokens":7,"temperature":0.5,"top_p":0.9,"top_k":33,"min_p":0.1,)"
    R"("seed":1,"stop":["\n"],"presence_penalty":0.1,"frequency_penalty":0.2,"repetition_penalty":1.1,)"
    R"("logit_bias":{"5":1},"logprobs":2,"n":1,"stream":true,"stream_options":{"include_usage":true},"echo":false})";
const char* const kChatBody =
    R"({"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text",)"
    R"("text":"hi"}]}],"max_completion_tokens":9,"logprobs":true,"top_logprobs":3,"stop":"x","n":2})";

const std::vector<std::string> kFields = {
    "model", "prompt", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k",
    "min_p", "seed", "stop", "presence_penalty", "frequency_penalty", "repetition_penalty", "logit_bias",
    "logprobs", "top_logprobs", "n", "stream", "stream_options", "echo", "user"};
const std::vector<std::string> kOddValues = {
    "\"x\"", "-1", "1e309", "-1e309", "1e308", "99999999999999999999", "true", "null", "[]", "{}", "[[[1]]]",
    "\"\xff\xfe\"", "0", "0.5", "4097", "[\"a\",\"b\",\"c\",\"d\",\"e\"]", "{\"1\":1e309}", "[-7]",
    "[{\"role\":\"user\"}]", "-9223372036854775809", "18446744073709551616"};

// One answer checked: a request, or a 400 whose body renders as JSON.
template <class R>
void check_answer(const R& result, const std::string& body) {
  if (result) return;
  EXPECT_EQ(result.error().http_status, 400) << body;
  EXPECT_FALSE(result.error().message.empty()) << body;
  std::string rendered = build_error_body(result.error());
  EXPECT_TRUE(nlohmann::json::accept(rendered)) << rendered;
}

void check_body(const std::string& body) {
  const ApiLimits limits;
  EXPECT_NO_THROW(check_answer(parse_completion_request(body, limits), body));
  EXPECT_NO_THROW(check_answer(parse_chat_request(body, limits), body));
}

std::string mutate(std::mt19937& rng, int kind) {
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  std::string base = pick(2) ? kCompletionBody : kChatBody;
  switch (kind) {
    case 0: {  // random bytes
      std::string s(pick(200), '\0');
      for (char& c : s) c = static_cast<char>(pick(256));
      return s;
    }
    case 1:  // truncated valid JSON
      return base.substr(0, pick(base.size()));
    case 2: {  // a field with the wrong type or a wild value
      return "{\"prompt\":\"a\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"" + kFields[pick(kFields.size())] +
             "\":" + kOddValues[pick(kOddValues.size())] + "}";
    }
    case 3: {  // invalid UTF-8 bytes inside a string
      size_t at = base.find("Hello");
      if (at == std::string::npos) at = base.find("hi");
      base.insert(at + 1, 1, static_cast<char>(0x80 + pick(128)));
      return base;
    }
    default: {  // random single-byte corruption of a valid body
      base[pick(base.size())] = static_cast<char>(pick(256));
      return base;
    }
  }
}

TEST(RequestRobustness, TwoThousandMalformedBodies) {
  std::mt19937 rng(20261130);
  int accepted = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string body = mutate(rng, i % 5);
    check_body(body);
    if (parse_completion_request(body, ApiLimits{})) ++accepted;
  }
  // Some wild values are legal (e.g. "user": 0.5 is not, "top_k": 0 is);
  // the loop must exercise both paths.
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, 2000);
}

TEST(RequestRobustness, HostileExtremes) {
  check_body(std::string(100000, '['));
  check_body(std::string(100000, '{'));
  check_body("{\"prompt\":" + std::string(100000, '[') + "1" + std::string(100000, ']') + "}");
  check_body(std::string("{\"prompt\":\"a\0b\"}", 15));
  check_body("{\"prompt\":\"\\ud800\"}");  // lone surrogate escape
  check_body("{\"prompt\":\"a\",\"prompt\":[1]}");  // duplicate keys: last wins
  check_body("{\"prompt\":[" + std::string(20000, '1') + "]}");
  check_body("null");
  check_body("\"just a string\"");
  check_body("{}");
}

}  // namespace
}  // namespace omnibus::server
