// `memsnap check` output: text lines, JSON, JUnit XML.
#include "memsnap/report/check.hpp"

#include <map>

#include "json_util.hpp"
#include "memsnap/report/escape.hpp"
#include "memsnap/util/terminal.hpp"
#include "memsnap/util/units.hpp"
#include "memsnap/util/version.hpp"
#include "table_names.hpp"
#include "text_util.hpp"
#include "words.hpp"

namespace memsnap::report {

using analysis::check_totals;
using analysis::CheckLine;
using analysis::CheckStatus;
using analysis::CheckTotals;

std::string check_figure_text(const CheckLine& l) {
  if (l.status == CheckStatus::Skip) return "";
  if (l.ratio) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", l.figure_ratio);
    return buf;
  }
  if (l.check == analysis::CheckKind::NoLeaks || l.check == analysis::CheckKind::NoOom)
    return std::to_string(l.figure.value_or(0));
  return human_bytes(l.figure.value_or(0));
}

std::string check_limit_text(const CheckLine& l) {
  if (l.ratio) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", l.limit_ratio);
    return buf;
  }
  if (l.check == analysis::CheckKind::NoLeaks || l.check == analysis::CheckKind::NoOom) return std::to_string(l.limit);
  return human_bytes(l.limit);
}

// Which pool --max-fragmentation judged, and the floor below which pools are ignored.
std::string fragmentation_note(const CheckLine& l) {
  std::string out = l.pool.empty() ? "no pool strands " + human_bytes(l.floor_bytes) + " or more"
                                   : l.pool + ", stranding " + human_bytes(l.pool_stranded_bytes);
  out += " (pools stranding less than " + human_bytes(l.floor_bytes) + " are ignored";
  if (l.pools_ignored) out += ": " + std::to_string(l.pools_ignored) + " here";
  return out + ")";
}

std::string check_skip_reason(const CheckLine& l) {
  using analysis::SkipReason;
  auto dropped = [&] {
    snapshot::AllocatorSettings s;
    s.trace_alloc_max_entries = l.trace_alloc_max_entries;
    return detail::dropped_events_words(l.trace, s);
  };
  switch (l.skip) {
    case SkipReason::None: return "";
    case SkipReason::PeakWithinDroppedTrace:
      return "not judged: the trace's peak, " + human_bytes(l.skipped_figure) + ", is within the limit, but " +
             dropped() + ": a higher peak among them would not show";
    case SkipReason::TooFewIterations: {
      const analysis::Iterations& it = l.iterations.value_or(analysis::Iterations{});
      return "not judged: leaks are judged over " + std::to_string(analysis::kLeakMinIterations) +
             " iterations or more, and " +
             (it.count ? std::to_string(it.count) + " were found"
                       : "none were found: " + detail::iteration_evidence(it));
    }
    case SkipReason::NoTrace: return "not judged: the device has no trace, and OOM events are recorded only there";
    case SkipReason::OomsDropped: return "not judged: " + dropped() + ": an OOM among them would not show";
    case SkipReason::CapacityUnknown:
      return "not judged: the device's size is unknown (no OOM message gives it): pass --capacity SIZE";
  }
  return "";
}

namespace {

/// "max-reserved" -> "reserved", "no-leaks" -> "leaks".
std::string short_name(analysis::CheckKind kind) {
  std::string check = analysis::to_string(kind);
  if (check.rfind("max-", 0) == 0) return check.substr(4);
  if (check.rfind("no-", 0) == 0) return check.substr(3);
  if (check.rfind("min-", 0) == 0) return check.substr(4);
  return check;
}

std::string device_text(const std::optional<int>& d) {
  return d ? "dev " + std::to_string(*d) : "-";
}

}  // namespace

