// Structured output, the request side: the fields that constrain what a
// choice may say, turned into one parsed Grammar (grammar/grammar.h) that
// every choice of the request shares. The engine keeps each sampled token
// inside it (EngineRequest::grammar).
//
// Accepted, on /v1/completions and /v1/chat/completions alike:
//   response_format {"type": "text"}         no constraint
//   response_format {"type": "json_object"}  any JSON object (OpenAI's JSON mode)
//   response_format {"type": "json_schema", "json_schema": {"name", "schema",
//                    "strict", "description"}}  JSON that the schema accepts
//   response_format {"type": "json_object", "schema": {...}}  the same
//                    (llama-server's spelling)
//   grammar          a GBNF grammar (llama-server; "" asks for nothing)
//   json_schema      a schema (llama-server)
//   guided_json      a schema, or its JSON text (vLLM)
//   guided_grammar   a GBNF grammar (vLLM's field; xgrammar's EBNF is GBNF)
//   guided_choice    a list of strings: the output is one of them (vLLM)
// At most one of them per request; two are a 400 naming both. A bad schema or
// grammar is a 400 whose `param` names the field ("response_format.json_schema
// .schema") and whose message is the converter's or parser's.
//
// Pure functions; safe from any thread.
#pragma once

#include <memory>
#include <string_view>

#include "grammar/grammar.h"
#include "server/api_error.h"
#include "server/json_fields.h"
#include "server/openai_request.h"

namespace omnibus::server {

// The output constraint of a request body (`body`, parsed from `body_text`,
// which is read again for a schema's property order): `out` stays null when
// the request asks for none (no such field, or only neutral values). The GBNF
// text (given, or made from a schema or a choice list) is refused above
// limits.max_grammar_bytes before it is parsed; the parser bounds the rest
// (Grammar::kMaxElements).
MaybeError parse_output_constraint(std::string_view body_text, const Json& body, const ApiLimits& limits,
                                   std::shared_ptr<const Grammar>& out);

}  // namespace omnibus::server
