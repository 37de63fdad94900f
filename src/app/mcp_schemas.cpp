// The output schemas of the MCP tools: the shape of each command's JSON document, as clients
// validate structuredContent against it (JSON Schema, draft-07 keywords). Each lists the fields
// the document always has, with their types; a document may hold more (fields are added, never
// renamed or dropped: the issues' JSON names are a contract), so no object closes its set.
#include "mcp_tools.hpp"

namespace memsnap::app::mcp {

namespace {

using json = nlohmann::json;
using Fields = std::initializer_list<std::pair<const char*, json>>;

json type(const char* t) {
  return json{{"type", t}};
}
json bytes() {
  return json{{"type", "integer"}, {"minimum", 0}};
}
json integer() {
  return type("integer");
}
json number() {
  return type("number");
}
json text() {
  return type("string");
}
json boolean() {
  return type("boolean");
}
json array_of(json items) {
  return json{{"type", "array"}, {"items", std::move(items)}};
}
json any_array() {
  return type("array");
}
json any_object() {
  return type("object");
}
// The same, or null (a figure the file cannot give, a section that does not apply).
json or_null(json s) {
  if (s.contains("type") && s["type"].is_string()) {
    s["type"] = json::array({s["type"], "null"});
    return s;
  }
  return json{{"anyOf", json::array({std::move(s), type("null")})}};
}
// An object that has every one of `fields` (and perhaps more).
json object(Fields fields) {
  json props = json::object();
  json required = json::array();
  for (const auto& [name, schema] : fields) {
    props[name] = schema;
    required.push_back(name);
  }
  return json{{"type", "object"}, {"properties", std::move(props)}, {"required", std::move(required)}};
}

json tool() {
  return object({{"name", json{{"const", "memsnap"}}}, {"version", text()}});
}
json input() {
  return object({{"path", text()},
                 {"bytes", bytes()},
                 {"compression", text()},
                 {"decoded_bytes", bytes()},
                 {"encoding", text()},
                 {"form", text()},
                 {"legacy_history", boolean()}});
}
// What every document of one snapshot starts with.
json document(Fields fields) {
  json d = object(fields);
  d["properties"]["schema_version"] = integer();
  d["properties"]["tool"] = tool();
  d["required"].push_back("schema_version");
  d["required"].push_back("tool");
  return d;
}

json verdict() {
  return object({{"device", integer()},
                 {"oom", boolean()},
                 {"oom_events", bytes()},
                 {"peak_allocated_bytes", or_null(bytes())},
                 {"peak_reserved_bytes", or_null(bytes())},
                 {"reserved_bytes", bytes()},
                 {"memory_pressure", boolean()},
                 {"training", boolean()},
                 {"finding", or_null(text())},
                 {"severity", or_null(text())}});
}

json totals() {
  return object({{"reserved_bytes", bytes()},
                 {"allocated_bytes", bytes()},
                 {"active_bytes", bytes()},
                 {"requested_bytes", bytes()},
                 {"inactive_bytes", bytes()},
                 {"segments", bytes()},
                 {"blocks", bytes()},
                 {"largest_free_block_bytes", bytes()},
                 {"pending_free_bytes", bytes()},
                 {"internal_free_bytes", bytes()},
                 {"external_free_bytes", bytes()}});
}

json oom() {
  return object({{"event_index", bytes()},
                 {"time_us", or_null(integer())},
                 {"stream", bytes()},
                 {"requested_bytes", bytes()},
                 {"reserved_bytes", bytes()},
                 {"allocated_bytes", bytes()},
                 {"free_cached_bytes", bytes()},
                 {"largest_free_block_bytes", bytes()},
                 {"cause", text()},
                 {"causes", any_array()},
                 {"message", text()},
                 {"site", or_null(text())},
                 {"stack", any_array()},
                 {"advice", any_array()},
                 {"exact", boolean()},
                 {"from_trace", boolean()}});
}

json finding() {
  return object({{"kind", text()}, {"severity", text()}, {"message", text()}, {"advice", text()}, {"bytes", bytes()}});
}

json analyze_device() {
  return object({{"device", integer()},
                 {"unused", boolean()},
                 {"totals", totals()},
                 {"by_pool_stream", any_array()},
                 {"fragmentation", any_object()},
                 {"trace", any_object()},
                 {"peak", or_null(object({{"event_index", integer()},  // -1: at the window's start
                                          {"time_us", or_null(integer())},
                                          {"allocated_bytes", bytes()},
                                          {"reserved_bytes", bytes()},
                                          {"active_bytes", bytes()},
                                          {"top_sites", any_array()}}))},
                 {"peak_reserved", or_null(any_object())},
                 {"iterations", any_object()},
                 {"leaks", any_array()},
                 {"leaks_judged", boolean()},
                 {"oom", or_null(oom())},
                 {"ooms", array_of(oom())},
                 {"oom_events", bytes()},
                 {"verdict", verdict()},
                 {"findings", array_of(finding())}});
}

json site_change() {
  return object({{"site", text()},
                 {"file", text()},
                 {"line", integer()},
                 {"function", text()},
                 {"status", text()},
                 {"before_bytes", bytes()},
                 {"after_bytes", bytes()},
                 {"delta_bytes", integer()},
                 {"before_allocations", bytes()},
                 {"after_allocations", bytes()}});
}

json simulated_run() {
  return object({{"label", text()},
                 {"settings", any_object()},
                 {"capacity_bytes", or_null(bytes())},
                 {"peak_reserved_bytes", bytes()},
                 {"peak_allocated_bytes", bytes()},
                 {"stranded_at_peak_bytes", bytes()},
                 {"fragmentation_at_peak", number()},
                 {"segment_allocs", bytes()},
                 {"segment_frees", bytes()},
                 {"retries", bytes()},
                 {"ooms", bytes()},
                 {"oom", or_null(object({{"event_index", bytes()}, {"requested_bytes", bytes()}}))},
                 {"min_capacity_bytes", or_null(bytes())}});
}

}  // namespace

json analyze_output_schema() {
  return document({{"input", input()},
                   {"allocator_settings", or_null(any_object())},
                   {"time_origin_us", or_null(integer())},
                   {"devices", array_of(analyze_device())},
                   {"device_verdicts", array_of(verdict())},
                   {"warnings", array_of(text())}});
}

json diff_output_schema() {
  json device = object(
      {{"device", integer()},
       {"in_before", boolean()},
       {"in_after", boolean()},
       {"totals_delta", object({{"reserved_bytes", integer()},
                                {"allocated_bytes", integer()},
                                {"active_bytes", integer()},
                                {"requested_bytes", integer()},
                                {"segments", integer()},
                                {"blocks", integer()}})},
       {"segments_only_before", any_array()},
       {"segments_only_after", any_array()},
       {"sites", array_of(site_change())},
       {"peaks", object({{"before", or_null(any_object())},
                         {"after", or_null(any_object())},
                         {"allocated_delta_bytes", or_null(integer())},
                         {"reserved_delta_bytes", or_null(integer())},
                         {"by_role_delta_bytes", or_null(any_object())}})},
       {"peak_moved_phase", or_null(boolean())},
       {"totals_by_role", object({{"before", any_object()}, {"after", any_object()}, {"delta_bytes", any_object()}})},
       {"peak_sites", array_of(site_change())}});
  return document({{"before", input()},
                   {"after", input()},
                   {"process", object({{"relation", text()}, {"evidence", text()}})},
                   {"devices", array_of(device)},
                   {"warnings", array_of(text())}});
}

json simulate_output_schema() {
  return document({{"input", input()},
                   {"device", integer()},
                   {"starts_mid_run", boolean()},
                   {"capacity_source", text()},
                   {"recorded", simulated_run()},
                   {"runs", array_of(simulated_run())}});
}

json events_output_schema() {
  json event = object({{"index", bytes()},
                       {"time_us", or_null(integer())},
                       {"action", text()},
                       {"size_bytes", bytes()},
                       {"address", or_null(bytes())},
                       {"stream", bytes()},
                       {"site", text()},
                       {"allocated_after_bytes", bytes()},
                       {"reserved_after_bytes", bytes()}});
  json device = object({{"device", integer()},
                        {"entries", bytes()},
                        {"around", or_null(text())},
                        {"center_event", or_null(bytes())},
                        {"events", array_of(event)}});
  return document({{"input", input()}, {"time_origin_us", or_null(integer())}, {"devices", array_of(device)}});
}

json segments_output_schema() {
  json segment = object({{"address", bytes()},
                         {"pool", text()},
                         {"stream", bytes()},
                         {"expandable", boolean()},
                         {"size_bytes", bytes()},
                         {"requested_bytes", bytes()},
                         {"free_bytes", bytes()},
                         {"releasable_bytes", bytes()},
                         {"stranded_bytes", bytes()},
                         {"largest_free_block_bytes", bytes()},
                         {"fragmentation", number()},
                         {"blocks", any_array()}});
  json device = object({{"device", integer()},
                        {"regime", text()},
                        {"segments_total", bytes()},
                        {"segments_shown", bytes()},
                        {"segments", array_of(segment)}});
  return document(
      {{"input", input()}, {"order", text()}, {"devices", array_of(device)}, {"warnings", array_of(text())}});
}

// flame writes folded stacks, not JSON: the tool's document carries them whole, with the question
// and their sums.
json flame_output_schema() {
  return document({{"input", object({{"path", text()}})},
                   {"at", text()},
                   {"state", text()},
                   {"device", or_null(integer())},
                   {"bytes", bytes()},
                   {"stacks", bytes()},
                   {"folded", text()}});
}

json check_output_schema() {
  json result = object({{"file", text()},
                        {"device", or_null(integer())},
                        {"check", text()},
                        {"status", json{{"enum", {"pass", "fail", "skip"}}}},
                        {"figure", or_null(number())},
                        {"limit", number()},
                        {"figure_text", text()},
                        {"limit_text", text()}});
  return document({{"status", text()},
                   {"limits", any_object()},
                   {"summary", object({{"checks", bytes()},
                                       {"passed", bytes()},
                                       {"failed", bytes()},
                                       {"errors", bytes()},
                                       {"skipped", bytes()}})},
                   {"results", array_of(result)},
                   {"errors", any_array()}});
}

}  // namespace memsnap::app::mcp
