#include "server/token_routes.h"

#include <cstdint>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "server/json_fields.h"

namespace omnibus::server {
namespace {

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

ApiResult<std::string> tokenize_impl(std::string_view body, const Tokenizer& tokenizer, const ApiLimits& limits,
                                     int64_t context_length) {
  ApiResult<Json> doc = parse_json_object(body, limits.max_json_depth, limits.max_body_bytes);
  if (!doc) return doc.error();
  const Json& obj = doc.value();
  if (!has_field(obj, "content")) {
    return ApiError::invalid("content", "'content' is required", "missing_required_parameter");
  }
  if (!obj.at("content").is_string()) return wrong_type("content", "a string", obj.at("content"));
  bool add_special = true;
  bool parse_special = true;
  OMNIBUS_API_RETURN_IF_ERROR(read_bool(obj, "add_special", add_special));
  OMNIBUS_API_RETURN_IF_ERROR(read_bool(obj, "parse_special", parse_special));
  const std::string& content = obj.at("content").get_ref<const std::string&>();
  if (auto e = check_text_can_fit(content.size(), tokenizer.max_bytes_per_token(), context_length, "content")) {
    return *e;
  }
  const std::vector<int32_t> ids = tokenizer.encode(content, add_special, parse_special);
  return dump(Json{{"tokens", ids}});
}

ApiResult<std::string> detokenize_impl(std::string_view body, const Tokenizer& tokenizer, const ApiLimits& limits) {
  ApiResult<Json> doc = parse_json_object(body, limits.max_json_depth, limits.max_body_bytes);
  if (!doc) return doc.error();
  const Json& obj = doc.value();
  if (!has_field(obj, "tokens")) {
    return ApiError::invalid("tokens", "'tokens' is required", "missing_required_parameter");
  }
  const Json& arr = obj.at("tokens");
  if (!arr.is_array()) return wrong_type("tokens", "an array of token ids", arr);
  std::vector<int32_t> ids;
  ids.reserve(arr.size());
  const int64_t vocab = tokenizer.vocab_size();
  for (size_t i = 0; i < arr.size(); ++i) {
    int64_t id = 0;
    const std::string param = fmt::format("tokens[{}]", i);
    OMNIBUS_API_RETURN_IF_ERROR(as_int(arr[i], param, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), id));
    if (id < 0 || id >= vocab) {
      return ApiError::invalid(param, fmt::format("token id {} is outside the vocabulary [0, {})", id, vocab));
    }
    ids.push_back(static_cast<int32_t>(id));
  }
  return dump(Json{{"content", tokenizer.decode(ids)}});
}

ApiError unexpected(const std::exception& ex) {
  return ApiError::invalid("", std::string("request could not be parsed: ") + ex.what(), "invalid_request");
}

}  // namespace

ApiResult<std::string> handle_tokenize(std::string_view body, const Tokenizer& tokenizer, const ApiLimits& limits,
                                       int64_t context_length) {
  try {
    return tokenize_impl(body, tokenizer, limits, context_length);
  } catch (const std::exception& ex) {
    return unexpected(ex);
  }
}

ApiResult<std::string> handle_detokenize(std::string_view body, const Tokenizer& tokenizer, const ApiLimits& limits) {
  try {
    return detokenize_impl(body, tokenizer, limits);
  } catch (const std::exception& ex) {
    return unexpected(ex);
  }
}

}  // namespace omnibus::server
