// merge's reader of analyze JSON: one linear SAX pass, no recursion, no whole-document DOM.
//
// The handler keeps a small DOM (nlohmann::json, whose objects are maps: O(log n) per key,
// so 200,000 keys cost O(n log n)) of only what a row needs: schema_version, file,
// input.path, each device's totals, peak, trace (their scalars), oom_events, leaks_judged,
// the length of leaks, and a fleet document's rows and errors. Anything else is skipped;
// a skipped container where a figure was expected leaves an empty one of its type, so the
// row's type checks still name it. When the files are kept, each file's document is
// written back as text while it is read (the layout write_analyze_json gives), in its
// own key order.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "json_util.hpp"
#include "memsnap/report/check.hpp"
#include "memsnap/report/escape.hpp"
#include "memsnap/report/fleet.hpp"
#include "memsnap/util/version.hpp"

namespace memsnap::report {

namespace {

using Dom = nlohmann::json;  // std::map objects
using analysis::FleetRow;

[[noreturn]] void bad(const std::string& what) {
  throw FleetFormatError(what);
}

// ---- the row, from the small DOM ----------------------------------------------------------

uint64_t sat_add(uint64_t a, uint64_t b) {
  return a + b < a ? UINT64_MAX : a + b;
}

uint64_t get_u64(const Dom& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) bad(where + ": no \"" + key + "\"");
  if (it->is_number_unsigned()) return it->get<uint64_t>();
  if (it->is_number_integer() && it->get<int64_t>() >= 0) return uint64_t(it->get<int64_t>());
  bad(where + "." + key + ": not a non-negative integer");
}

std::optional<uint64_t> get_opt_u64(const Dom& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  return get_u64(obj, key, where);
}

const Dom& get_array(const Dom& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) bad(where + ": no \"" + key + "\"");
  if (!it->is_array()) bad(where + "." + key + ": not an array");
  return *it;
}

std::string get_string(const Dom& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) bad(where + ": no \"" + key + "\"");
  if (!it->is_string()) bad(where + "." + key + ": not a string");
  return it->get<std::string>();
}

bool get_opt_bool(const Dom& obj, const char* key, const std::string& where, bool absent) {
  auto it = obj.find(key);
  if (it == obj.end()) return absent;
  if (!it->is_boolean()) bad(where + "." + key + ": not a boolean");
  return it->get<bool>();
}

void check_schema(const Dom& doc) {
  auto it = doc.find("schema_version");
  if (it == doc.end()) bad("no \"schema_version\": not a memsnap analyze JSON document");
  if (!it->is_number_integer() || it->get<int64_t>() != kSchemaVersion)
    bad("schema_version " + it->dump() + ", this memsnap reads " + std::to_string(kSchemaVersion));
}

/// The name a per-file document goes by: its "file" key, else input.path.
std::string file_name(const Dom& doc) {
  if (auto it = doc.find("file"); it != doc.end() && it->is_string()) return it->get<std::string>();
  if (auto in = doc.find("input"); in != doc.end() && in->is_object()) return get_string(*in, "path", "input");
  bad("no \"file\" and no \"input.path\"");
}

FleetRow row_from_summary(const Dom& r, const std::string& where) {
  if (!r.is_object()) bad(where + ": not an object");
  FleetRow row;
  row.file = get_string(r, "file", where);
  row.devices = get_u64(r, "devices", where);
  row.reserved_bytes = get_u64(r, "reserved_bytes", where);
  row.allocated_bytes = get_u64(r, "allocated_bytes", where);
  row.peak_allocated_bytes = get_opt_u64(r, "peak_allocated_bytes", where);
  row.oom_events = get_u64(r, "oom_events", where);
  row.leaks = get_u64(r, "leaks", where);
  row.leaks_judged = get_opt_bool(r, "leaks_judged", where, true);  // absent from merges before it existed
  row.oom_judged = get_opt_bool(r, "oom_judged", where, true);
  return row;
}

