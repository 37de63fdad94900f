// The tools of `memsnap mcp` (private to src/app): their names, input and output schemas, and
// how a call becomes a command run in this process.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "memsnap/app/mcp_command.hpp"

namespace memsnap::app::mcp {

/// What every call may touch: the allowed files, and the server's bounds.
struct ToolEnv {
  const PathGuard& paths;
  std::string max_memory;  // each load's bound (--max-memory)
  uint64_t max_output;     // the largest result (--max-output), in bytes
};

/// A tool's answer: the command's JSON document (structuredContent) and a few words (content).
struct ToolResult {
  nlohmann::json structured;
  std::string summary;
};

/// A call that cannot be answered, worded for the model to correct (isError: true): an argument
/// its schema refuses, a path outside --allow, a file that cannot be read.
class ToolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Tool {
  const char* name;
  const char* title;
  const char* description;
  nlohmann::json input_schema;
  nlohmann::json output_schema;
  /// Runs the call (arguments already checked against input_schema); ToolError or the
  /// command's own Failure when it cannot.
  ToolResult (*run)(const nlohmann::json& arguments, const ToolEnv& env);
};

/// Every tool, in the order tools/list gives them.
const std::vector<Tool>& tools();
/// The tool named `name`, or nullptr.
const Tool* find_tool(const std::string& name);

/// "" when `value` satisfies `schema`, else what is wrong, naming the argument ("count: must be
/// at most 100000"). The subset of JSON Schema the input schemas use: type (one or a list),
/// properties, required, additionalProperties false, items, enum, minimum, maximum, minItems,
/// maxItems, minLength, maxLength. Recurses over the schema's depth, never the value's.
std::string schema_problem(const nlohmann::json& schema, const nlohmann::json& value, const std::string& where = "");

/// The output schemas (src/app/mcp_schemas.cpp): each the shape of the command's JSON document.
nlohmann::json analyze_output_schema();
nlohmann::json diff_output_schema();
nlohmann::json simulate_output_schema();
nlohmann::json events_output_schema();
nlohmann::json segments_output_schema();
nlohmann::json flame_output_schema();
nlohmann::json check_output_schema();

}  // namespace memsnap::app::mcp
