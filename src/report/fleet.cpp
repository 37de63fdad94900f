// The fleet summary as JSON and text, and analyze's JSON Lines. The rules are analysis/fleet's.
#include "memsnap/report/fleet.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <string>

#include "json_util.hpp"
#include "memsnap/analysis/leaks.hpp"
#include "memsnap/util/units.hpp"
#include "memsnap/util/version.hpp"
#include "table_names.hpp"
#include "text_util.hpp"

namespace memsnap::report {

namespace {

using analysis::FleetRow;
using detail::Json;

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

Json errors_json(const std::vector<analysis::FleetError>& errors) {
  Json arr = Json::array();
  for (const auto& e : errors) arr.push_back({{"file", e.file}, {"message", e.message}});
  return arr;
}

Json fleet_summary_json(const Fleet& fleet) {
  analysis::FleetTotals t = analysis::fleet_totals(fleet.rows);
  Json rows = Json::array();
  for (const auto& r : fleet.rows) rows.push_back(row_json(r));
  std::vector<std::string> doubled = analysis::doubled_files(fleet.rows);
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
  j["median_peak_allocated_bytes"] = analysis::median_peak(fleet.rows).value();
  j["outlier_rule"] = "peak_allocated_bytes (allocated_bytes without a trace) > 1.5 x the median";
  j["histograms"] = {
      {"peak_allocated_bytes", histogram(fleet.rows, [](const FleetRow& r) { return r.peak_or_allocated(); })},
      {"reserved_bytes", histogram(fleet.rows, [](const FleetRow& r) { return r.reserved_bytes; })}};
  j["rows"] = std::move(rows);
  j["errors"] = errors_json(fleet.errors);
  j["missing"] = errors_json(fleet.missing);
  j["doubled"] = doubled;
  j["complete"] = !fleet_incomplete(fleet);
  return j;
}

/// `text` (a document dumped at indent 2) placed `by` columns further right.
std::string reindent(const std::string& text, size_t by) {
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  std::string pad = "\n" + std::string(by, ' ');
  for (char c : text) {
    if (c == '\n')
      out += pad;
    else
      out += c;
  }
  return out;
}

}  // namespace

FleetFile fleet_file(const Source& src, const analysis::AnalyzeResult& result, const std::string& file) {
  Json doc = detail::analyze_json(src, result);
  doc["file"] = file;
  return {file, detail::dump(doc)};
}

bool fleet_incomplete(const Fleet& fleet) {
  return !fleet.errors.empty() || !fleet.missing.empty() || !analysis::doubled_files(fleet.rows).empty();
}

void finish_fleet(Fleet& fleet, bool sort_files) {
  analysis::finish_rows(fleet.rows, fleet.errors);
  std::sort(fleet.missing.begin(), fleet.missing.end(),
            [](const auto& a, const auto& b) { return std::tie(a.file, a.message) < std::tie(b.file, b.message); });
  if (sort_files)
    std::sort(fleet.files.begin(), fleet.files.end(), [](const FleetFile& a, const FleetFile& b) {
      return std::tie(a.name, a.json) < std::tie(b.name, b.json);
    });
}

void write_fleet_json_begin(std::ostream& out) {
  Json tool = {{"name", "memsnap"}, {"version", kVersion}};
  out << "{\n  \"schema_version\": " << kSchemaVersion << ",\n  \"tool\": " << reindent(detail::dump(tool), 2)
      << ",\n  \"files\": [";
}

void write_fleet_json_file(std::ostream& out, const FleetFile& file, bool first) {
  out << (first ? "\n    " : ",\n    ") << reindent(file.json, 4);
}

void write_fleet_json_end(std::ostream& out, const Fleet& fleet, bool any_file) {
  out << (any_file ? "\n  ]" : "]") << ",\n  \"fleet\": " << reindent(detail::dump(fleet_summary_json(fleet)), 2)
      << "\n}\n";
}

void write_fleet_json(std::ostream& out, const Fleet& fleet) {
  write_fleet_json_begin(out);
  for (size_t i = 0; i < fleet.files.size(); ++i) write_fleet_json_file(out, fleet.files[i], i == 0);
  write_fleet_json_end(out, fleet, !fleet.files.empty());
}

void write_jsonl_header(std::ostream& out, const char* command, const std::vector<std::string>& inputs) {
  Json j = {{"schema_version", kSchemaVersion},
            {"tool", {{"name", "memsnap"}, {"version", kVersion}}},
            {"jsonl", command},
            {"inputs", inputs}};
  out << detail::dump(j, -1) << '\n';
}

void write_jsonl_file(std::ostream& out, const Source& src, const analysis::AnalyzeResult& result,
                      const std::string& file) {
  Json doc = detail::analyze_json(src, result);
  doc["file"] = file;
  out << detail::dump(doc, -1) << '\n';
}

void write_jsonl_error(std::ostream& out, const std::string& file, const std::string& message) {
  out << detail::dump(Json{{"file", file}, {"error", message}}, -1) << '\n';
}

void write_jsonl_fleet(std::ostream& out, const Fleet& fleet) {
  out << detail::dump(Json{{"fleet", fleet_summary_json(fleet)}}, -1) << '\n';
}

void write_fleet_text(std::ostream& out, const Fleet& fleet, const TextStyle& style) {
  using detail::pad_left;
  using detail::pad_right;
  size_t width = size_t(std::max(style.width, 60));
  constexpr size_t kNum = 11, kFlag = 4;
  size_t name_w = width - 2 - 1 - 3 * (kNum + 1) - 2 * (kFlag + 1);  // mark, file, 3 sizes, OOM, leaks
  analysis::FleetTotals t = analysis::fleet_totals(fleet.rows);
  uint64_t median = analysis::median_peak(fleet.rows).floor();
  out << "memsnap " << kVersion << "  fleet of " << fleet.rows.size() << (fleet.rows.size() == 1 ? " file" : " files")
      << ", " << t.devices << (t.devices == 1 ? " device" : " devices") << '\n';
  std::string counts = std::to_string(t.oom_files) + " with an OOM, ";
  if (t.oom_unjudged) counts += std::to_string(t.oom_unjudged) + " not judged for OOMs, ";
  counts += std::to_string(t.leak_files) + " leaking, ";
  if (t.leaks_unjudged) counts += std::to_string(t.leaks_unjudged) + " not judged for leaks, ";
  counts += std::to_string(t.outliers) + (t.outliers == 1 ? " outlier" : " outliers");
  if (!fleet.errors.empty()) counts += ", " + std::to_string(fleet.errors.size()) + " unreadable";
  std::vector<std::string> doubled = analysis::doubled_files(fleet.rows);
  if (!fleet.missing.empty()) counts += ", " + std::to_string(fleet.missing.size()) + " missing";
  if (!doubled.empty()) counts += ", " + std::to_string(doubled.size()) + " counted twice";
  out << detail::wrap_block(counts, width, 2);
  out << "  total reserved " << human_bytes(t.reserved) << ", allocated " << human_bytes(t.allocated)
      << ", median peak " << human_bytes(median) << "\n\n";
  out << "  " << pad_right("file", name_w) << ' ' << pad_left("reserved", kNum) << ' ' << pad_left("allocated", kNum)
      << ' ' << pad_left("peak", kNum) << ' ' << pad_left("OOM", kFlag) << ' ' << pad_left("leak", kFlag) << '\n';
  std::vector<const FleetRow*> order;
  for (const auto& r : fleet.rows) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](const FleetRow* a, const FleetRow* b) {
    return a->peak_or_allocated() > b->peak_or_allocated();
  });
  auto count = [](uint64_t n) { return n == 0 ? std::string("-") : std::to_string(n); };
  std::vector<std::string> files;
  for (const FleetRow* r : order) files.push_back(r->file);
  std::vector<std::string> names = detail::table_names(files, name_w);
  for (size_t k = 0; k < order.size(); ++k) {
    const FleetRow* r = order[k];
    out << (r->outlier ? "! " : "  ") << pad_right(names[k], name_w) << ' '
        << pad_left(human_bytes(r->reserved_bytes), kNum) << ' ' << pad_left(human_bytes(r->allocated_bytes), kNum)
        << ' ' << pad_left(r->peak_allocated_bytes ? human_bytes(*r->peak_allocated_bytes) : "-", kNum) << ' '
        << pad_left(r->oom_judged ? count(r->oom_events) : "?", kFlag) << ' '
        << pad_left(r->leaks_judged ? count(r->leaks) : "?", kFlag) << '\n';
  }
  for (const auto& e : fleet.errors)
    out << "  ERROR " << detail::display_path(e.file, width - 8) << '\n'
        << detail::wrap_block(detail::term(e.message, 1000), width, 4);
  for (const auto& m : fleet.missing)
    out << "  MISSING " << detail::display_path(m.file, width - 10) << '\n'
        << detail::wrap_block(detail::term(m.message, 1000), width, 4);
  for (const auto& d : doubled)
    out << "  DOUBLED " << detail::display_path(d, width - 10) << '\n'
        << detail::wrap_block("more than one input holds this file: its figures are counted more than once", width, 4);
  out << "\n";
  out << detail::wrap_block(
      "Rows marked ! are outliers: a peak (allocated at the dump for a file without a trace) above 1.5 x the "
      "median peak of the files (" +
          human_bytes(median) +
          "). OOM: OOM events (?: not judged, no trace, or one whose ring buffer dropped older events); leak: "
          "sites leaking across iterations (?: not judged, fewer than " +
          std::to_string(analysis::kLeakMinIterations) + " iterations found in the file's trace).",
      width, 0);
}

}  // namespace memsnap::report