/// The row of an analyze document: the rules of analysis::fleet_row, read from the JSON.
FleetRow row_of(const Dom& doc, const std::string& file) {
  if (!doc.is_object()) bad("not a JSON object");
  FleetRow row;
  row.file = file;
  uint64_t traced_devices = 0, judged_devices = 0, oom_traced = 0, oom_dropped = 0;
  const Dom& devices = get_array(doc, "devices", "document");
  for (size_t i = 0; i < devices.size(); ++i) {
    const Dom& d = devices[i];
    std::string where = "devices[" + std::to_string(i) + "]";
    if (!d.is_object()) bad(where + ": not an object");
    auto totals = d.find("totals");
    if (totals == d.end() || !totals->is_object()) bad(where + ": no \"totals\" object");
    ++row.devices;
    row.reserved_bytes = sat_add(row.reserved_bytes, get_u64(*totals, "reserved_bytes", where + ".totals"));
    row.allocated_bytes = sat_add(row.allocated_bytes, get_u64(*totals, "allocated_bytes", where + ".totals"));
    if (auto peak = d.find("peak"); peak != d.end() && !peak->is_null()) {
      if (!peak->is_object()) bad(where + ".peak: not an object");
      uint64_t p = get_u64(*peak, "allocated_bytes", where + ".peak");
      row.peak_allocated_bytes = std::max(row.peak_allocated_bytes.value_or(0), p);
    }
    if (d.contains("oom_events")) row.oom_events = sat_add(row.oom_events, get_u64(d, "oom_events", where));
    if (d.contains("leaks")) row.leaks = sat_add(row.leaks, get_array(d, "leaks", where).size());
    // Leaks: every device with a trace judged them (a document without leaks_judged, from
    // before it existed, reads as judged). OOMs: a device with a trace that did not drop
    // older events (events_dropped absent: kept).
    auto trace = d.find("trace"), judged = d.find("leaks_judged");
    bool traced = false;
    if (trace != d.end() && trace->is_object()) {
      traced = get_u64(*trace, "entries", where + ".trace") > 0;
      if (traced) {
        ++oom_traced;
        oom_dropped += get_opt_bool(*trace, "events_dropped", where + ".trace", false);
      }
    }
    if (trace != d.end() && trace->is_object() && judged != d.end()) {
      if (!judged->is_boolean()) bad(where + ".leaks_judged: not a boolean");
      traced_devices += traced;
      judged_devices += traced && judged->get<bool>();
    } else {
      ++traced_devices, ++judged_devices;
    }
  }
  row.leaks_judged = row.leaks > 0 || (traced_devices > 0 && judged_devices == traced_devices);
  row.oom_judged = row.oom_events > 0 || (oom_traced > 0 && oom_dropped == 0);
  return row;
}

// ---- the SAX pass -------------------------------------------------------------------------

/// What a container is, which decides what of it is kept.
enum class Ctx : uint8_t {
  Doc,      // an analyze or fleet document (the root, a files[] element, a JSON Lines line)
  Input,    // Doc.input: keep "path"
  Devices,  // Doc.devices
  Device,   // Devices[]: keep totals, peak, trace (their scalars), oom_events, leaks_judged, leaks' length
  Scalars,  // keep the scalars, skip the containers
  Count,    // keep only the number of elements
  Fleet,    // Doc.fleet: rows, errors
  Rows,     // Fleet.rows, Fleet.errors: objects of scalars
  Files,    // Doc.files: each element a Doc, kept as text
  Inputs,   // a JSON Lines header's "inputs": strings
  Skip,     // nothing
};

/// Writes a document back as text while it is read: nlohmann's dump(2) layout.
class TextWriter {
 public:
  std::string out;

