#include "server/cors.h"

#include <gtest/gtest.h>

#include <map>

namespace omnibus::server {
namespace {

std::map<std::string, std::string> as_map(const HeaderList& headers) {
  return std::map<std::string, std::string>(headers.begin(), headers.end());
}

CorsPolicy parse_ok(const std::vector<std::string>& origins) {
  Result<CorsPolicy> p = CorsPolicy::parse(origins);
  EXPECT_TRUE(p.is_ok()) << p.status().to_string();
  return p.is_ok() ? std::move(p).value() : CorsPolicy();
}

TEST(CorsPolicyTest, OffByDefaultAndForAnEmptyList) {
  for (const CorsPolicy& off : {CorsPolicy(), parse_ok({})}) {
    EXPECT_FALSE(off.enabled());
    EXPECT_TRUE(off.response_headers("http://a.example").empty());
    EXPECT_FALSE(off.is_preflight("OPTIONS", "http://a.example", "POST"));
    EXPECT_FALSE(off.allow_origin("http://a.example").has_value());
  }
}

TEST(CorsPolicyTest, ListedOriginsRepeatedOrCommaSeparated) {
  const CorsPolicy p = parse_ok({"http://localhost:3000, https://App.Example/", "http://[::1]:8080"});
  EXPECT_TRUE(p.enabled());
  EXPECT_EQ(p.allow_origin("http://localhost:3000"), "http://localhost:3000");
  EXPECT_EQ(p.allow_origin("https://app.example"), "https://app.example");
  EXPECT_EQ(p.allow_origin("https://APP.example"), "https://APP.example");  // echoed as sent
  EXPECT_EQ(p.allow_origin("http://[::1]:8080"), "http://[::1]:8080");
  EXPECT_FALSE(p.allow_origin("http://localhost:3001").has_value());
  EXPECT_FALSE(p.allow_origin("https://app.example.evil").has_value());
  EXPECT_FALSE(p.allow_origin("null").has_value());
  EXPECT_FALSE(p.allow_origin("").has_value());

  const auto allowed = as_map(p.response_headers("http://localhost:3000"));
  EXPECT_EQ(allowed.at("Access-Control-Allow-Origin"), "http://localhost:3000");
  EXPECT_EQ(allowed.at("Vary"), "Origin");
  EXPECT_NE(allowed.at("Access-Control-Expose-Headers").find("X-Request-Id"), std::string::npos);
  const auto other = as_map(p.response_headers("http://other.example"));
  EXPECT_EQ(other.count("Access-Control-Allow-Origin"), 0u);
  EXPECT_EQ(other.at("Vary"), "Origin");  // still: the answer depends on the Origin
}

TEST(CorsPolicyTest, StarAllowsEveryOriginAsStar) {
  const CorsPolicy p = parse_ok({"*"});
  EXPECT_EQ(p.allow_origin("http://anything.example:1234"), "*");
  EXPECT_EQ(as_map(p.response_headers("https://x.example")).at("Access-Control-Allow-Origin"), "*");
  EXPECT_FALSE(p.allow_origin("").has_value());  // not a browser: no header
}

TEST(CorsPolicyTest, BadOriginsAreErrorsNamingThem) {
  for (const std::string bad : {"localhost:3000", "http://a.example/path", "http://", "null", "http://*.example",
                                "http://a.example:port", "http://a b", "a,,b", "", "://x", "http://[zz]"}) {
    Result<CorsPolicy> p = CorsPolicy::parse({bad});
    ASSERT_FALSE(p.is_ok()) << bad;
    EXPECT_NE(p.status().message().find("--cors-origin"), std::string::npos) << p.status().message();
  }
  EXPECT_NE(CorsPolicy::parse({"http://a.example/path"}).status().message().find("http://a.example/path"),
            std::string::npos);
}

TEST(CorsPolicyTest, PreflightNeedsOptionsAnAllowedOriginAndARequestMethod) {
  const CorsPolicy p = parse_ok({"http://localhost:3000"});
  EXPECT_TRUE(p.is_preflight("OPTIONS", "http://localhost:3000", "POST"));
  EXPECT_FALSE(p.is_preflight("OPTIONS", "http://localhost:3000", ""));
  EXPECT_FALSE(p.is_preflight("OPTIONS", "http://other.example", "POST"));
  EXPECT_FALSE(p.is_preflight("OPTIONS", "", "POST"));
  EXPECT_FALSE(p.is_preflight("POST", "http://localhost:3000", "POST"));
}

TEST(CorsPolicyTest, PreflightAllowsTheRequestedHeadersThatAreTokens) {
  const CorsPolicy p = parse_ok({"http://localhost:3000"});
  const auto h = as_map(p.preflight_headers("http://localhost:3000",
                                            "Content-Type, X-Stainless-OS,x-stainless-os, bad header, \x01x, "
                                            "OpenAI-Organization"));
  EXPECT_EQ(h.at("Access-Control-Allow-Origin"), "http://localhost:3000");
  EXPECT_EQ(h.at("Access-Control-Allow-Headers"), "authorization, content-type, x-stainless-os, openai-organization");
  EXPECT_EQ(h.at("Access-Control-Allow-Methods"), "GET, HEAD, POST, OPTIONS");
  EXPECT_EQ(h.at("Access-Control-Max-Age"), std::to_string(CorsPolicy::kPreflightMaxAgeSeconds));
  EXPECT_NE(h.at("Vary").find("Origin"), std::string::npos);
  EXPECT_EQ(as_map(p.preflight_headers("http://localhost:3000", "")).at("Access-Control-Allow-Headers"),
            "authorization, content-type");

  std::string many;
  for (int i = 0; i < 100; ++i) many += "x-h" + std::to_string(i) + ",";
  const std::string allowed =
      as_map(p.preflight_headers("http://localhost:3000", many)).at("Access-Control-Allow-Headers");
  EXPECT_EQ(std::count(allowed.begin(), allowed.end(), ','), 2 + 32 - 1);  // bounded
  EXPECT_TRUE(p.preflight_headers("http://other.example", "").empty());
}

}  // namespace
}  // namespace omnibus::server