void write_check_text(std::ostream& out, const std::vector<CheckLine>& lines, const TextStyle& style) {
  using detail::pad_left;
  using detail::pad_right;
  size_t width = size_t(std::max(style.width, 60));
  constexpr size_t kStatus = 5, kCheck = 13, kNum = 10, kDev = 6;
  size_t fixed = kStatus + 1 + kCheck + 1 + kNum + 1 + 2 + 1 + kNum + 1 + kDev + 1;
  size_t name_w = width > fixed + 8 ? width - fixed : 8;
  std::vector<std::string> files;
  for (const auto& l : lines) files.push_back(l.file);
  std::vector<std::string> names = detail::table_names(files, name_w);
  for (size_t k = 0; k < lines.size(); ++k) {
    const CheckLine& l = lines[k];
    if (l.status == CheckStatus::Error) {
      out << "ERROR " << detail::display_path(l.file, width - 6) << '\n'
          << detail::wrap_block(detail::term(l.message, 1000), width, 6);
      continue;
    }
    bool skip = l.status == CheckStatus::Skip;
    const char* op = skip                            ? "  "
                     : l.at_least                    ? (l.status == CheckStatus::Pass ? ">=" : "< ")
                     : l.status == CheckStatus::Pass ? "<="
                                                     : "> ";
    out << pad_right(to_string(l.status), kStatus) << ' ' << pad_right(short_name(l.check), kCheck) << ' '
        << pad_left(skip ? "-" : check_figure_text(l), kNum) << ' ' << op << ' '
        << pad_right(skip ? "" : check_limit_text(l), kNum) << ' ' << pad_right(device_text(l.device), kDev) << ' '
        << names[k] << '\n';
    if (skip) out << detail::wrap_block(detail::term(check_skip_reason(l), 1000), width, 6);
    if (l.check == analysis::CheckKind::MaxFragmentation && !skip)
      out << detail::wrap_block(fragmentation_note(l), width, 6);
    if (l.check == analysis::CheckKind::MinHeadroom && !skip)
      out << detail::wrap_block("free above the reserved peak on a " + human_bytes(l.capacity) + " device", width, 6);
  }
  CheckTotals t = check_totals(lines);
  out << t.checks << (t.checks == 1 ? " check: " : " checks: ") << t.passed << " passed, " << t.failed << " failed";
  if (t.skipped) out << ", " << t.skipped << " not judged";
  if (t.errors) out << ", " << t.errors << (t.errors == 1 ? " file unreadable" : " files unreadable");
  out << '\n';
}

namespace {

detail::Json result_json(const CheckLine& l) {
  using detail::Json;
  bool skip = l.status == CheckStatus::Skip;
  Json r = {
      {"file", l.file},
      {"device", detail::opt(l.device)},
      {"check", analysis::to_string(l.check)},
      {"status", l.status == CheckStatus::Pass   ? "pass"
                 : l.status == CheckStatus::Skip ? "skip"
                                                 : "fail"},
      {"figure", l.ratio ? (skip ? Json(nullptr) : Json(l.figure_ratio)) : detail::opt(l.figure)},
      {"limit", l.ratio ? Json(l.limit_ratio) : Json(l.limit)},
      {"figure_text", check_figure_text(l)},
      {"pool", l.check == analysis::CheckKind::MaxFragmentation && !l.pool.empty() ? Json(l.pool) : Json()},
      {"pool_stranded_bytes", l.check == analysis::CheckKind::MaxFragmentation ? Json(l.pool_stranded_bytes) : Json()},
      {"floor_bytes", l.check == analysis::CheckKind::MaxFragmentation ? Json(l.floor_bytes) : Json()},
      {"capacity_bytes", l.check == analysis::CheckKind::MinHeadroom && l.capacity ? Json(l.capacity) : Json()},
      {"limit_text", check_limit_text(l)},
      {"field", l.field}};
  if (skip) r["reason"] = check_skip_reason(l);
  return r;
}

const char* status_word(const analysis::CheckTotals& t) {
  return t.errors ? "error" : t.failed ? "fail" : "pass";
}

}  // namespace

void write_check_jsonl_file(std::ostream& out, const std::vector<CheckLine>& lines) {
  using detail::Json;
  Json results = Json::array();
  Json j;
  j["file"] = lines.empty() ? std::string() : lines.front().file;
  for (const auto& l : lines) {
    if (l.status == CheckStatus::Error) {
      j["error"] = l.message;
      continue;
    }
    results.push_back(result_json(l));
  }
  j["status"] = status_word(check_totals(lines));
  j["results"] = std::move(results);
  out << detail::dump(j, -1) << '\n';
}

void write_check_jsonl_summary(std::ostream& out, const analysis::CheckTotals& t) {
  detail::Json j = {{"summary",
                     {{"checks", t.checks},
                      {"passed", t.passed},
                      {"failed", t.failed},
                      {"errors", t.errors},
                      {"skipped", t.skipped}}},
                    {"status", status_word(t)}};
  out << detail::dump(j, -1) << '\n';
}

