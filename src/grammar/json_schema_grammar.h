// JSON Schema → GBNF, for structured output (OpenAI `response_format`
// json_schema and json_object). The grammar is then parsed by parse_gbnf
// (grammar.h) and drives the token mask.
//
// The contract is one-sided: every text the grammar accepts is valid under
// the schema; some valid texts are not accepted (one canonical spelling is
// enough for generation). What cannot be expressed exactly is refused with
// invalid_argument, never loosened. Two documented exceptions: oneOf is read
// as anyOf (a grammar cannot check "exactly one"), and formats are close
// approximations (json_schema_vocabulary.cpp; e.g. February 29 is allowed
// in every year).
//
// Shape of the accepted JSON:
// - Whitespace is bounded so a model cannot loop on it: between tokens at
//   most one space, or one newline plus up to 20 spaces/tabs (pretty-printed
//   JSON a few levels deep). None before or after the root value.
// - Strings: JSON escapes \" \\ \/ \b \f \n \r \t \uXXXX; no raw control
//   characters; \u escapes of surrogates only as a valid pair. Inside a
//   `pattern` or `format`, one spelling per character (regex_grammar.h).
// - Numbers: JSON syntax exactly; "integer" has no fraction or exponent.
// - Objects list their properties in the schema's order (required ones
//   always, optional ones may be left out); extra properties, when allowed,
//   come after them, with keys that differ from every listed one. Property
//   order is only kept with nlohmann::ordered_json: nlohmann::json sorts keys.
// - Enum and const values are written compactly, as nlohmann dumps them.
//
// Supported keywords: type (one or a list), enum, const, properties,
// required, additionalProperties (absent means none when `properties` is
// given, any when it is not), items, prefixItems and draft-07 tuple items
// with additionalItems (all prefix items required unless minItems says
// otherwise; no items after them unless items/additionalItems allow),
// minItems, maxItems, uniqueItems (false, or with maxItems <= 1), anyOf,
// oneOf, allOf (merged into one schema; siblings of anyOf/$ref are merged
// into it too), $ref to "#" or any "#/..." pointer ($defs, definitions;
// recursion allowed through an object or array), minLength, maxLength,
// pattern, format (date, time, date-time, uuid, email, hostname, ipv4),
// minimum/maximum/exclusiveMinimum/exclusiveMaximum on integers (any int64
// range), minimum 0 on numbers, and minProperties/maxProperties when the
// listed properties already satisfy them. Annotations (title, description,
// default, examples, $schema, $id, $comment, deprecated, readOnly,
// writeOnly, ...) and unknown keywords are ignored, as JSON Schema says.
// Refused: not, if/then/else, dependent*, contains, patternProperties,
// propertyNames, unevaluated*, multipleOf, $dynamicRef, pattern together
// with format or with a length it does not imply, other bounds on numbers,
// and counts (minItems, maxLength, ...) above 10000.
//
// Without "type", the types are inferred from the keywords present (only
// strings for {"minLength": 1}), which keeps the grammar within the schema.
//
// Thread-safe: no shared state.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace omnibus {

// GBNF text (llama.cpp's grammar syntax, root rule `root`) that accepts
// exactly the JSON texts valid under `schema` (a JSON Schema, draft 2020-12 /
// draft-07 subset). An unsupported keyword or an unsatisfiable/invalid schema
// gives Status::invalid_argument naming it, e.g. "json_schema: unsupported
// keyword 'patternProperties' at /properties/a".
Result<std::string> json_schema_to_gbnf(const nlohmann::json& schema);
// The same, keeping the order of `properties` as written.
Result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema);

// Any JSON object (OpenAI's {"type":"json_object"}): root is an object,
// values any JSON.
std::string json_object_gbnf();

}  // namespace omnibus
