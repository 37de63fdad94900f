// `memsnap check` output: text lines, JSON, JUnit XML.
#include "memsnap/report/check.hpp"

#include <map>

#include "json_util.hpp"
#include "memsnap/report/escape.hpp"
#include "memsnap/util/terminal.hpp"
#include "memsnap/util/version.hpp"
#include "text_util.hpp"

namespace memsnap::report {

const char* to_string(CheckStatus s) {
  switch (s) {
    case CheckStatus::Pass: return "PASS";
    case CheckStatus::Fail: return "FAIL";
    case CheckStatus::Error: return "ERROR";
    case CheckStatus::Skip: return "SKIP";
  }
  return "?";
}

CheckTotals check_totals(const std::vector<CheckLine>& lines) {
  CheckTotals t;
  for (const auto& l : lines) {
    if (l.status == CheckStatus::Error) {
      ++t.errors;
      continue;
    }
    ++t.checks;
    if (l.status == CheckStatus::Pass)
      ++t.passed;
    else if (l.status == CheckStatus::Skip)
      ++t.skipped;
    else
      ++t.failed;
  }
  return t;
}

namespace {

/// "max-reserved" -> "reserved", "no-leaks" -> "leaks".
std::string short_name(const std::string& check) {
  if (check.rfind("max-", 0) == 0) return check.substr(4);
  if (check.rfind("no-", 0) == 0) return check.substr(3);
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
  for (const auto& l : lines) {
    if (l.status == CheckStatus::Error) {
      out << "ERROR " << detail::display_path(l.file, width - 6) << '\n'
          << detail::wrap_block(detail::term(l.message, 1000), width, 6);
      continue;
    }
    bool skip = l.status == CheckStatus::Skip;
    const char* op = skip ? "  " : l.status == CheckStatus::Pass ? "<=" : "> ";
    out << pad_right(to_string(l.status), kStatus) << ' ' << pad_right(short_name(l.check), kCheck) << ' '
        << pad_left(skip ? "-" : l.figure_text, kNum) << ' ' << op << ' ' << pad_right(skip ? "" : l.limit_text, kNum)
        << ' ' << pad_right(device_text(l.device), kDev) << ' ' << detail::display_path(l.file, name_w) << '\n';
    if (skip) out << detail::wrap_block(detail::term(l.message, 1000), width, 6);
  }
  CheckTotals t = check_totals(lines);
  out << t.checks << (t.checks == 1 ? " check: " : " checks: ") << t.passed << " passed, " << t.failed << " failed";
  if (t.skipped) out << ", " << t.skipped << " not judged";
  if (t.errors) out << ", " << t.errors << (t.errors == 1 ? " file unreadable" : " files unreadable");
  out << '\n';
}

void write_check_json(std::ostream& out, const std::vector<CheckLine>& lines, const nlohmann::ordered_json& limits) {
  using detail::Json;
  CheckTotals t = check_totals(lines);
  Json doc;
  doc["schema_version"] = kSchemaVersion;
  doc["tool"] = {{"name", "memsnap"}, {"version", kVersion}};
  doc["status"] = t.errors ? "error" : t.failed ? "fail" : "pass";
  doc["limits"] = limits;
  doc["summary"] = {
      {"checks", t.checks}, {"passed", t.passed}, {"failed", t.failed}, {"errors", t.errors}, {"skipped", t.skipped}};
  Json results = Json::array(), errors = Json::array();
  for (const auto& l : lines) {
    if (l.status == CheckStatus::Error) {
      errors.push_back({{"file", l.file}, {"message", l.message}});
      continue;
    }
    Json r = {{"file", l.file},
              {"device", detail::opt(l.device)},
              {"check", l.check},
              {"status", l.status == CheckStatus::Pass   ? "pass"
                         : l.status == CheckStatus::Skip ? "skip"
                                                         : "fail"},
              {"figure", l.figure},
              {"limit", l.limit},
              {"figure_text", l.figure_text},
              {"limit_text", l.limit_text},
              {"field", l.what}};
    if (l.status == CheckStatus::Skip) r["reason"] = l.message;
    results.push_back(std::move(r));
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
      std::string name = l->check + (l->device ? " (device " + std::to_string(*l->device) + ")" : "");
      out << "    <testcase name=\"" << xml_text(name) << "\" classname=\"" << f << "\"";
      if (l->status == CheckStatus::Pass) {
        out << "/>\n";
        continue;
      }
      if (l->status == CheckStatus::Skip) {
        out << ">\n      <skipped message=\"" << xml_text(l->message) << "\"/>\n    </testcase>\n";
        continue;
      }
      std::string msg = l->check + ": " + l->figure_text + " > limit " + l->limit_text +
                        (l->device ? " on device " + std::to_string(*l->device) : "");
      out << ">\n      <failure message=\"" << xml_text(msg) << "\" type=\"" << xml_text(l->check) << "\">"
          << xml_text(msg + " (" + l->what + ")") << "</failure>\n    </testcase>\n";
    }
    out << "  </testsuite>\n";
  }
  out << "</testsuites>\n";
}

}  // namespace memsnap::report
