// ApiError and ApiResult<T>: how a bad HTTP request travels back to the
// client. The HTTP layer turns an ApiError into the status line and the
// OpenAI error body {"error": {"message", "type", "param", "code"}}
// (openai_response.h). Plain data; not tied to any thread.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace omnibus::server {

struct ApiError {
  int http_status = 400;
  std::string type = "invalid_request_error";
  std::string message;
  std::string param;  // the offending field, e.g. "messages[2].role"; empty if none
  std::string code;   // machine-readable reason, e.g. "invalid_type"; empty if none

  static ApiError invalid(std::string param, std::string message, std::string code = "invalid_value") {
    ApiError e;
    e.param = std::move(param);
    e.message = std::move(message);
    e.code = std::move(code);
    return e;
  }
};

// A parsed request or the ApiError that says why there is none.
template <class T>
class [[nodiscard]] ApiResult {
 public:
  ApiResult(T value) : data_(std::move(value)) {}      // NOLINT: implicit by design
  ApiResult(ApiError error) : data_(std::move(error)) {}  // NOLINT: implicit by design

  bool is_ok() const { return std::holds_alternative<T>(data_); }
  explicit operator bool() const { return is_ok(); }
  const ApiError& error() const { return std::get<ApiError>(data_); }
  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, ApiError> data_;
};

}  // namespace omnibus::server
