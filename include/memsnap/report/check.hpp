// `memsnap check`: the verdicts of analysis::evaluate_limits as text lines, one JSON
// document or JUnit XML. The rules are analysis/check.hpp's; this words and prints them.
#pragma once

#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "memsnap/analysis/check.hpp"
#include "memsnap/report/analyze.hpp"

namespace memsnap::report {

/// The figure and the limit as printed: "86.00 MiB", "0.412", "3"; "" for a skipped figure.
std::string check_figure_text(const analysis::CheckLine& l);
std::string check_limit_text(const analysis::CheckLine& l);
/// Why a skipped check could not be judged, in words ("" for other lines).
std::string check_skip_reason(const analysis::CheckLine& l);

/// One line per check, within style.width columns: "FAIL  peak  42.64 MiB > 40.00 MiB  dev 0  FILE".
void write_check_text(std::ostream& out, const std::vector<analysis::CheckLine>& lines, const TextStyle& style);
/// {schema_version, tool, status, limits, summary, results}.
void write_check_json(std::ostream& out, const std::vector<analysis::CheckLine>& lines, const analysis::Limits& limits);
/// JSON Lines: one line per file ({file, status, results} or {file, error, ...}), then
/// write_check_jsonl_summary's line ({summary, status}).
void write_check_jsonl_file(std::ostream& out, const std::vector<analysis::CheckLine>& lines);
void write_check_jsonl_summary(std::ostream& out, const analysis::CheckTotals& totals);
/// JUnit XML: one testsuite per file, one testcase per check and device.
void write_check_junit(std::ostream& out, const std::vector<analysis::CheckLine>& lines);

}  // namespace memsnap::report

namespace memsnap::report {

/// A --config document that is not valid: what was wrong, without the file name.
class CheckConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Reads `check --config`'s JSON object (keys: the options without dashes) into `limits`,
/// key by key in the document's order (a key given twice: the last one). Linear in the
/// text; nesting is refused past kMaxJsonDepth levels. Throws CheckConfigError.
void read_check_config(std::string_view text, analysis::Limits& limits);

/// The deepest nesting of arrays and objects a JSON reader of memsnap accepts (merge,
/// check --config): deeper input is refused with one line, never recursed into.
inline constexpr size_t kMaxJsonDepth = 512;

}  // namespace memsnap::report
