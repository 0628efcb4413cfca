// libFuzzer target for the HTTP request parser (server/http_request_parser.h,
// what the connection loop feeds every byte a client sends). Each input is
// parsed as a stream of pipelined requests twice: in one piece, and split
// at positions the input's first bytes pick. Both must give the same
// requests (method, path, headers, body) and the same refusal, never a
// crash, a sanitizer report or a hang. Run: scripts/fuzz_all.sh or build
// the target with -DOMNIBUS_FUZZ=ON.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "server/http_request_parser.h"

using omnibus::server::HttpParseLimits;
using omnibus::server::HttpRequestParser;
using omnibus::server::ParsedHttpRequest;

namespace {

// What a parse of the whole stream produced, for comparing two runs.
std::string outcome(std::string_view input, const std::vector<size_t>& cuts) {
  HttpParseLimits limits;
  limits.max_head_bytes = 2048;
  limits.max_header_lines = 16;
  limits.max_body_bytes = 4096;
  HttpRequestParser parser(limits);
  std::string out;
  size_t pos = 0;
  size_t cut = 0;
  while (pos < input.size()) {
    size_t end = input.size();
    while (cut < cuts.size() && cuts[cut] <= pos) ++cut;
    if (cut < cuts.size()) end = cuts[cut];
    std::string_view piece = input.substr(pos, end - pos);
    while (!piece.empty()) {
      const size_t used = parser.feed(piece);
      if (used > piece.size()) std::abort();
      piece.remove_prefix(used);
      pos += used;
      if (parser.state() == HttpRequestParser::State::kError) {
        return out + "error " + std::to_string(parser.error_status());
      }
      if (parser.state() == HttpRequestParser::State::kComplete) {
        const ParsedHttpRequest r = parser.take();
        if (r.path.empty() || r.path.size() > r.target.size()) std::abort();
        if (r.body.size() > limits.max_body_bytes) std::abort();
        out += r.method + " " + r.target + " " + r.version + "\n";
        for (const auto& [k, v] : r.headers) out += k + ": " + v + "\n";
        out += "body " + std::to_string(r.body.size()) + ":" + r.body + "\n";
        out += r.keep_alive ? "keep\n" : "close\n";
      } else if (used == 0) {
        std::abort();  // bytes left, no progress, no verdict: a hang
      }
    }
  }
  return out + (parser.started() ? "partial" : "idle");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 2, size - 2);
  // Two cut strides from the first two bytes: byte-by-byte up to 128-byte pieces.
  std::vector<size_t> cuts;
  const size_t a = 1 + data[0] % 128, b = 1 + data[1] % 7;
  for (size_t p = a; p < input.size(); p += (cuts.size() % 2 ? a : b)) cuts.push_back(p);
  if (outcome(input, {}) != outcome(input, cuts)) std::abort();
  return 0;
}
