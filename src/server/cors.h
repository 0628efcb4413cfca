// CorsPolicy: which browser origins may call the server (`--cors-origin`),
// and the CORS headers that say so. Off by default: then it adds no header
// and recognises no preflight, and the server answers as if CORS did not
// exist.
//
// When on, a response to a request whose Origin is allowed carries
// Access-Control-Allow-Origin (the origin, or "*" when every origin is
// allowed) and every response carries "Vary: Origin" (its headers depend on
// the Origin, so a cache must not share it across origins). A preflight (an
// OPTIONS request with Origin and Access-Control-Request-Method) from an
// allowed origin is answered 204 with the methods, headers and max age a
// browser needs; it needs no API key, since browsers never send one on a
// preflight (the request that follows still needs it).
//
// Plain data, no HTTP library types; immutable after parse(), thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace omnibus::server {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

class CorsPolicy {
 public:
  // How long a browser may reuse a preflight's answer (Chrome caps it at 2 h).
  static constexpr int kPreflightMaxAgeSeconds = 7200;

  // Off: no CORS headers, no preflights.
  CorsPolicy() = default;

  // `origins` as given on the command line: each entry one origin or a
  // comma-separated list of them; "*" allows every origin. An origin is
  // "scheme://host[:port]" (a trailing "/" is dropped; scheme and host
  // compare case-insensitively). An empty list turns CORS off. Anything
  // else (a path, a wildcard inside a host, "null", an empty entry) is an
  // error naming the entry.
  static Result<CorsPolicy> parse(const std::vector<std::string>& origins);

  bool enabled() const { return any_origin_ || !origins_.empty(); }

  // The Access-Control-Allow-Origin value for a request's Origin header
  // (empty: none was sent), or nullopt when that origin is not allowed.
  std::optional<std::string> allow_origin(std::string_view origin) const;

  // Whether a request is a CORS preflight this policy answers: OPTIONS,
  // from an allowed origin, asking with Access-Control-Request-Method.
  bool is_preflight(std::string_view method, std::string_view origin, std::string_view request_method) const;

  // The headers of a response to a request from `origin` (nothing when
  // CORS is off; "Vary: Origin" alone for an origin not allowed).
  HeaderList response_headers(std::string_view origin) const;

  // The headers of the 204 answer to a preflight (is_preflight() true).
  // `request_headers` is its Access-Control-Request-Headers: the header
  // names in it that are well-formed tokens are allowed along with
  // authorization and content-type; anything else in it is left out.
  HeaderList preflight_headers(std::string_view origin, std::string_view request_headers) const;

 private:
  bool any_origin_ = false;
  std::vector<std::string> origins_;  // lower-case, without a trailing '/'
};

}  // namespace omnibus::server
