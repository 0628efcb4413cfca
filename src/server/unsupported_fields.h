// The request fields this server refuses: fields of OpenAI's API (and a few
// common extensions of vLLM and llama-server) that would change what the
// answer must be, and that the server does not implement. Ignoring them
// would return a 200 with an answer the client did not ask for (free text
// instead of JSON, no tool call, ...), so each gets a 400 naming the field,
// code "unsupported_parameter". A field set to its neutral value (null,
// false, an empty list, tool_choice "none", ...) is accepted: it asks for
// nothing the server does not do. The structured-output fields
// (response_format, grammar, guided_json, ...) are structured_output.h's.
//
// Fields that only tune or annotate (user, metadata, store, service_tier,
// prediction, ...) are not checked here: they are ignored. docs/serving.md
// lists the supported, ignored and refused fields; keep it in step.
//
// Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "server/api_error.h"
#include "server/json_fields.h"

namespace omnibus::server {

// The first refused top-level field of a request body, if any. `n` is the
// request's (already parsed) number of choices, for best_of.
std::optional<ApiError> check_unsupported_fields(const Json& body, bool is_chat, int32_t n);

// The 400 for a field that would change the answer and is not implemented
// (code "unsupported_parameter"): `param` names it, `what` says why.
ApiError unsupported_field(const std::string& param, const std::string& what);

// The first refused field of one chat message (function_call,
// audio); `param` names the message, e.g. "messages[2]".
std::optional<ApiError> check_unsupported_message_fields(const Json& message, const std::string& param);

}  // namespace omnibus::server