void write_check_json(std::ostream& out, const std::vector<CheckLine>& lines, const analysis::Limits& limits) {
  using detail::Json;
  Json limits_json = Json::object();
  for (analysis::CheckKind k : analysis::kSizeChecks)
    if (limits.size(k)) limits_json[analysis::to_string(k)] = *limits.size(k);
  if (limits.max_fragmentation) limits_json["max-fragmentation"] = *limits.max_fragmentation;
  if (limits.no_leaks) limits_json["no-leaks"] = true;
  if (limits.no_oom) limits_json["no-oom"] = true;
  if (limits.capacity) limits_json["capacity"] = *limits.capacity;
  if (limits.min_headroom) limits_json["min-headroom"] = *limits.min_headroom;
  CheckTotals t = check_totals(lines);
  Json doc;
  doc["schema_version"] = kSchemaVersion;
  doc["tool"] = {{"name", "memsnap"}, {"version", kVersion}};
  doc["status"] = status_word(t);
  doc["limits"] = std::move(limits_json);
  doc["summary"] = {
      {"checks", t.checks}, {"passed", t.passed}, {"failed", t.failed}, {"errors", t.errors}, {"skipped", t.skipped}};
  Json results = Json::array(), errors = Json::array();
  for (const auto& l : lines) {
    if (l.status == CheckStatus::Error) {
      errors.push_back({{"file", l.file}, {"message", l.message}});
      continue;
    }
    results.push_back(result_json(l));
  }
  doc["results"] = std::move(results);
  doc["errors"] = std::move(errors);
  detail::write_json(out, doc);
}

namespace {
/// A string for XML 1.0: control characters and invalid UTF-8 shown escaped as on a terminal
/// ("\x1b"), then & < > " ' escaped (both on the one UTF-8 validator, util/utf8.hpp).
std::string xml_text(std::string_view s) {
  return xml_escape(terminal_safe(s));
}
}  // namespace

void write_check_junit(std::ostream& out, const std::vector<CheckLine>& lines) {
  // One testsuite per file, in the order the files come.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const CheckLine*>> by_file;
  for (const auto& l : lines) {
    auto& v = by_file[l.file];
    if (v.empty()) order.push_back(l.file);
    v.push_back(&l);
  }
  CheckTotals all = check_totals(lines);
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites name=\"memsnap check\" tests=\"" << all.checks + all.errors << "\" failures=\"" << all.failed
      << "\" errors=\"" << all.errors << "\" skipped=\"" << all.skipped << "\">\n";
  for (const auto& file : order) {
    const auto& ls = by_file[file];
    size_t tests = ls.size(), failures = 0, errors = 0, skipped = 0;
    for (const auto* l : ls) {
      failures += l->status == CheckStatus::Fail;
      errors += l->status == CheckStatus::Error;
      skipped += l->status == CheckStatus::Skip;
    }
    std::string f = xml_text(file);
    out << "  <testsuite name=\"" << f << "\" tests=\"" << tests << "\" failures=\"" << failures << "\" errors=\""
        << errors << "\" skipped=\"" << skipped << "\">\n";
    for (const auto* l : ls) {
      if (l->status == CheckStatus::Error) {
        out << "    <testcase name=\"load\" classname=\"" << f << "\">\n      <error message=\"" << xml_text(l->message)
            << "\" type=\"input\"/>\n    </testcase>\n";
        continue;
      }
      std::string check = analysis::to_string(l->check);
      std::string name = check + (l->device ? " (device " + std::to_string(*l->device) + ")" : "");
      out << "    <testcase name=\"" << xml_text(name) << "\" classname=\"" << f << "\"";
      if (l->status == CheckStatus::Pass) {
        out << "/>\n";
        continue;
      }
      if (l->status == CheckStatus::Skip) {
        out << ">\n      <skipped message=\"" << xml_text(check_skip_reason(*l)) << "\"/>\n    </testcase>\n";
        continue;
      }
      std::string msg = check + ": " + check_figure_text(*l) + (l->at_least ? " < limit " : " > limit ") +
                        check_limit_text(*l) + (l->device ? " on device " + std::to_string(*l->device) : "");
      out << ">\n      <failure message=\"" << xml_text(msg) << "\" type=\"" << xml_text(check) << "\">"
          << xml_text(msg + " (" + l->field + ")") << "</failure>\n    </testcase>\n";
    }
    out << "  </testsuite>\n";
  }
  out << "</testsuites>\n";
}

}  // namespace memsnap::report
