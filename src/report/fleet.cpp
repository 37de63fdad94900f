// The fleet summary: rows read from analyze JSON, combined as a union, printed as a table.
#include "memsnap/report/fleet.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <string>

#include "json_util.hpp"
#include "memsnap/analysis/leaks.hpp"
#include "memsnap/util/units.hpp"
#include "memsnap/util/version.hpp"
#include "text_util.hpp"

namespace memsnap::report {

namespace {

using detail::Json;

[[noreturn]] void bad(const std::string& what) {
  throw FleetFormatError(what);
}

uint64_t get_u64(const Json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) bad(where + ": no \"" + key + "\"");
  if (!it->is_number_unsigned()) {
    if (it->is_number_integer() && it->get<int64_t>() >= 0) return it->get<uint64_t>();
    bad(where + "." + key + ": not a non-negative integer");
  }
  return it->get<uint64_t>();
}

std::optional<uint64_t> get_opt_u64(const Json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  return get_u64(obj, key, where);
}

const Json& get_array(const Json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) bad(where + ": no \"" + key + "\"");
  if (!it->is_array()) bad(where + "." + key + ": not an array");
  return *it;
}

std::string get_string(const Json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) bad(where + ": no \"" + key + "\"");
  if (!it->is_string()) bad(where + "." + key + ": not a string");
  return it->get<std::string>();
}

void check_schema(const Json& doc) {
  auto it = doc.find("schema_version");
  if (it == doc.end()) bad("no \"schema_version\": not a memsnap analyze JSON document");
  if (!it->is_number_integer() || it->get<int64_t>() != kSchemaVersion)
    bad("schema_version " + it->dump() + ", this memsnap reads " + std::to_string(kSchemaVersion));
}

/// The name a per-file document goes by: its "file" key, else input.path.
std::string file_name(const Json& doc) {
  if (auto it = doc.find("file"); it != doc.end() && it->is_string()) return it->get<std::string>();
  if (auto in = doc.find("input"); in != doc.end() && in->is_object()) return get_string(*in, "path", "input");
  bad("no \"file\" and no \"input.path\"");
}

FleetRow row_from_summary(const Json& r, const std::string& where) {
  if (!r.is_object()) bad(where + ": not an object");
  FleetRow row;
  row.file = get_string(r, "file", where);
  row.devices = get_u64(r, "devices", where);
  row.reserved_bytes = get_u64(r, "reserved_bytes", where);
  row.allocated_bytes = get_u64(r, "allocated_bytes", where);
  row.peak_allocated_bytes = get_opt_u64(r, "peak_allocated_bytes", where);
  row.oom_events = get_u64(r, "oom_events", where);
  row.leaks = get_u64(r, "leaks", where);
  if (auto j = r.find("leaks_judged"); j != r.end()) {  // absent from merges before it existed
    if (!j->is_boolean()) bad(where + ".leaks_judged: not a boolean");
    row.leaks_judged = j->get<bool>();
  }
  if (auto j = r.find("oom_judged"); j != r.end()) {  // absent from merges before it existed
    if (!j->is_boolean()) bad(where + ".oom_judged: not a boolean");
    row.oom_judged = j->get<bool>();
  }
  return row;
}

Json row_json(const FleetRow& r) {
  return {{"file", r.file},
          {"devices", r.devices},
          {"reserved_bytes", r.reserved_bytes},
          {"allocated_bytes", r.allocated_bytes},
          {"peak_allocated_bytes", detail::opt(r.peak_allocated_bytes)},
          {"oom_events", r.oom_events},
          {"leaks", r.leaks},
          {"oom", r.oom_events > 0},
          {"leaking", r.leaks > 0},
          {"leaks_judged", r.leaks_judged},
          {"oom_judged", r.oom_judged},
          {"outlier", r.outlier}};
}

/// The median of the rows' peaks (allocated when a file has no peak); 0 for no rows.
double median_peak(const std::vector<FleetRow>& rows) {
  if (rows.empty()) return 0;
  std::vector<uint64_t> v;
  v.reserve(rows.size());
  for (const auto& r : rows) v.push_back(r.peak_or_allocated());
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? double(v[n / 2]) : (double(v[n / 2 - 1]) + double(v[n / 2])) / 2;
}

