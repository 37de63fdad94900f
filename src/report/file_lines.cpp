// One source file's memory by line as text and JSON, for one snapshot or two.
#include "memsnap/report/file_lines.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "json_util.hpp"
#include "memsnap/util/units.hpp"
#include "memsnap/util/version.hpp"
#include "text_util.hpp"

namespace memsnap::report {

using detail::Json;
using detail::pad_left;
using detail::pad_right;

namespace {

std::string files_text(const std::vector<std::string>& files) {
  std::string out;
  for (const auto& f : files) out += (out.empty() ? "" : ", ") + detail::term(f, 200);
  return out;
}

std::string peak_text(const analysis::DeviceFileLines& d) {
  if (!d.peak_event) return "no peak (no trace)";
  return *d.peak_event < 0 ? "the peak at the window's start"
                           : "the peak (event " + with_commas(uint64_t(*d.peak_event)) + ")";
}

std::string col(const std::string& s, size_t w) {
  return detail::display_width(s) >= w ? " " + s : pad_left(s, w);
}

Json figures(const analysis::LineBytes& l) {
  return {{"at_peak_bytes", l.at_peak},         {"at_dump_bytes", l.at_dump},         {"allocated_bytes", l.allocated},
          {"blocks_at_peak", l.blocks_at_peak}, {"blocks_at_dump", l.blocks_at_dump}, {"allocations", l.allocations}};
}

Json device_json(const analysis::DeviceFileLines& d) {
  Json lines = Json::array();
  for (const auto& l : d.lines) {
    Json j = {{"file", l.file}, {"line", l.line}, {"function", l.function}};
    j.update(figures(l));
    lines.push_back(std::move(j));
  }
  return {{"device", d.device},        {"peak_event_index", detail::opt(d.peak_event)},
          {"trace", d.has_trace},      {"trace_allocations", d.trace_allocations},
          {"lines", std::move(lines)}, {"total", figures(d.total)}};
}

// A line's row: the numbers, then the function cut to what is left of the width.
void line_row(std::ostream& out, const std::string& label, const analysis::LineBytes& l, const std::string& function,
              size_t width) {
  std::string row = pad_left(label, 10) + col(human_bytes(l.at_peak), 12) + col(human_bytes(l.at_dump), 12) +
                    col(human_bytes(l.allocated), 12);
  size_t room = width > row.size() + 4 ? width - row.size() - 2 : 0;
  if (!function.empty() && room >= 8) row += "  " + detail::shorten(detail::term(function, 400), room);
  out << row << '\n';
}

}  // namespace

void write_file_lines_text(std::ostream& out, const Source& src, const analysis::FileLines& v, const TextStyle& style) {
  const size_t width = size_t(std::max(60, std::min(style.width, 160)));
  out << detail::title_line(std::string("memsnap ") + kVersion, src.input.path, width);
  out << detail::wrap("--file " + detail::term(v.query, 200) + " matched " + files_text(v.files), 0, 2, width) << '\n';
  for (const auto& d : v.devices) {
    out << '\n'
        << detail::wrap(
               "device " + std::to_string(d.device) +
                   ": allocated bytes by line, a block counted once per line its stack passes: live at " +
                   peak_text(d) + ", live at the dump, and allocated over the trace (" +
                   (d.has_trace ? "the requested bytes of its " + with_commas(d.trace_allocations) + " allocations"
                                : "no trace") +
                   ")",
               0, 2, width)
        << '\n';
    std::string file;
    for (const auto& l : d.lines) {
      if (l.file != file || file.empty()) {
        file = l.file;
        out << "\n  " << detail::shorten_left(detail::term(file, 400), width - 2) << '\n'
            << pad_left("line", 10) << pad_left("at peak", 12) << pad_left("at dump", 12) << pad_left("allocated", 12)
            << "  function\n";
      }
      line_row(out, std::to_string(l.line), l, l.function, width);
    }
    if (d.lines.empty()) out << "  no allocation's stack passes through these files\n";
    line_row(out, "all lines", d.total, "", width);
  }
}

void write_file_lines_json(std::ostream& out, const Source& src, const analysis::FileLines& v) {
  Json doc;
  doc["schema_version"] = kSchemaVersion;
  doc["tool"] = {{"name", "memsnap"}, {"version", kVersion}};
  doc["input"] = detail::input_json(src.input, src.context.snap);
  doc["file_query"] = v.query;
  doc["matched_files"] = v.files;
  Json devices = Json::array();
  for (const auto& d : v.devices) devices.push_back(device_json(d));
  doc["devices"] = std::move(devices);
  detail::write_json(out, doc);
}

namespace {

// The lines of both sides by (file, line), per device: before's and after's figures.
struct Pair {
  analysis::LineBytes before, after;
};
using Joined = std::map<std::tuple<int, std::string, int64_t>, Pair>;

Joined join(const analysis::FileLines& a, const analysis::FileLines& b) {
  Joined j;
  for (const auto& d : a.devices)
    for (const auto& l : d.lines) j[{d.device, l.file, l.line}].before = l;
  for (const auto& d : b.devices)
    for (const auto& l : d.lines) j[{d.device, l.file, l.line}].after = l;
  return j;
}

std::string change(uint64_t a, uint64_t b) {
  if (a == b) return "0 B";
  return b > a ? "+" + human_bytes(b - a) : "-" + human_bytes(a - b);
}

void pair_row(std::ostream& out, const std::string& label, uint64_t peak_a, uint64_t peak_b, uint64_t dump_a,
              uint64_t dump_b) {
  out << pad_left(label, 9) << col(human_bytes(peak_a), 11) << col(human_bytes(peak_b), 11)
      << col(change(peak_a, peak_b), 12) << col(human_bytes(dump_a), 11) << col(human_bytes(dump_b), 11)
      << col(change(dump_a, dump_b), 12) << '\n';
}

}  // namespace

void write_diff_file_lines_text(std::ostream& out, const Source& before, const Source& after,
                                const analysis::FileLines& a, const analysis::FileLines& b, const TextStyle& style) {
  const size_t width = size_t(std::max(72, std::min(style.width, 160)));
  out << "memsnap " << kVersion << " diff --file " << detail::term(a.query, 200) << '\n'
      << detail::label_path("  before  ", before.input.path, width) << "          matched "
      << detail::wrap(files_text(a.files), 18, 10, width) << '\n'
      << detail::label_path("  after   ", after.input.path, width) << "          matched "
      << detail::wrap(files_text(b.files), 18, 10, width) << '\n';
  Joined j = join(a, b);
  std::map<int, std::pair<analysis::LineBytes, analysis::LineBytes>> totals;
  for (const auto& d : a.devices) totals[d.device].first = d.total;
  for (const auto& d : b.devices) totals[d.device].second = d.total;
  for (const auto& [device, t] : totals) {
    out << "\ndevice " << device << ": bytes by line, a block counted once per line its stack passes\n"
        << pad_left("", 9) << pad_right("   live at the peak", 34) << "   live at the dump\n"
        << pad_left("line", 9) << pad_left("before", 11) << pad_left("after", 11) << pad_left("change", 12)
        << pad_left("before", 11) << pad_left("after", 11) << pad_left("change", 12) << '\n';
    std::string file;
    for (const auto& [key, p] : j) {
      if (std::get<0>(key) != device) continue;
      if (!p.before.at_peak && !p.after.at_peak && !p.before.at_dump && !p.after.at_dump) continue;
      if (std::get<1>(key) != file || file.empty()) {
        file = std::get<1>(key);
        out << "  " << detail::shorten_left(detail::term(file, 400), width - 2) << '\n';
      }
      pair_row(out, std::to_string(std::get<2>(key)), p.before.at_peak, p.after.at_peak, p.before.at_dump,
               p.after.at_dump);
    }
    pair_row(out, "all", t.first.at_peak, t.second.at_peak, t.first.at_dump, t.second.at_dump);
  }
}

void write_diff_file_lines_json(std::ostream& out, const Source& before, const Source& after,
                                const analysis::FileLines& a, const analysis::FileLines& b) {
  Json doc;
  doc["schema_version"] = kSchemaVersion;
  doc["tool"] = {{"name", "memsnap"}, {"version", kVersion}};
  doc["before"] = detail::input_json(before.input, before.context.snap);
  doc["after"] = detail::input_json(after.input, after.context.snap);
  doc["file_query"] = a.query;
  doc["matched_files"] = {{"before", a.files}, {"after", b.files}};
  std::map<int, Json> devices;
  for (const auto& d : a.devices) devices[d.device]["before"] = device_json(d);
  for (const auto& d : b.devices) devices[d.device]["after"] = device_json(d);
  Json lines_by_device = Json::array();
  Joined j = join(a, b);
  for (auto& [device, sides] : devices) {
    Json lines = Json::array();
    for (const auto& [key, p] : j) {
      if (std::get<0>(key) != device) continue;
      const analysis::LineBytes& named = p.after.function.empty() ? p.before : p.after;
      lines.push_back({{"file", std::get<1>(key)},
                       {"line", std::get<2>(key)},
                       {"function", named.function},
                       {"before", figures(p.before)},
                       {"after", figures(p.after)}});
    }
    Json d = {{"device", device},
              {"lines", std::move(lines)},
              {"before", sides.contains("before") ? sides["before"] : Json(nullptr)},
              {"after", sides.contains("after") ? sides["after"] : Json(nullptr)}};
    lines_by_device.push_back(std::move(d));
  }
  doc["devices"] = std::move(lines_by_device);
  detail::write_json(out, doc);
}

}  // namespace memsnap::report