  void value_prefix() {
    if (levels_.empty()) return;
    Level& l = levels_.back();
    if (l.object) return;  // the key wrote it
    out += l.count++ ? ",\n" : "\n";
    out.append(2 * levels_.size(), ' ');
  }
  void key(const std::string& k) {
    Level& l = levels_.back();
    out += l.count++ ? ",\n" : "\n";
    out.append(2 * levels_.size(), ' ');
    out += escape(k);
    out += ": ";
  }
  void scalar(const std::string& text) {
    value_prefix();
    out += text;
  }
  void open(bool object) {
    value_prefix();
    out += object ? '{' : '[';
    levels_.push_back({object, 0});
  }
  void close() {
    Level l = levels_.back();
    levels_.pop_back();
    if (l.count) {
      out += '\n';
      out.append(2 * levels_.size(), ' ');
    }
    out += l.object ? '}' : ']';
  }
  size_t depth() const { return levels_.size(); }
  static std::string escape(const std::string& s) { return json_quote(s); }

 private:
  struct Level {
    bool object;
    size_t count;
  };
  std::vector<Level> levels_;
};

class FleetSax {
 public:
  FleetSax(bool keep_files, uint64_t max_bytes, uint64_t used)
      : keep_files_(keep_files), max_bytes_(max_bytes), used_(used) {}

  Dom root;
  std::vector<std::string> file_texts;  // files[] documents (or the root document) as text
  std::string root_text;                // the root document as text, when it is not a fleet document
  bool root_capture_dropped = false;
  std::string error;

