// The real default model for tests that compare against it. Its path comes
// from OMNIBUS_MODEL. Without it a test skips, unless OMNIBUS_REQUIRE_MODEL=1
// (scripts/test.sh sets it), in which case it fails: CI never reports a
// skipped comparison as a pass.
#pragma once

#include <cstdlib>
#include <string>

namespace omnibus::testing {

inline std::string real_model_path() {
  const char* path = std::getenv("OMNIBUS_MODEL");
  return path == nullptr ? std::string() : std::string(path);
}

inline bool real_model_required() {
  const char* require = std::getenv("OMNIBUS_REQUIRE_MODEL");
  return require != nullptr && std::string(require) == "1";
}

}  // namespace omnibus::testing

// Use in a test body or SetUp when the real model is unavailable.
#define OMNIBUS_SKIP_OR_FAIL_WITHOUT_MODEL(why)                                     \
  do {                                                                              \
    if (::omnibus::testing::real_model_required()) FAIL() << "the real model is required: " << (why); \
    GTEST_SKIP() << "needs the real model: " << (why);                              \
  } while (0)
