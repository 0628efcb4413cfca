// Status and Result<T>: how failures the outside world can cause (a bad file,
// a bad request) travel as values. Cheap when OK; carries a message a user can
// act on when not. Assertions are for our own bugs only.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace omnibus {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // the caller (user, request) gave something wrong
  kNotFound,          // a named thing (file, tensor, key) is missing
  kOutOfRange,        // an index, offset or size is past a limit
  kCorrupt,           // a file's contents are malformed
  kUnsupported,       // well-formed, but not something we implement
  kIoError,           // the OS refused (open, mmap, read)
  kResourceExhausted, // no room (memory, KV blocks, queue)
  kInternal,          // our bug; should not happen
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }
  static Status invalid_argument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status out_of_range(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
  static Status corrupt(std::string m) { return {StatusCode::kCorrupt, std::move(m)}; }
  static Status unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
  static Status io_error(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status resource_exhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
  static Status internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "corrupt: tensor 'x' ends past the end of the file"
  std::string to_string() const;

  // Adds context in front of the message: "loading model.gguf: <message>".
  Status with_context(const std::string& context) const {
    if (is_ok()) return *this;
    return Status(code_, context + ": " + message_);
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// A value or the Status that says why there is none.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : data_(std::move(status)) {}  // NOLINT: implicit by design

  bool is_ok() const { return std::holds_alternative<T>(data_); }
  explicit operator bool() const { return is_ok(); }
  Status status() const { return is_ok() ? Status::ok() : std::get<Status>(data_); }

  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace omnibus

#define OMNIBUS_CONCAT_INNER(a, b) a##b
#define OMNIBUS_CONCAT(a, b) OMNIBUS_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function if `expr` is not OK.
#define OMNIBUS_RETURN_IF_ERROR(expr)              \
  do {                                             \
    ::omnibus::Status omnibus_status_ = (expr);    \
    if (!omnibus_status_.is_ok()) return omnibus_status_; \
  } while (0)

// `lhs = value of expr`, or returns its Status. lhs may be a declaration.
#define OMNIBUS_ASSIGN_OR_RETURN(lhs, expr) \
  OMNIBUS_ASSIGN_OR_RETURN_IMPL(OMNIBUS_CONCAT(omnibus_result_, __LINE__), lhs, expr)
#define OMNIBUS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.is_ok()) return tmp.status();              \
  lhs = std::move(tmp).value()
