// `memsnap check`: the verdicts of limits on snapshots, as text lines, one JSON document
// or JUnit XML. The figures are computed by the command; this only prints them.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "memsnap/report/analyze.hpp"

namespace memsnap::report {

/// Skip: the file cannot answer the check (no leaks can be judged without five
/// iterations, no OOM seen without a trace). It is shown, counted and reported to JUnit
/// as skipped, and fails nothing: a gate that could not look never says PASS.
enum class CheckStatus { Pass, Fail, Error, Skip };
const char* to_string(CheckStatus s);  // "PASS", "FAIL", "ERROR", "SKIP"

/// One check of one file and device (or a file that could not be read: status Error,
/// `check` empty, `message` the one-line error; or a check the file cannot answer:
/// status Skip, `message` why).
struct CheckLine {
  std::string file;
  std::optional<int> device;
  std::string check;  // the option without dashes: "max-reserved", "no-leaks", ...
  CheckStatus status = CheckStatus::Pass;
  nlohmann::ordered_json figure;  // bytes, a ratio or a count, as in the analyze JSON
  nlohmann::ordered_json limit;
  std::string figure_text;  // "86.00 MiB", "0.412", "3"
  std::string limit_text;
  std::string what;     // the analyze JSON field the figure is, or a note
  std::string message;  // Error: why the file could not be read; Skip: why the check cannot be judged
};

struct CheckTotals {
  size_t checks = 0, passed = 0, failed = 0, errors = 0, skipped = 0;  // checks counts skipped ones
};
CheckTotals check_totals(const std::vector<CheckLine>& lines);

/// One line per check, within style.width columns: "FAIL  peak  42.64 MiB > 40.00 MiB  dev 0  FILE".
void write_check_text(std::ostream& out, const std::vector<CheckLine>& lines, const TextStyle& style);
/// {schema_version, tool, status, limits, summary, results}.
void write_check_json(std::ostream& out, const std::vector<CheckLine>& lines, const nlohmann::ordered_json& limits);
/// JUnit XML: one testsuite per file, one testcase per check and device.
void write_check_junit(std::ostream& out, const std::vector<CheckLine>& lines);

}  // namespace memsnap::report
