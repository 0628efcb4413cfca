#include "bench/workload.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace omnibus::bench {
namespace {

// A stand-in tokenizer: one token per whitespace-separated word.
int64_t word_count(const std::string& text) {
  std::istringstream in(text);
  int64_t n = 0;
  for (std::string w; in >> w;) ++n;
  return n;
}

std::vector<Conversation> make(WorkloadSpec spec, int64_t count) {
  Result<std::vector<Conversation>> w = make_workload(spec, count, word_count);
  EXPECT_TRUE(w.is_ok()) << w.status().to_string();
  return w.is_ok() ? *w : std::vector<Conversation>{};
}

TEST(Workload, RandomPromptsHitTheLengthAndDiffer) {
  WorkloadSpec spec;
  spec.input_len = 200;
  spec.output_len = 17;
  auto convs = make(spec, 5);
  ASSERT_EQ(convs.size(), 5u);
  for (const Conversation& c : convs) {
    ASSERT_EQ(c.turns.size(), 1u);
    EXPECT_TRUE(c.system.empty());
    EXPECT_NEAR(c.turns[0].user_tokens, 200, 4);
    EXPECT_EQ(c.turns[0].user_tokens, word_count(c.turns[0].user));
    EXPECT_EQ(c.turns[0].max_tokens, 17);
  }
  EXPECT_NE(convs[0].turns[0].user, convs[1].turns[0].user);
  // Same seed, same prompts.
  EXPECT_EQ(make(spec, 5)[3].turns[0].user, convs[3].turns[0].user);
}

TEST(Workload, JitterSpreadsLengths) {
  WorkloadSpec spec;
  spec.input_len = 100;
  spec.len_jitter = 0.5;
  int64_t lo = 1000, hi = 0;
  for (const Conversation& c : make(spec, 40)) {
    lo = std::min(lo, c.turns[0].user_tokens);
    hi = std::max(hi, c.turns[0].user_tokens);
  }
  EXPECT_GE(lo, 48);
  EXPECT_LE(hi, 152);
  EXPECT_GT(hi - lo, 30);
}

TEST(Workload, SharedPrefixAndLongDocShareSystemPrompts) {
  WorkloadSpec spec;
  spec.kind = WorkloadKind::kSharedPrefix;
  spec.num_prefixes = 3;
  spec.prefix_len = 300;
  spec.input_len = 20;
  auto convs = make(spec, 7);
  EXPECT_EQ(convs[0].system, convs[3].system);
  EXPECT_EQ(convs[1].system, convs[4].system);
  EXPECT_NE(convs[0].system, convs[1].system);
  EXPECT_NEAR(convs[0].system_tokens, 300, 6);
  EXPECT_NE(convs[0].turns[0].user, convs[3].turns[0].user);

  spec.kind = WorkloadKind::kLongDoc;
  spec.doc_len = 500;
  auto docs = make(spec, 4);
  for (const Conversation& c : docs) EXPECT_EQ(c.system, docs[0].system);
  EXPECT_NEAR(docs[0].system_tokens, 500, 10);
}

TEST(Workload, VariantsKeepTheSharedMaterialAndChangeTheQuestions) {
  WorkloadSpec spec;
  spec.kind = WorkloadKind::kSharedPrefix;
  spec.num_prefixes = 2;
  spec.prefix_len = 100;
  spec.input_len = 20;
  auto base = make(spec, 2);
  spec.variant = 1;
  auto other = make(spec, 2);
  EXPECT_EQ(base[0].system, other[0].system);
  EXPECT_EQ(base[1].system, other[1].system);
  EXPECT_NE(base[0].turns[0].user, other[0].turns[0].user);
  spec.seed = 2;  // another seed: other system prompts too
  EXPECT_NE(make(spec, 1)[0].system, base[0].system);
}

TEST(Workload, MultiTurnCarriesHistory) {
  WorkloadSpec spec;
  spec.kind = WorkloadKind::kMultiTurn;
  spec.turns = 3;
  spec.input_len = 10;
  auto convs = make(spec, 2);
  ASSERT_EQ(convs[0].turns.size(), 3u);
  std::vector<Message> m = messages_for_turn(convs[0], 2, {"first answer", "second answer"});
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0].role, "user");
  EXPECT_EQ(m[0].content, convs[0].turns[0].user);
  EXPECT_EQ(m[1].role, "assistant");
  EXPECT_EQ(m[1].content, "first answer");
  EXPECT_EQ(m[3].content, "second answer");
  EXPECT_EQ(m[4].content, convs[0].turns[2].user);
}