  bool null() { return scalar(Dom(nullptr), "null"); }
  bool boolean(bool v) { return scalar(Dom(v), v ? "true" : "false"); }
  bool number_integer(int64_t v) { return scalar(Dom(v), std::to_string(v)); }
  bool number_unsigned(uint64_t v) { return scalar(Dom(v), std::to_string(v)); }
  bool number_float(double v, const std::string&) { return scalar(Dom(v), detail::dump(detail::Json(v), -1)); }
  bool string(std::string& v) {
    std::string text = writers_.empty() ? std::string() : TextWriter::escape(v);
    return scalar(Dom(std::move(v)), text);
  }
  bool binary(std::vector<uint8_t>&) { return scalar(Dom(nullptr), "null"); }
  bool key(std::string& k) {
    Frame& f = stack_.back();
    f.key = std::move(k);
    for (auto& w : writers_) w.writer.key(f.key);
    // A fleet document's own text is not a file's: stop writing the root once it shows it is one.
    if (stack_.size() == 1 && (f.key == "files" || f.key == "fleet") && root_capture_) drop_root_capture();
    return true;
  }
  bool start_object(size_t) { return open(true); }
  bool start_array(size_t) { return open(false); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool parse_error(size_t, const std::string&, const nlohmann::json::exception& e) {
    std::string what = e.what();
    size_t close = what.find("] ");
    error = "not JSON: " +
            (what.rfind("[json.exception", 0) == 0 && close != std::string::npos ? what.substr(close + 2) : what);
    return false;
  }

 private:
  struct Frame {
    Ctx ctx;
    Dom* node;  // where this container's kept children go; null when none are kept
    std::string key;
  };
  struct Capture {
    TextWriter writer;
    size_t depth;  // stack_ size at which the captured document's container sits
    bool root;     // the root document (else a files[] element)
  };
  std::vector<Frame> stack_;
  std::vector<Capture> writers_;  // at most two: the root, and a files[] element within it
  bool keep_files_;
  bool root_capture_ = false;
  uint64_t max_bytes_, used_;

  void drop_root_capture() {
    for (size_t i = 0; i < writers_.size(); ++i)
      if (writers_[i].root) writers_.erase(writers_.begin() + std::ptrdiff_t(i));
    root_capture_ = false;
    root_capture_dropped = true;
  }

  /// The context of a child of the current container, by its key.
  Ctx child_ctx(bool container) const {
    if (stack_.empty()) return Ctx::Doc;
    const Frame& f = stack_.back();
    const std::string& k = f.key;
    switch (f.ctx) {
      case Ctx::Doc:
        if (!container)
          return k == "schema_version" || k == "file" || k == "error" || k == "jsonl" ? Ctx::Scalars : Ctx::Skip;
        if (k == "input") return Ctx::Input;
        if (k == "devices") return Ctx::Devices;
        if (k == "fleet") return Ctx::Fleet;
        if (k == "files") return Ctx::Files;
        if (k == "inputs") return Ctx::Inputs;
        return Ctx::Skip;
      case Ctx::Input: return !container && k == "path" ? Ctx::Scalars : Ctx::Skip;
      case Ctx::Devices: return container ? Ctx::Device : Ctx::Scalars;
      case Ctx::Device:
        if (k == "totals" || k == "peak" || k == "trace") return container ? Ctx::Scalars : Ctx::Scalars;
        if (k == "leaks") return container ? Ctx::Count : Ctx::Scalars;
        if (k == "oom_events" || k == "leaks_judged") return Ctx::Scalars;
        return Ctx::Skip;
      case Ctx::Scalars: return container ? Ctx::Skip : Ctx::Scalars;
      case Ctx::Count: return Ctx::Count;
      case Ctx::Fleet:
        if (k == "rows" || k == "errors") return container ? Ctx::Rows : Ctx::Scalars;
        return container ? Ctx::Skip : Ctx::Scalars;
      case Ctx::Rows: return container ? Ctx::Scalars : Ctx::Scalars;
      case Ctx::Files: return container ? Ctx::Doc : Ctx::Scalars;
      case Ctx::Inputs: return container ? Ctx::Skip : Ctx::Scalars;
      case Ctx::Skip: return Ctx::Skip;
    }
    return Ctx::Skip;
  }

  /// Puts `v` into the current container's kept node; returns where it went (or null).
  Dom* place(Dom v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    Frame& f = stack_.back();
    if (!f.node) return nullptr;
    if (f.node->is_array()) {
      f.node->push_back(std::move(v));
      return &f.node->back();
    }
    Dom& slot = (*f.node)[f.key];
    slot = std::move(v);
    return &slot;
  }

  bool grow(size_t bytes) {
    used_ += bytes;
    if (used_ > max_bytes_) {
      error = "the documents kept for --format json exceed --max-memory";
      return false;
    }
    return true;
  }

  bool scalar(Dom v, const std::string& text) {
    for (auto& w : writers_) w.writer.scalar(text);
    if (!writers_.empty() && !grow(text.size() + 8)) return false;
    Ctx c = child_ctx(false);
    if (!stack_.empty() && stack_.back().ctx == Ctx::Count) v = nullptr;
    if (c != Ctx::Skip || stack_.empty()) place(std::move(v));
    return true;
  }

  bool open(bool object) {
    if (stack_.size() >= kMaxJsonDepth) {
      error = "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
      return false;
    }
    for (auto& w : writers_) w.writer.open(object);
    Ctx c = child_ctx(true);
    bool parent_keeps = stack_.empty() || stack_.back().node;
    Dom* node = nullptr;
    if (parent_keeps) {
      if (c == Ctx::Skip || (!stack_.empty() && stack_.back().ctx == Ctx::Count)) {
        // a placeholder of the right type (Count: one null per element)
        if (!stack_.empty() && stack_.back().ctx == Ctx::Count)
          place(Dom(nullptr));
        else
          place(object ? Dom::object() : Dom::array());
      } else {
        node = place(object ? Dom::object() : Dom::array());
      }
    }
    bool files_elem = !stack_.empty() && stack_.back().ctx == Ctx::Files;
    stack_.push_back({c, (c == Ctx::Skip || (stack_.size() && stack_.back().ctx == Ctx::Count)) ? nullptr : node, {}});
    if (keep_files_ && (stack_.size() == 1 || files_elem)) {
      writers_.push_back({TextWriter{}, stack_.size(), stack_.size() == 1});
      writers_.back().writer.open(object);
      if (stack_.size() == 1) root_capture_ = true;
    }
    return true;
  }

  bool close() {
    for (auto& w : writers_) w.writer.close();
    if (!writers_.empty() && writers_.back().depth == stack_.size()) {
      Capture c = std::move(writers_.back());
      writers_.pop_back();
      if (c.root) {
        root_text = std::move(c.writer.out);
        root_capture_ = false;
      } else {
        file_texts.push_back(std::move(c.writer.out));
      }
    }
    stack_.pop_back();
    return true;
  }
};

/// Parses one JSON document. Throws FleetFormatError.
FleetSax parse(std::string_view text, bool keep_files, uint64_t max_bytes, uint64_t used) {
  FleetSax sax(keep_files, max_bytes, used);
  bool ok = nlohmann::json::sax_parse(text.begin(), text.end(), &sax);
  if (!ok || !sax.error.empty()) bad(sax.error.empty() ? std::string("not JSON") : sax.error);
  return sax;
}

uint64_t kept_bytes(const Fleet& fleet) {
  uint64_t n = 0;
  for (const auto& f : fleet.files) n += f.json.size() + f.name.size();
  return n;
}

/// Adds one parsed document: an analyze document, or a fleet document.
void add_document(Fleet& fleet, FleetSax& sax, bool keep_files) {
  Dom& doc = sax.root;
  if (!doc.is_object()) bad("not a JSON object");
  check_schema(doc);
  if (auto f = doc.find("fleet"); f != doc.end()) {
    if (!f->is_object()) bad("fleet: not an object");
    const Dom& rows = get_array(*f, "rows", "fleet");
    std::vector<FleetRow> new_rows;
    for (size_t i = 0; i < rows.size(); ++i)
      new_rows.push_back(row_from_summary(rows[i], "fleet.rows[" + std::to_string(i) + "]"));
    std::vector<analysis::FleetError> new_errors, new_missing;
    for (auto [key, into] : {std::pair{"errors", &new_errors}, std::pair{"missing", &new_missing}}) {
      if (!f->contains(key)) continue;
      const Dom& errors = get_array(*f, key, "fleet");
      for (size_t i = 0; i < errors.size(); ++i) {
        std::string where = std::string("fleet.") + key + "[" + std::to_string(i) + "]";
        if (!errors[i].is_object()) bad(where + ": not an object");
        into->push_back({get_string(errors[i], "file", where), get_string(errors[i], "message", where)});
      }
    }
    std::vector<FleetFile> new_files;
    if (doc.contains("files")) {
      const Dom& files = doc["files"];
      if (!files.is_array()) bad("files: not an array");
      for (size_t i = 0; i < files.size(); ++i)
        if (!files[i].is_object()) bad("files[" + std::to_string(i) + "]: not an object");
      if (keep_files)
        for (size_t i = 0; i < sax.file_texts.size() && i < files.size(); ++i)
          new_files.push_back({file_name(files[i]), std::move(sax.file_texts[i])});
    }
    for (auto& r : new_rows) fleet.rows.push_back(std::move(r));
    for (auto& e : new_errors) fleet.errors.push_back(std::move(e));
    for (auto& e : new_missing) fleet.missing.push_back(std::move(e));
    for (auto& j : new_files) fleet.files.push_back(std::move(j));
    return;
  }
  if (!doc.contains("devices")) bad("neither \"devices\" (analyze) nor \"fleet\" (analyze of many files, merge)");
  // Its text stopped being kept at a root "files" key (key(): a fleet document's own text is
  // not a file's), so it would be an empty element of the merged "files" (memsnap_fuzz_json).
  if (doc.contains("files")) bad("\"files\" in an analyze document (one with \"devices\" and no \"fleet\")");
  std::string name = file_name(doc);
  FleetRow row = row_of(doc, name);
  fleet.rows.push_back(std::move(row));
  if (keep_files) {
    std::string text = std::move(sax.root_text);
    if (!doc.contains("file")) {  // as analyze of many files names it: a last "file" key
      size_t end = text.rfind('}');
      text.insert(end, ",\n  \"file\": " + TextWriter::escape(name) + "\n");
      if (end >= 1 && text[end - 1] == '\n') text.erase(end - 1, 1);
    }
    fleet.files.push_back({name, std::move(text)});
  }
}

/// Whether `text` is JSON Lines: more than one line, the first non-blank one a whole JSON object.
bool is_json_lines(std::string_view text) {
  size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos || text[start] != '{') return false;
  size_t end = text.find('\n', start);
  if (end == std::string_view::npos || text.find_first_not_of(" \t\r\n", end) == std::string_view::npos)
    return false;  // one line: one document
  return nlohmann::json::accept(text.substr(start, end - start));
}

