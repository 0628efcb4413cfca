// Over HTTP against the scripted fake engine: a completions request with a
// list of prompts answers n choices per prompt, numbered prompt by prompt
// (index = prompt * n + choice, as OpenAI does), streaming and not; and
// fields the server does not implement are refused before anything runs.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "server/http_test_support.h"

namespace omnibus::server::testing {
namespace {

// The fake replies "Hello", " world", "!", " " over and over.
std::string reply_text(int tokens) {
  static const char* kPieces[] = {"Hello", " world", "!", " "};
  std::string out;
  for (int i = 0; i < tokens; ++i) out += kPieces[i % 4];
  return out;
}

const std::vector<std::string> kPromptTexts = {"Hi", "Say: ", "Hello world"};

Json prompt_list(const Tokenizer& tokenizer) {
  // Two texts and one token-id list.
  return Json::array({kPromptTexts[0], kPromptTexts[1], tokenizer.encode(kPromptTexts[2], false, false)});
}

TEST(HttpPromptListTest, NChoicesPerPromptInPromptOrder) {
  ServerHarness h;
  const Json body{
      {"prompt", prompt_list(h.service().tokenizer())}, {"n", 2}, {"max_tokens", 3}, {"echo", true}, {"seed", 7}};
  HttpReply r = h.post("/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const Json j = r.json();
  ASSERT_EQ(j["choices"].size(), 6u);
  for (int c = 0; c < 6; ++c) {
    EXPECT_EQ(j["choices"][c]["index"], c);
    EXPECT_EQ(j["choices"][c]["text"], kPromptTexts[c / 2] + reply_text(3)) << c;
    EXPECT_EQ(j["choices"][c]["finish_reason"], "length");
  }
  const auto submitted = h.service().submitted();
  ASSERT_EQ(submitted.size(), 6u);
  int64_t prompt_tokens = 0;
  for (size_t c = 0; c < submitted.size(); ++c) {
    EXPECT_EQ(submitted[c].prompt, h.service().tokenizer().encode(kPromptTexts[c / 2], false, true)) << c;
    EXPECT_EQ(submitted[c].sampling.seed, 7u + c % 2) << c;  // as each prompt alone
    if (c % 2 == 0) prompt_tokens += static_cast<int64_t>(submitted[c].prompt.size());
  }
  EXPECT_EQ(j["usage"]["prompt_tokens"], prompt_tokens);  // each prompt once, not per choice
  EXPECT_EQ(j["usage"]["completion_tokens"], 18);
}

TEST(HttpPromptListTest, StreamingNumbersChoicesTheSameWay) {
  ServerHarness h;
  const Json body{
      {"prompt", prompt_list(h.service().tokenizer())}, {"n", 2}, {"max_tokens", 4}, {"echo", true}, {"stream", true},
      {"stream_options", {{"include_usage", true}}}};
  HttpReply r = h.post("/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const auto data = sse_data(r.body);
  ASSERT_GE(data.size(), 3u);
  EXPECT_EQ(data.back(), "[DONE]");
  std::map<int, std::string> texts;
  std::set<int> finished;
  for (size_t i = 0; i + 2 < data.size(); ++i) {
    const Json chunk = Json::parse(data[i]);
    for (const Json& c : chunk["choices"]) {
      texts[c["index"].get<int>()] += c["text"].get<std::string>();
      if (c["finish_reason"] == "length") finished.insert(c["index"].get<int>());
    }
  }
  ASSERT_EQ(texts.size(), 6u);
  for (int c = 0; c < 6; ++c) EXPECT_EQ(texts[c], kPromptTexts[c / 2] + reply_text(4)) << c;
  EXPECT_EQ(finished, (std::set<int>{0, 1, 2, 3, 4, 5}));
  const Json usage = Json::parse(data[data.size() - 2]);
  EXPECT_EQ(usage["usage"]["completion_tokens"], 24);
}

TEST(HttpPromptListTest, OnePromptInAListIsOnePrompt) {
  ServerHarness h;
  HttpReply r = h.post("/v1/completions", Json{{"prompt", {"Hi"}}, {"max_tokens", 2}, {"n", 3}});
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(r.json()["choices"].size(), 3u);
  EXPECT_EQ(r.json()["choices"][2]["index"], 2);
  EXPECT_EQ(h.service().submitted()[2].request_id.substr(r.json()["id"].get<std::string>().size()), "/2");
}

TEST(HttpPromptListTest, TooManyChoicesAndBadPromptsAre400BeforeAnythingRuns) {
  ServerHarness h;
  Json prompts = Json::array();
  for (int i = 0; i < 33; ++i) prompts.push_back("p");
  HttpReply many = h.post("/v1/completions", Json{{"prompt", prompts}, {"n", 2}, {"max_tokens", 1}});
  ASSERT_EQ(many.status, 400) << many.body;
  EXPECT_EQ(many.json()["error"]["param"], "prompt");
  EXPECT_NE(many.json()["error"]["message"].get<std::string>().find("66 choices"), std::string::npos) << many.body;

  HttpReply bad_id =
      h.post("/v1/completions",
             Json{{"prompt", Json::array({Json::array({72}), Json::array({72, 99999})})}, {"max_tokens", 1}});
  ASSERT_EQ(bad_id.status, 400) << bad_id.body;
  EXPECT_EQ(bad_id.json()["error"]["param"], "prompt[1][1]");
  EXPECT_TRUE(h.service().submitted().empty());
}

// A field that changes the answer and is not implemented is a 400 that
// names it; the neutral value of the same field is fine.
TEST(HttpPromptListTest, UnsupportedFieldsAre400NamingTheField) {
  ServerHarness h;
  const Json messages = {{{"role", "user"}, {"content", "Hi"}}};
  const std::vector<std::pair<std::string, Json>> refused = {
      {"guided_regex", "a+"},
      {"tools", Json::array({{{"type", "function"}, {"function", {{"name", "f"}}}}})},
      {"tool_choice", "required"},
      {"suffix", "tail"},
  };
  for (const auto& [field, value] : refused) {
    for (const char* path : {"/v1/chat/completions", "/v1/completions"}) {
      // Tool calling is chat's (http_tool_calls_test.cpp).
      if (field.starts_with("tool") && std::string(path) == "/v1/chat/completions") continue;
      Json body = std::string(path) == "/v1/completions" ? Json{{"prompt", "Hi"}} : Json{{"messages", messages}};
      body[field] = value;
      HttpReply r = h.post(path, body);
      ASSERT_EQ(r.status, 400) << path << " " << body.dump();
      EXPECT_EQ(r.json()["error"]["param"], field);
      EXPECT_EQ(r.json()["error"]["code"], "unsupported_parameter");
      EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("not supported"), std::string::npos);
    }
  }
  EXPECT_TRUE(h.service().submitted().empty());
  HttpReply text = h.post("/v1/chat/completions", Json{{"messages", messages},
                                                       {"max_tokens", 1},
                                                       {"response_format", {{"type", "text"}}},
                                                       {"tool_choice", "none"},
                                                       {"user", "u"},
                                                       {"metadata", {{"k", "v"}}},
                                                       {"store", false}});
  EXPECT_EQ(text.status, 200) << text.body;
}

}  // namespace
}  // namespace omnibus::server::testing