TEST(Workload, CodeIsRepetitive) {
  WorkloadSpec spec;
  spec.kind = WorkloadKind::kCode;
  spec.input_len = 300;
  auto convs = make(spec, 2);
  const std::string& code = convs[0].turns[0].user;
  EXPECT_NE(code.find("def scaled_"), std::string::npos);
  EXPECT_NEAR(convs[0].turns[0].user_tokens, 300, 30);  // whole functions: coarser steps
}

TEST(Workload, JsonlReadsEveryShapeAndRepeats) {
  const std::string path = ::testing::TempDir() + "/workload_test.jsonl";
  {
    std::ofstream out(path);
    out << R"({"prompt": "hello there", "max_tokens": 5})" << "\n\n"
        << R"({"system": "be brief", "turns": ["a", "b"]})" << "\n"
        << R"({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]})" << "\n";
  }
  WorkloadSpec spec;
  spec.kind = WorkloadKind::kJsonl;
  spec.dataset = path;
  spec.output_len = 9;
  auto convs = make(spec, 5);
  ASSERT_EQ(convs.size(), 5u);
  EXPECT_EQ(convs[0].turns[0].user, "hello there");
  EXPECT_EQ(convs[0].turns[0].max_tokens, 5);
  EXPECT_EQ(convs[1].system, "be brief");
  EXPECT_EQ(convs[1].turns.size(), 2u);
  EXPECT_EQ(convs[1].turns[1].max_tokens, 9);
  EXPECT_EQ(convs[2].system, "s");
  EXPECT_EQ(convs[2].turns[0].user, "u");
  EXPECT_EQ(convs[3].turns[0].user, "hello there");  // repeated
}

TEST(Workload, BadJsonlNamesTheLine) {
  const std::string path = ::testing::TempDir() + "/workload_bad.jsonl";
  for (const char* bad : {"{\"prompt\": 5}", "[1, 2]", "{\"turns\": [1]}", "{\"prompt\": \"x\", \"max_tokens\": 0}",
                          "{\"messages\": [{\"role\": \"user\"}]}", "not json"}) {
    {
      std::ofstream out(path);
      out << R"({"prompt": "fine"})" << "\n" << bad << "\n";
    }
    WorkloadSpec spec;
    spec.kind = WorkloadKind::kJsonl;
    spec.dataset = path;
    Result<std::vector<Conversation>> w = make_workload(spec, 2, word_count);
    ASSERT_FALSE(w.is_ok()) << bad;
    EXPECT_NE(w.status().message().find(":2"), std::string::npos) << w.status().message();
  }
  WorkloadSpec missing;
  missing.kind = WorkloadKind::kJsonl;
  missing.dataset = ::testing::TempDir() + "/no_such_file.jsonl";
  EXPECT_FALSE(make_workload(missing, 1, word_count).is_ok());
}

TEST(Workload, ValidateAndNames) {
  WorkloadSpec spec;
  spec.input_len = 0;
  EXPECT_FALSE(validate(spec).is_ok());
  spec = {};
  spec.len_jitter = 1;
  EXPECT_FALSE(validate(spec).is_ok());
  spec = {};
  spec.kind = WorkloadKind::kJsonl;
  EXPECT_FALSE(validate(spec).is_ok());  // no dataset
  for (const char* name : {"random", "shared-prefix", "multi-turn", "long-doc", "code", "jsonl"}) {
    Result<WorkloadKind> k = parse_workload_kind(name);
    ASSERT_TRUE(k.is_ok());
    EXPECT_STREQ(workload_kind_name(*k), name);
  }
  EXPECT_FALSE(parse_workload_kind("chaos").is_ok());
}

}  // namespace
}  // namespace omnibus::bench