void add_json_lines(Fleet& fleet, std::string_view text, const FleetReadOptions& o) {
  std::vector<std::string> inputs;  // the header's
  bool header = false, trailer = false, truncated = false;
  std::vector<std::string> seen;
  size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    bool last = text.find_first_not_of(" \t\r\n", end) == std::string_view::npos;
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    std::string where = "line " + std::to_string(line_no);
    std::optional<FleetSax> sax;
    try {
      sax.emplace(parse(line, o.keep_files, o.max_bytes, kept_bytes(fleet)));
    } catch (const FleetFormatError& e) {
      if (!last) bad(where + ": " + e.what());
      truncated = true;  // the last line cut short: a run killed mid-way
      break;
    }
    Dom& doc = sax->root;
    if (!doc.is_object()) bad(where + ": not a JSON object");
    if (doc.contains("inputs")) {
      check_schema(doc);
      for (const auto& i : doc["inputs"])
        if (i.is_string()) inputs.push_back(i.get<std::string>());
      header = true;
      continue;
    }
    if (doc.contains("fleet")) {  // the trailer: the lines above hold its rows
      trailer = true;
      continue;
    }
    if (doc.contains("error") && !doc.contains("devices")) {
      std::string file = get_string(doc, "file", where), message = get_string(doc, "error", where);
      fleet.errors.push_back({file, message});
      seen.push_back(file);
      continue;
    }
    try {
      size_t rows = fleet.rows.size();
      add_document(fleet, *sax, o.keep_files);
      if (fleet.rows.size() > rows) seen.push_back(fleet.rows.back().file);
    } catch (const FleetFormatError& e) {
      bad(where + ": " + e.what());
    }
  }
  if (truncated || (header && !trailer)) {
    std::string shard = o.shard.empty() ? std::string("the input") : o.shard;
    std::sort(seen.begin(), seen.end());
    size_t before = fleet.missing.size();
    for (const auto& i : inputs)
      if (!std::binary_search(seen.begin(), seen.end(), i))
        fleet.missing.push_back({i, "not in " + shard + ", which stops before its end (a run killed mid-way)"});
    if (fleet.missing.size() == before)
      fleet.missing.push_back({shard, "stops before its end (a run killed mid-way): what it did not hold is unknown"});
  }
}

}  // namespace

void add_fleet_input(Fleet& fleet, std::string_view text, const FleetReadOptions& o) {
  if (is_json_lines(text)) return add_json_lines(fleet, text, o);
  FleetSax sax = parse(text, o.keep_files, o.max_bytes, kept_bytes(fleet));
  add_document(fleet, sax, o.keep_files);
}

FleetRow fleet_row_from_json(std::string_view analyze_json, const std::string& file) {
  FleetSax sax = parse(analyze_json, false, UINT64_MAX, 0);
  check_schema(sax.root);
  return row_of(sax.root, file);
}

}  // namespace memsnap::report
