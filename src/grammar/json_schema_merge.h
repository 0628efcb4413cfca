// allOf for the JSON Schema converter (json_schema_grammar.h): the parts a
// value must all satisfy, merged into one schema the converter can write.
// Internal to grammar/.
#pragma once

#include <string>
#include <vector>

#include "grammar/json_schema_vocabulary.h"

namespace omnibus::json_schema {

// The parts of an allOf (with $ref targets in `root` and nested allOf
// pulled in) as one schema, or invalid_argument naming what cannot be
// merged (`path` says where). Bounds take the tighter value, required lists
// join, types and enums intersect, a property's schemas are joined in an
// allOf, and a property that some part's additionalProperties false rules
// out is dropped. Other keywords must agree where several parts have them.
Result<Json> merge_schemas(const Json& root, const std::vector<Json>& members, const std::string& path);

}  // namespace omnibus::json_schema
