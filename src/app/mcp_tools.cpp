// The MCP tools: each one's input schema, how its arguments become the command's request, and
// the few words of its summary. A call runs the command in this process (app::run_*) into a
// string bounded by --max-output and hands back the JSON document the command wrote, parsed:
// the structured content is what `memsnap COMMAND --format json` prints for the same question.
#include "mcp_tools.hpp"

#include <algorithm>
#include <functional>
#include <sstream>

#include "memsnap/app/analyze_command.hpp"
#include "memsnap/app/check_command.hpp"
#include "memsnap/app/diff_command.hpp"
#include "memsnap/app/events_command.hpp"
#include "memsnap/app/segments_command.hpp"
#include "memsnap/app/simulate_command.hpp"
#include "memsnap/app/stacks.hpp"
#include "memsnap/io/output_file.hpp"
#include "memsnap/util/units.hpp"
#include "memsnap/util/version.hpp"

namespace memsnap::app::mcp {

namespace {

using json = nlohmann::json;
using Fields = std::initializer_list<std::pair<const char*, json>>;

// ---- input schemas ------------------------------------------------------------------------

json text(const char* description, size_t max_length = 4096) {
  return {{"type", "string"}, {"description", description}, {"minLength", 1}, {"maxLength", max_length}};
}
json whole(const char* description, int64_t minimum, int64_t maximum) {
  return {{"type", "integer"}, {"description", description}, {"minimum", minimum}, {"maximum", maximum}};
}
// A moment of the trace: a word (oom, peak, dump) or an event index.
json point(const char* description) {
  return {{"type", {"string", "integer"}},
          {"description", description},
          {"minLength", 1},
          {"maxLength", 32},
          {"minimum", 0},
          {"maximum", 0xFFFFFFFFll}};
}
json flag(const char* description) {
  return {{"type", "boolean"}, {"description", description}};
}
json file_arg() {
  return text("A snapshot file (pickle, JSON, gzip or zstd) under the paths the server allows");
}
json device_arg() {
  return whole("Only this device (default: all)", 0, 1 << 20);
}
// Arguments: `fields`, of which `required` must be given, and nothing else.
json arguments(Fields fields, std::vector<std::string> required) {
  json props = json::object();
  for (const auto& [name, schema] : fields) props[name] = schema;
  return {{"type", "object"},
          {"properties", std::move(props)},
          {"required", std::move(required)},
          {"additionalProperties", false}};
}

// ---- running a command --------------------------------------------------------------------

CommonOptions common(const ToolEnv& env) {
  CommonOptions o;
  o.format = Format::Json;
  o.no_color = true;
  o.quiet = true;
  o.max_memory = env.max_memory;
  return o;
}

// Runs `command` with its results going into a string of at most env.max_output bytes, and
// parses the document it wrote. A Failure it ends with is the call's error, unless `answers` and
// the document is whole (check: a limit that failed, or a file among several that could not be
// read, is part of the answer).
json run_command(const ToolEnv& env, const std::function<void(std::ostream*)>& command, bool answers = false) {
  std::ostringstream text;
  io::LimitStreamBuf limited(text.rdbuf(), env.max_output,
                             "the result would exceed " + human_bytes(env.max_output) + " (memsnap mcp --max-output)");
  std::ostream out(&limited);
  out.exceptions(std::ios::badbit);
  try {
    command(&out);
  } catch (const Failure&) {
    if (!answers || text.str().empty()) throw;
  }
  json doc = json::parse(std::move(text).str(), nullptr, false);
  if (doc.is_discarded()) throw std::runtime_error("the command's JSON document does not parse");
  return doc;
}

std::string path_of(const json& a, const char* key, const ToolEnv& env) {
  return env.paths.check(a.at(key).get<std::string>());
}

template <class T>
std::optional<T> optional_arg(const json& a, const char* key) {
  if (!a.contains(key)) return std::nullopt;
  return a.at(key).get<T>();
}

std::string string_arg(const json& a, const char* key) {
  return a.contains(key) ? a.at(key).get<std::string>() : std::string();
}

std::string signed_bytes(int64_t v) {
  return (v < 0 ? "-" : "+") + human_bytes(v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v));
}

uint64_t bytes_at(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number_unsigned() ? j[key].get<uint64_t>() : 0;
}

// ---- the tools ----------------------------------------------------------------------------

std::string analyze_summary(const json& doc) {
  std::string out = doc["input"]["path"].get<std::string>() + ":";
  for (const auto& d : doc["devices"]) {
    out += "\ndevice " + std::to_string(d["device"].get<int>()) + ": " +
           human_bytes(bytes_at(d["totals"], "reserved_bytes")) + " reserved, " +
           human_bytes(bytes_at(d["totals"], "allocated_bytes")) + " allocated at the dump";
    if (d["peak"].is_object())
      out += "; peak " + human_bytes(bytes_at(d["peak"], "allocated_bytes")) + " allocated at event " +
             with_commas(bytes_at(d["peak"], "event_index"));
    if (d["oom"].is_object())
      out += "; out of memory at event " + with_commas(bytes_at(d["oom"], "event_index")) + " (" +
             d["oom"]["cause"].get<std::string>() + ")";
    size_t shown = 0;
    for (const auto& f : d["findings"]) {
      if (shown++ == 5) break;
      out += "\n  " + f["severity"].get<std::string>() + " " + f["kind"].get<std::string>();
    }
  }
  return out;
}

ToolResult analyze_tool(const json& a, const ToolEnv& env) {
  AnalyzeRequest r;
  r.files = {path_of(a, "file", env)};
  r.jobs = 1;
  r.common = common(env);
  r.state.device = optional_arg<int>(a, "device");
  r.state.at = optional_arg<uint64_t>(a, "at");
  r.state.at_time = optional_arg<int64_t>(a, "at_time");
  if (r.state.at && r.state.at_time) throw ToolError("at and at_time: give one");
  r.iteration_marker = string_arg(a, "iteration_marker");
  r.capacity = string_arg(a, "capacity");
  r.oom_size = string_arg(a, "oom_size");
  r.oom_message = string_arg(a, "oom_message");
  if (!r.oom_message.empty() && r.oom_message[0] == '@')
    throw ToolError("oom_message: give the message's text itself (@FILE is the command line's)");
  r.fits.size = string_arg(a, "fits");
  r.fits.stream = string_arg(a, "stream");
  if (!r.fits.stream.empty() && r.fits.size.empty()) throw ToolError("stream applies only with fits");
  json doc = run_command(env, [&](std::ostream* into) { run_analyze(r, {}, into); });
  return {doc, analyze_summary(doc)};
}

ToolResult diff_tool(const json& a, const ToolEnv& env) {
  DiffRequest r;
  r.before = path_of(a, "before", env);
  r.after = path_of(a, "after", env);
  r.common = common(env);
  r.top = optional_arg<size_t>(a, "top").value_or(20);
  json doc = run_command(env, [&](std::ostream* into) { run_diff(r, {}, into); });
  std::string out = doc["before"]["path"].get<std::string>() + " -> " + doc["after"]["path"].get<std::string>();
  for (const auto& d : doc["devices"]) {
    const json& t = d["totals_delta"];
    out += "\ndevice " + std::to_string(d["device"].get<int>()) + ": allocated at the dump " +
           signed_bytes(t["allocated_bytes"].get<int64_t>()) + ", reserved " +
           signed_bytes(t["reserved_bytes"].get<int64_t>());
    if (d["peaks"]["allocated_delta_bytes"].is_number())
      out += "; peak allocated " + signed_bytes(d["peaks"]["allocated_delta_bytes"].get<int64_t>());
    if (d["peak_moved_phase"].is_boolean() && d["peak_moved_phase"].get<bool>())
      out += "; the peak moved from " + d["peaks"]["before"]["phase"].get<std::string>() + " to " +
             d["peaks"]["after"]["phase"].get<std::string>();
    if (!d["sites"].empty())
      out += "; largest change " + d["sites"][0]["site"].get<std::string>() + " " +
             signed_bytes(d["sites"][0]["delta_bytes"].get<int64_t>());
  }
  return {doc, out};
}

ToolResult simulate_tool(const json& a, const ToolEnv& env) {
  SimulateRequest r;
  r.file = path_of(a, "file", env);
  r.common = common(env);
  r.device = optional_arg<int>(a, "device");
  if (a.contains("set")) r.sets = a["set"].get<std::vector<std::string>>();
  r.capacity = string_arg(a, "capacity");
  r.min_capacity = a.value("min_capacity", false);
  json doc = run_command(env, [&](std::ostream* into) { run_simulate(r, {}, into); });
  std::string out = "device " + std::to_string(doc["device"].get<int>());
  for (const auto& run : doc["runs"]) {
    out += "\n" + run["label"].get<std::string>() + ": peak reserved " +
           human_bytes(bytes_at(run, "peak_reserved_bytes")) + ", " + std::to_string(bytes_at(run, "ooms")) + " OOMs";
    if (run["min_capacity_bytes"].is_number()) out += ", fits in " + human_bytes(bytes_at(run, "min_capacity_bytes"));
  }
  return {doc, out};
}

ToolResult events_tool(const json& a, const ToolEnv& env) {
  EventsRequest r;
  r.file = path_of(a, "file", env);
  r.common = common(env);
  r.device = optional_arg<int>(a, "device");
  if (a.contains("around"))
    r.around = a["around"].is_string() ? a["around"].get<std::string>() : std::to_string(a["around"].get<uint64_t>());
  r.count = optional_arg<size_t>(a, "count").value_or(40);
  r.stacks = a.value("stacks", false);
  json doc = run_command(env, [&](std::ostream* into) { run_events(r, {}, into); });
  std::string out;
  for (const auto& d : doc["devices"]) {
    out += (out.empty() ? "" : "\n") + std::string("device ") + std::to_string(d["device"].get<int>()) + ": " +
           with_commas(d["events"].size()) + " of " + with_commas(bytes_at(d, "entries")) + " events";
    if (d["center_event"].is_number()) out += " around event " + with_commas(bytes_at(d, "center_event"));
  }
  return {doc, out};
}

ToolResult segments_tool(const json& a, const ToolEnv& env) {
  SegmentsRequest r;
  r.files = {path_of(a, "file", env)};
  r.jobs = 1;
  r.common = common(env);
  r.top = optional_arg<long long>(a, "top").value_or(20);
  r.state.device = optional_arg<int>(a, "device");
  r.state.at = optional_arg<uint64_t>(a, "at");
  r.state.at_time = optional_arg<int64_t>(a, "at_time");
  if (r.state.at && r.state.at_time) throw ToolError("at and at_time: give one");
  json doc = run_command(env, [&](std::ostream* into) { run_segments(r, {}, into); });
  std::string out;
  for (const auto& d : doc["devices"])
    out += (out.empty() ? "" : "\n") + std::string("device ") + std::to_string(d["device"].get<int>()) + ": " +
           with_commas(bytes_at(d, "segments_shown")) + " of " + with_commas(bytes_at(d, "segments_total")) +
           " segments, worst fragmented first (" + d["regime"].get<std::string>() + ")";
  return {doc, out};
}

ToolResult flame_tool(const json& a, const ToolEnv& env) {
  FlameRequest r;
  r.stack.file = path_of(a, "file", env);
  r.stack.device = optional_arg<int>(a, "device");
  r.stack.at = !a.contains("at")     ? std::string("dump")
               : a["at"].is_string() ? a["at"].get<std::string>()
                                     : std::to_string(a["at"].get<uint64_t>());
  const std::string state = a.value("state", std::string("allocated"));
  r.stack.stack.state = state == "active" ? analysis::StackState::Active
                        : state == "all"  ? analysis::StackState::All
                                          : analysis::StackState::Allocated;
  r.stack.stack.cpp = a.value("cpp", false);
  r.stack.max_memory = env.max_memory;
  r.stack.quiet = true;
  r.format = FlameFormat::Folded;
  std::ostringstream text;
  io::LimitStreamBuf limited(text.rdbuf(), env.max_output,
                             "the result would exceed " + human_bytes(env.max_output) + " (memsnap mcp --max-output)");
  std::ostream out(&limited);
  out.exceptions(std::ios::badbit);
  run_flame(r, &out);
  out.flush();
  // Each line is `frame;...;frame BYTES`: the bytes are the last field.
  std::string folded = std::move(text).str();
  uint64_t bytes = 0, stacks = 0;
  for (size_t at = 0; at < folded.size();) {
    size_t end = folded.find('\n', at);
    if (end == std::string::npos) end = folded.size();
    size_t space = folded.rfind(' ', end);
    if (space != std::string::npos && space >= at) bytes += std::stoull(folded.substr(space + 1, end - space - 1));
    ++stacks;
    at = end + 1;
  }
  json doc = {{"schema_version", 1},
              {"tool", {{"name", "memsnap"}, {"version", kVersion}}},
              {"input", {{"path", r.stack.file}}},
              {"at", r.stack.at},
              {"state", analysis::to_string(r.stack.stack.state)},
              {"device", r.stack.device ? json(*r.stack.device) : json(nullptr)},
              {"bytes", bytes},
              {"stacks", stacks},
              {"folded", std::move(folded)}};
  std::string summary = human_bytes(bytes) + " " + state + " in " + with_commas(stacks) + " stacks at " + r.stack.at +
                        " (folded stacks, root frame first, one `frame;...;frame BYTES` line each)";
  return {doc, summary};
}

ToolResult check_tool(const json& a, const ToolEnv& env) {
  CheckRequest r;
  for (const auto& f : a.at("files")) r.files.push_back(env.paths.check(f.get<std::string>()));
  r.jobs = 1;
  r.common = common(env);
  for (const char* name : {"max-reserved", "max-allocated", "max-peak", "max-stranded", "capacity", "min-headroom"}) {
    std::string key(name);
    for (char& c : key)
      if (c == '-') c = '_';
    r.sizes[name] = string_arg(a, key.c_str());
  }
  if (a.contains("max_fragmentation")) r.max_fragmentation = a["max_fragmentation"].dump();
  r.no_leaks = a.value("no_leaks", false);
  r.no_oom = a.value("no_oom", false);
  json doc = run_command(
      env, [&](std::ostream* into) { run_check(r, {}, into); }, /*answers=*/true);
  const json& s = doc["summary"];
  std::string out = doc["status"].get<std::string>() + ": " + std::to_string(bytes_at(s, "checks")) + " checks, " +
                    std::to_string(bytes_at(s, "passed")) + " passed, " + std::to_string(bytes_at(s, "failed")) +
                    " failed, " + std::to_string(bytes_at(s, "skipped")) + " skipped, " +
                    std::to_string(bytes_at(s, "errors")) + " files unreadable";
  for (const auto& l : doc["results"])
    if (l["status"] == "fail")
      out += "\nFAIL " + l["check"].get<std::string>() + " " + l["figure_text"].get<std::string>() + " > " +
             l["limit_text"].get<std::string>() + " in " + l["file"].get<std::string>();
  return {doc, out};
}

std::vector<Tool> make_tools() {
  const json size = {{"type", "string"}, {"minLength", 1}, {"maxLength", 64}};
  auto size_arg = [&](const char* description) {
    json s = size;
    s["description"] = description;
    return s;
  };
  const json at = whole("The allocator state right after trace event INDEX (rebuilt by replay)", 0, 0xFFFFFFFFll);
  const json at_time = whole("The state at the last trace event at or before this time (epoch microseconds)",
                             INT64_MIN / 2, INT64_MAX / 2);
  std::vector<Tool> t;
  t.push_back(
      {"analyze", "Analyze a snapshot",
       "Where the GPU memory of a PyTorch CUDA memory snapshot went, per device: totals, fragmentation, the "
       "peak and what was live at it, iterations and leaks, out-of-memory events with their cause and fix, "
       "and findings. The same JSON as `memsnap analyze --format json`.",
       arguments({{"file", file_arg()},
                  {"device", device_arg()},
                  {"at", at},
                  {"at_time", at_time},
                  {"iteration_marker", text("Where iterations start: a record_function name, a site "
                                            "(train.py:110) or a function name",
                                            512)},
                  {"capacity", size_arg("The GPU's total memory (e.g. 80GiB), to tell memory outside PyTorch")},
                  {"oom_size", size_arg("Explain an OOM the trace does not hold: the \"Tried to allocate\" size")},
                  {"oom_message", text("PyTorch's \"CUDA out of memory\" message, checked against the OOM the "
                                       "file holds or explained from the dumped state",
                                       65536)},
                  {"fits", size_arg("Would a request of SIZE (e.g. 1.5GiB) be served from the cache?")},
                  {"stream", text("Stream of the fits request: decimal or 0x hex (default 0)", 32)}},
                 {"file"}),
       analyze_output_schema(), analyze_tool});
  t.push_back({"diff", "Compare two snapshots",
               "What changed between two snapshots of one job: totals, peaks and live memory by allocation site. The "
               "same JSON as `memsnap diff --format json`.",
               arguments({{"before", file_arg()},
                          {"after", file_arg()},
                          {"top", whole("Changed sites listed (default 20)", 1, 100000)}},
                         {"before", "after"}),
               diff_output_schema(), diff_tool});
  t.push_back(
      {"simulate", "Simulate allocator settings",
       "Run the recorded allocations through a model of PyTorch's caching allocator under other "
       "PYTORCH_CUDA_ALLOC_CONF settings or a smaller device: would it have fit? The same JSON as "
       "`memsnap simulate --format json`.",
       arguments({{"file", file_arg()},
                  {"device", whole("The device to simulate (default: the first OOM, else the largest)", 0, 1 << 20)},
                  {"set",
                   {{"type", "array"},
                    {"description",
                     "One more run per item, e.g. expandable_segments:True, max_split_size_mb:N, "
                     "roundup_power2_divisions:N, garbage_collection_threshold:F (commas join several)"},
                    {"items", text("KEY:VALUE", 256)},
                    {"maxItems", 16}}},
                  {"capacity", size_arg("Device memory the allocator may use, e.g. 40GB")},
                  {"min_capacity", flag("Find by bisection the smallest device on which each run fits")}},
                 {"file"}),
       simulate_output_schema(), simulate_tool});
  t.push_back({"events", "List trace events",
               "The trace events in order around an OOM, the allocated peak or an event index, with allocated and "
               "reserved memory after each. The same JSON as `memsnap events --format json`.",
               arguments({{"file", file_arg()},
                          {"around", point("oom (the first out-of-memory event), peak (the allocated peak) or an "
                                           "event index (default: from the first event)")},
                          {"count", whole("Events listed per device (default 40)", 1, 100000)},
                          {"device", device_arg()},
                          {"stacks", flag("Each event's whole stack (noise frames filtered)")}},
                         {"file"}),
               events_output_schema(), events_tool});
  t.push_back({"segments", "Show the segment map",
               "The allocator's segments, worst fragmented first, each with its blocks, at the dump or after a trace "
               "event. The same JSON as `memsnap segments --format json`.",
               arguments({{"file", file_arg()},
                          {"at", at},
                          {"at_time", at_time},
                          {"device", device_arg()},
                          {"top", whole("Segments per device (default 20; 0: all)", 0, 1000000)}},
                         {"file"}),
               segments_output_schema(), segments_tool});
  t.push_back(
      {"flame", "Memory by call stack",
       "Live memory by full call stack as folded stacks (`frame;...;frame BYTES`, root first), at the dump, "
       "the peak, the OOM or after an event: exactly what `memsnap flame --format folded` writes.",
       arguments({{"file", file_arg()},
                  {"at", point("dump (default), peak, oom or a trace event index")},
                  {"device", whole("Only this device (default: all, each under a <device N> frame)", 0, 1 << 20)},
                  {"state",
                   {{"type", "string"},
                    {"description", "allocated (default), active or all (also cached free blocks)"},
                    {"enum", {"allocated", "active", "all"}}}},
                  {"cpp", flag("Keep C++ frames in stacks that have Python frames")}},
                 {"file"}),
       flame_output_schema(), flame_tool});
  t.push_back(
      {"check", "Check memory limits",
       "PASS, FAIL or SKIP per limit, file and device, as `memsnap check --format json` (a failed limit is "
       "an answer, not an error).",
       arguments({{"files",
                   {{"type", "array"},
                    {"description", "Snapshot files under the allowed paths"},
                    {"items", file_arg()},
                    {"minItems", 1},
                    {"maxItems", 256}}},
                  {"max_reserved", size_arg("Fail when memory reserved at the dump exceeds SIZE (e.g. 20GiB)")},
                  {"max_allocated", size_arg("Fail when memory allocated at the dump exceeds SIZE")},
                  {"max_peak", size_arg("Fail when the trace's peak of allocated memory exceeds SIZE")},
                  {"max_stranded", size_arg("Fail when free memory stranded by live allocations exceeds SIZE")},
                  {"capacity", size_arg("The device's size: adds min-headroom (a tenth of it by default)")},
                  {"min_headroom", size_arg("Fail when the device's size less the reserved peak is under SIZE")},
                  {"max_fragmentation",
                   {{"type", "number"},
                    {"description", "Fail when a pool's fragmentation exceeds F"},
                    {"minimum", 0},
                    {"maximum", 1}}},
                  {"no_leaks", flag("Fail when a site leaks across iterations")},
                  {"no_oom", flag("Fail when the snapshot records an out-of-memory event")}},
                 {"files"}),
       check_output_schema(), check_tool});
  return t;
}

}  // namespace