/// Files per power-of-two bucket [2^k, 2^(k+1)) of `figure`, non-empty buckets ascending.
template <class Figure>
Json histogram(const std::vector<FleetRow>& rows, Figure figure) {
  std::map<int, uint64_t> buckets;  // -1: zero bytes
  for (const auto& r : rows) {
    uint64_t v = figure(r);
    buckets[v == 0 ? -1 : int(std::bit_width(v)) - 1] += 1;
  }
  Json arr = Json::array();
  for (auto [k, n] : buckets) {
    uint64_t lo = k < 0 ? 0 : uint64_t{1} << k;
    Json hi = k < 0 ? Json(1) : k >= 63 ? Json(nullptr) : Json(uint64_t{1} << (k + 1));
    arr.push_back({{"min_bytes", lo}, {"max_bytes", hi}, {"files", n}});
  }
  return arr;
}

uint64_t sat_add(uint64_t a, uint64_t b) {
  return a + b < a ? UINT64_MAX : a + b;
}

}  // namespace

FleetRow fleet_row(const FleetJson& doc, const std::string& file) {
  if (!doc.is_object()) bad("not a JSON object");
  FleetRow row;
  row.file = file;
  uint64_t traced_devices = 0, judged_devices = 0, oom_traced = 0, oom_dropped = 0;
  const Json& devices = get_array(doc, "devices", "document");
  for (size_t i = 0; i < devices.size(); ++i) {
    const Json& d = devices[i];
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
    if (auto o = d.find("oom_events"); o != d.end())
      row.oom_events = sat_add(row.oom_events, get_u64(d, "oom_events", where));
    if (auto l = d.find("leaks"); l != d.end()) row.leaks += get_array(d, "leaks", where).size();
    // The devices with a trace must all have judged leaks (analyze's leaks_judged; a
    // document without it, from before it existed, reads as judged, as it was shown).
    auto trace = d.find("trace"), judged = d.find("leaks_judged");
    // OOMs: a device with a trace that did not drop older events (events_dropped;
    // absent from documents before it existed, which read as kept).
    if (trace != d.end() && trace->is_object() && get_u64(*trace, "entries", where + ".trace") > 0) {
      ++oom_traced;
      if (auto dropped = trace->find("events_dropped"); dropped != trace->end()) {
        if (!dropped->is_boolean()) bad(where + ".trace.events_dropped: not a boolean");
        oom_dropped += dropped->get<bool>();
      }
    }
    if (trace != d.end() && trace->is_object() && judged != d.end()) {
      if (!judged->is_boolean()) bad(where + ".leaks_judged: not a boolean");
      bool traced = get_u64(*trace, "entries", where + ".trace") > 0;
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

void add_fleet_document(Fleet& fleet, FleetJson doc) {
  if (!doc.is_object()) bad("not a JSON object");
  check_schema(doc);
  if (auto f = doc.find("fleet"); f != doc.end()) {
    if (!f->is_object()) bad("fleet: not an object");
    const Json& rows = get_array(*f, "rows", "fleet");
    std::vector<FleetRow> new_rows;
    for (size_t i = 0; i < rows.size(); ++i)
      new_rows.push_back(row_from_summary(rows[i], "fleet.rows[" + std::to_string(i) + "]"));
    std::vector<FleetError> new_errors;
    if (f->contains("errors")) {
      const Json& errors = get_array(*f, "errors", "fleet");
      for (size_t i = 0; i < errors.size(); ++i) {
        std::string where = "fleet.errors[" + std::to_string(i) + "]";
        if (!errors[i].is_object()) bad(where + ": not an object");
        new_errors.push_back({get_string(errors[i], "file", where), get_string(errors[i], "message", where)});
      }
    }
    std::vector<Json> new_files;
    if (doc.contains("files")) {
      Json& files = doc["files"];
      if (!files.is_array()) bad("files: not an array");
      for (size_t i = 0; i < files.size(); ++i) {
        if (!files[i].is_object()) bad("files[" + std::to_string(i) + "]: not an object");
        new_files.push_back(std::move(files[i]));
      }
    }
    for (auto& r : new_rows) fleet.rows.push_back(std::move(r));
    for (auto& e : new_errors) fleet.errors.push_back(std::move(e));
    for (auto& j : new_files) fleet.files.push_back(std::move(j));
    return;
  }
  if (!doc.contains("devices")) bad("neither \"devices\" (analyze) nor \"fleet\" (analyze of many files, merge)");
  std::string name = file_name(doc);
  FleetRow row = fleet_row(doc, name);
  if (!doc.contains("file")) doc["file"] = name;
  fleet.rows.push_back(std::move(row));
  fleet.files.push_back(std::move(doc));
}

void finish_fleet(Fleet& fleet, bool sort_files) {
  auto by_row = [](const FleetRow& a, const FleetRow& b) {
    auto key = [](const FleetRow& r) {
      return std::tie(r.file, r.devices, r.reserved_bytes, r.allocated_bytes, r.peak_allocated_bytes, r.oom_events,
                      r.leaks, r.leaks_judged);
    };
    return key(a) < key(b);
  };
  std::sort(fleet.rows.begin(), fleet.rows.end(), by_row);
  std::sort(fleet.errors.begin(), fleet.errors.end(), [](const FleetError& a, const FleetError& b) {
    return std::tie(a.file, a.message) < std::tie(b.file, b.message);
  });
  if (sort_files) {
    std::vector<std::pair<std::string, size_t>> keys;  // (file, index): dumps only to break ties
    for (size_t i = 0; i < fleet.files.size(); ++i) keys.emplace_back(file_name(fleet.files[i]), i);
    std::stable_sort(keys.begin(), keys.end(), [&](const auto& a, const auto& b) {
      if (a.first != b.first) return a.first < b.first;
      return fleet.files[a.second].dump() < fleet.files[b.second].dump();
    });
    std::vector<Json> sorted;
    sorted.reserve(keys.size());
    for (auto& [name, i] : keys) sorted.push_back(std::move(fleet.files[i]));
    fleet.files = std::move(sorted);
  }
  double median = median_peak(fleet.rows);
  for (auto& r : fleet.rows) r.outlier = double(r.peak_or_allocated()) > kOutlierFactor * median;
}

namespace {

// What the JSON and the text summaries both count over the rows.
struct FleetTotals {
  uint64_t devices = 0, reserved = 0, allocated = 0, peak_sum = 0, peak_max = 0, ooms = 0, leaks = 0;
  uint64_t oom_files = 0, leak_files = 0, outliers = 0, leaks_unjudged = 0, oom_unjudged = 0;
};

FleetTotals totals_of(const Fleet& fleet) {
  FleetTotals t;
  for (const auto& r : fleet.rows) {
    t.leaks_unjudged += !r.leaks_judged;
    t.oom_unjudged += !r.oom_judged;
    t.devices = sat_add(t.devices, r.devices);
    t.reserved = sat_add(t.reserved, r.reserved_bytes);
    t.allocated = sat_add(t.allocated, r.allocated_bytes);
    t.peak_sum = sat_add(t.peak_sum, r.peak_or_allocated());
    t.peak_max = std::max(t.peak_max, r.peak_or_allocated());
    t.ooms = sat_add(t.ooms, r.oom_events);
    t.leaks = sat_add(t.leaks, r.leaks);
    t.oom_files += r.oom_events > 0;
    t.leak_files += r.leaks > 0;
    t.outliers += r.outlier;
  }
  return t;
}

}  // namespace

FleetJson fleet_summary_json(const Fleet& fleet) {
  FleetTotals t = totals_of(fleet);
  Json rows = Json::array();
  for (const auto& r : fleet.rows) rows.push_back(row_json(r));
  Json errors = Json::array();
  for (const auto& e : fleet.errors) errors.push_back({{"file", e.file}, {"message", e.message}});
  Json j;
  j["files"] = fleet.rows.size();
  j["devices"] = t.devices;
  j["totals"] = {{"reserved_bytes", t.reserved},
                 {"allocated_bytes", t.allocated},
                 {"peak_allocated_bytes", t.peak_sum},
                 {"max_peak_allocated_bytes", t.peak_max},
                 {"oom_events", t.ooms},
                 {"leaks", t.leaks},
                 {"files_with_oom", t.oom_files},
                 {"files_with_leaks", t.leak_files},
                 {"files_leaks_not_judged", t.leaks_unjudged},
                 {"files_oom_not_judged", t.oom_unjudged},
                 {"outliers", t.outliers},
                 {"errors", fleet.errors.size()}};
  j["median_peak_allocated_bytes"] = median_peak(fleet.rows);
  j["outlier_rule"] = "peak_allocated_bytes (allocated_bytes without a trace) > 1.5 x the median";
  j["histograms"] = {
      {"peak_allocated_bytes", histogram(fleet.rows, [](const FleetRow& r) { return r.peak_or_allocated(); })},
      {"reserved_bytes", histogram(fleet.rows, [](const FleetRow& r) { return r.reserved_bytes; })}};
  j["rows"] = std::move(rows);
  j["errors"] = std::move(errors);
  return j;
}

void write_fleet_json(std::ostream& out, const Fleet& fleet) {
  Json doc;
  doc["schema_version"] = kSchemaVersion;
  doc["tool"] = {{"name", "memsnap"}, {"version", kVersion}};
  Json files = Json::array();
  for (const auto& f : fleet.files) files.push_back(f);
  doc["files"] = std::move(files);
  doc["fleet"] = fleet_summary_json(fleet);
  detail::write_json(out, doc);
}

std::optional<size_t> worst_row(const Fleet& fleet) {
  std::optional<size_t> worst;
  for (size_t i = 0; i < fleet.rows.size(); ++i) {
    const auto& r = fleet.rows[i];
    if (!worst) {
      worst = i;
      continue;
    }
    const auto& w = fleet.rows[*worst];
    if (std::pair(r.oom_events > 0, r.peak_or_allocated()) > std::pair(w.oom_events > 0, w.peak_or_allocated()))
      worst = i;
  }
  return worst;
}

void write_fleet_text(std::ostream& out, const Fleet& fleet, const TextStyle& style) {
  using detail::pad_left;
  using detail::pad_right;
  size_t width = size_t(std::max(style.width, 60));
  constexpr size_t kNum = 11, kFlag = 4;
  size_t name_w = width - 2 - 1 - 3 * (kNum + 1) - 2 * (kFlag + 1);  // mark, file, 3 sizes, OOM, leaks
  FleetTotals t = totals_of(fleet);
  double median = median_peak(fleet.rows);
  out << "memsnap " << kVersion << "  fleet of " << fleet.rows.size() << (fleet.rows.size() == 1 ? " file" : " files")
      << ", " << t.devices << (t.devices == 1 ? " device" : " devices") << '\n';
  std::string counts = std::to_string(t.oom_files) + " with an OOM, ";
  if (t.oom_unjudged) counts += std::to_string(t.oom_unjudged) + " not judged for OOMs, ";
  counts += std::to_string(t.leak_files) + " leaking, ";
  if (t.leaks_unjudged) counts += std::to_string(t.leaks_unjudged) + " not judged for leaks, ";
  counts += std::to_string(t.outliers) + (t.outliers == 1 ? " outlier" : " outliers");
  if (!fleet.errors.empty()) counts += ", " + std::to_string(fleet.errors.size()) + " unreadable";
  out << detail::wrap_block(counts, width, 2);
  out << "  total reserved " << human_bytes(t.reserved) << ", allocated " << human_bytes(t.allocated)
      << ", median peak " << human_bytes(uint64_t(median)) << "\n\n";
  out << "  " << pad_right("file", name_w) << ' ' << pad_left("reserved", kNum) << ' ' << pad_left("allocated", kNum)
      << ' ' << pad_left("peak", kNum) << ' ' << pad_left("OOM", kFlag) << ' ' << pad_left("leak", kFlag) << '\n';
  std::vector<const FleetRow*> order;
  for (const auto& r : fleet.rows) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](const FleetRow* a, const FleetRow* b) {
    return a->peak_or_allocated() > b->peak_or_allocated();
  });
  auto count = [](uint64_t n) { return n == 0 ? std::string("-") : std::to_string(n); };
  for (const FleetRow* r : order) {
    out << (r->outlier ? "! " : "  ") << pad_right(detail::display_path(r->file, name_w), name_w) << ' '
        << pad_left(human_bytes(r->reserved_bytes), kNum) << ' ' << pad_left(human_bytes(r->allocated_bytes), kNum)
        << ' ' << pad_left(r->peak_allocated_bytes ? human_bytes(*r->peak_allocated_bytes) : "-", kNum) << ' '
        << pad_left(r->oom_judged ? count(r->oom_events) : "?", kFlag) << ' '
        << pad_left(r->leaks_judged ? count(r->leaks) : "?", kFlag) << '\n';
  }
  for (const auto& e : fleet.errors)
    out << "  ERROR " << detail::display_path(e.file, width - 8) << '\n'
        << detail::wrap_block(detail::term(e.message, 1000), width, 4);
  out << "\n";
  out << detail::wrap_block(
      "Rows marked ! are outliers: a peak (allocated at the dump for a file without a trace) above 1.5 x the "
      "median peak of the files (" +
          human_bytes(uint64_t(median)) +
          "). OOM: OOM events (?: not judged, no trace, or one whose ring buffer dropped older events); leak: "
          "sites leaking across iterations (?: not judged, fewer than " +
          std::to_string(analysis::kLeakMinIterations) + " iterations found in the file's trace).",
      width, 0);
}

}  // namespace memsnap::report
