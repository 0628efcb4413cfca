#include "server/cors.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace omnibus::server {
namespace {

// The methods the server's routes take (HEAD: the GET routes').
constexpr const char* kAllowedMethods = "GET, HEAD, POST, OPTIONS";
// Always allowed on a request: what the OpenAI clients send.
constexpr const char* kBaseAllowedHeaders[] = {"authorization", "content-type"};
// Response headers a browser script may read besides the CORS-safelisted ones.
constexpr const char* kExposedHeaders = "X-Request-Id, Retry-After";
// Bounds on what a preflight's Access-Control-Request-Headers may add.
constexpr size_t kMaxRequestedHeaders = 32;
constexpr size_t kMaxHeaderNameLength = 100;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_commas(std::string_view s) {
  std::vector<std::string_view> parts;
  while (true) {
    const size_t comma = s.find(',');
    parts.push_back(trim(s.substr(0, comma)));
    if (comma == std::string_view::npos) return parts;
    s.remove_prefix(comma + 1);
  }
}

bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// RFC 9110's tchar: what a header name is made of.
bool is_token(std::string_view s) {
  constexpr std::string_view kPunctuation = "!#$%&'*+-.^_`|~";
  return !s.empty() && std::all_of(s.begin(), s.end(), [&](char c) {
    return is_alnum(c) || kPunctuation.find(c) != std::string_view::npos;
  });
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "host[:port]", host a name, an IPv4 address or a bracketed IPv6 one.
bool is_host_and_port(std::string_view s) {
  std::string_view port;
  if (!s.empty() && s.front() == '[') {
    const size_t close = s.find(']');
    if (close == std::string_view::npos || close == 1) return false;
    const std::string_view inside = s.substr(1, close - 1);
    if (!std::all_of(inside.begin(), inside.end(),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.'; })) {
      return false;
    }
    s.remove_prefix(close + 1);
    if (s.empty()) return true;
    if (s.front() != ':') return false;
    port = s.substr(1);
  } else {
    const size_t colon = s.find(':');
    const std::string_view host = s.substr(0, colon);
    if (host.empty() || !std::all_of(host.begin(), host.end(),
                                     [](char c) { return is_alnum(c) || c == '-' || c == '.' || c == '_'; })) {
      return false;
    }
    if (colon == std::string_view::npos) return true;
    port = s.substr(colon + 1);
  }
  return all_digits(port) && port.size() <= 5;
}

// An origin as a browser writes it, lower-cased; nullopt when `s` is not one.
std::optional<std::string> normalize_origin(std::string_view s) {
  const size_t sep = s.find("://");
  if (sep == std::string_view::npos || sep == 0) return std::nullopt;
  const std::string_view scheme = s.substr(0, sep);
  if (!std::isalpha(static_cast<unsigned char>(scheme.front())) ||
      !std::all_of(scheme.begin(), scheme.end(),
                   [](char c) { return is_alnum(c) || c == '+' || c == '-' || c == '.'; })) {
    return std::nullopt;
  }
  std::string_view rest = s.substr(sep + 3);
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (!is_host_and_port(rest)) return std::nullopt;
  return lower(s.substr(0, sep + 3 + rest.size()));
}

}  // namespace

Result<CorsPolicy> CorsPolicy::parse(const std::vector<std::string>& origins) {
  CorsPolicy policy;
  for (const std::string& entry : origins) {
    for (std::string_view origin : split_commas(entry)) {
      if (origin.empty()) {
        return Status::invalid_argument(fmt::format("--cors-origin '{}': an empty origin", entry));
      }
      if (origin == "*") {
        policy.any_origin_ = true;
        continue;
      }
      std::optional<std::string> normalized = normalize_origin(origin);
      if (!normalized) {
        return Status::invalid_argument(fmt::format(
            "--cors-origin '{}': not an origin; give '*' or scheme://host[:port], e.g. http://localhost:3000 "
            "(no path)",
            origin));
      }
      if (std::find(policy.origins_.begin(), policy.origins_.end(), *normalized) == policy.origins_.end()) {
        policy.origins_.push_back(std::move(*normalized));
      }
    }
  }
  return policy;
}

std::optional<std::string> CorsPolicy::allow_origin(std::string_view origin) const {
  if (origin.empty() || !enabled()) return std::nullopt;
  if (any_origin_) return std::string("*");
  const std::string requested = lower(origin);
  if (std::find(origins_.begin(), origins_.end(), requested) == origins_.end()) return std::nullopt;
  return std::string(origin);
}

bool CorsPolicy::is_preflight(std::string_view method, std::string_view origin, std::string_view request_method) const {
  return method == "OPTIONS" && !request_method.empty() && allow_origin(origin).has_value();
}

HeaderList CorsPolicy::response_headers(std::string_view origin) const {
  HeaderList headers;
  if (!enabled()) return headers;
  if (std::optional<std::string> allowed = allow_origin(origin)) {
    headers.emplace_back("Access-Control-Allow-Origin", std::move(*allowed));
    headers.emplace_back("Access-Control-Expose-Headers", kExposedHeaders);
  }
  headers.emplace_back("Vary", "Origin");
  return headers;
}

HeaderList CorsPolicy::preflight_headers(std::string_view origin, std::string_view request_headers) const {
  HeaderList headers;
  std::optional<std::string> allowed = allow_origin(origin);
  if (!allowed) return headers;
  std::vector<std::string> names(std::begin(kBaseAllowedHeaders), std::end(kBaseAllowedHeaders));
  size_t added = 0;
  for (std::string_view name : split_commas(request_headers)) {
    if (added == kMaxRequestedHeaders) break;
    if (name.size() > kMaxHeaderNameLength || !is_token(name)) continue;
    std::string lowered = lower(name);
    if (std::find(names.begin(), names.end(), lowered) != names.end()) continue;
    names.push_back(std::move(lowered));
    ++added;
  }
  std::string allowed_headers;
  for (const std::string& name : names) allowed_headers += (allowed_headers.empty() ? "" : ", ") + name;
  headers.emplace_back("Access-Control-Allow-Origin", std::move(*allowed));
  headers.emplace_back("Access-Control-Allow-Methods", kAllowedMethods);
  headers.emplace_back("Access-Control-Allow-Headers", std::move(allowed_headers));
  headers.emplace_back("Access-Control-Max-Age", std::to_string(kPreflightMaxAgeSeconds));
  // The answer depends on these request headers too.
  headers.emplace_back("Vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers");
  return headers;
}

}  // namespace omnibus::server