const std::vector<Tool>& tools() {
  static const std::vector<Tool> all = make_tools();
  return all;
}

const Tool* find_tool(const std::string& name) {
  for (const auto& t : tools())
    if (name == t.name) return &t;
  return nullptr;
}

// ---- checking arguments against an input schema ---------------------------------------------

namespace {

bool has_type(const json& v, const std::string& t) {
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  if (t == "number") return v.is_number();
  if (t == "integer") return v.is_number_integer();
  return false;
}

double as_double(const json& v) {
  return v.is_number_unsigned()  ? double(v.get<uint64_t>())
         : v.is_number_integer() ? double(v.get<int64_t>())
                                 : v.get<double>();
}

std::string list_of(const json& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : ", ") + v.dump();
  return out;
}

}  // namespace

std::string schema_problem(const json& schema, const json& value, const std::string& where) {
  const std::string name = where.empty() ? "arguments" : where;
  if (schema.contains("type")) {
    json types = schema["type"].is_array() ? schema["type"] : json::array({schema["type"]});
    bool ok = false;
    for (const auto& t : types) ok = ok || has_type(value, t.get<std::string>());
    if (!ok) return name + ": must be " + list_of(types) + ", not " + value.type_name();
  }
  if (schema.contains("enum") && std::find(schema["enum"].begin(), schema["enum"].end(), value) == schema["enum"].end())
    return name + ": must be one of " + list_of(schema["enum"]);
  if (value.is_number()) {
    if (schema.contains("minimum") && as_double(value) < as_double(schema["minimum"]))
      return name + ": must be at least " + schema["minimum"].dump();
    if (schema.contains("maximum") && as_double(value) > as_double(schema["maximum"]))
      return name + ": must be at most " + schema["maximum"].dump();
  }
  if (value.is_string()) {
    size_t n = value.get_ref<const std::string&>().size();
    if (schema.contains("minLength") && n < schema["minLength"].get<size_t>()) return name + ": must not be empty";
    if (schema.contains("maxLength") && n > schema["maxLength"].get<size_t>())
      return name + ": longer than " + schema["maxLength"].dump() + " bytes";
  }
  if (value.is_array()) {
    if (schema.contains("minItems") && value.size() < schema["minItems"].get<size_t>())
      return name + ": needs at least " + schema["minItems"].dump() + " items";
    if (schema.contains("maxItems") && value.size() > schema["maxItems"].get<size_t>())
      return name + ": at most " + schema["maxItems"].dump() + " items";
    if (schema.contains("items"))
      for (size_t i = 0; i < value.size(); ++i)
        if (auto p = schema_problem(schema["items"], value[i], name + "[" + std::to_string(i) + "]"); !p.empty())
          return p;
  }
  if (value.is_object()) {
    const json props = schema.value("properties", json::object());
    for (const auto& r : schema.value("required", json::array()))
      if (!value.contains(r.get<std::string>())) return r.get<std::string>() + ": required";
    for (const auto& [key, v] : value.items()) {
      std::string inner = where.empty() ? key : where + "." + key;
      if (props.contains(key)) {
        if (auto p = schema_problem(props[key], v, inner); !p.empty()) return p;
      } else if (schema.value("additionalProperties", true) == false) {
        std::string known;
        for (const auto& [k, unused] : props.items()) known += (known.empty() ? "" : ", ") + k;
        return "unknown argument '" + inner.substr(0, 64) + "' (known: " + known + ")";
      }
    }
  }
  return "";
}

}  // namespace memsnap::app::mcp
