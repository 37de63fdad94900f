// Many snapshots at once: the fleet summary of `memsnap analyze A B ...` and `memsnap merge`.
//
// A fleet is a list of per-file analyze JSON documents and one summary row per file.
// Everything in the `fleet` object (totals, histograms, median, outliers) is computed
// from the rows alone, and the rows are kept sorted by file name, so combining fleets
// is a union of rows: associative and independent of the order of the inputs.
//
// A row is read from a file's analyze JSON (write_analyze_json's document), never from
// the analysis itself, so `analyze A B` and `merge` of `analyze A` and `analyze B` agree:
//   reserved, allocated   Σ over the file's devices of totals.{reserved,allocated}_bytes
//   peak                  the highest devices[].peak.allocated_bytes (null without a trace)
//   oom_events, leaks     Σ devices[].oom_events, Σ size of devices[].leaks
// Outlier: a file whose peak (allocated at the dump when it has no peak) is above
// 1.5 times the median of all files' peaks.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "memsnap/report/analyze.hpp"

namespace memsnap::report {

using FleetJson = nlohmann::ordered_json;

struct FleetRow {
  std::string file;
  uint64_t devices = 0;
  uint64_t reserved_bytes = 0;
  uint64_t allocated_bytes = 0;
  std::optional<uint64_t> peak_allocated_bytes;
  uint64_t oom_events = 0;
  uint64_t leaks = 0;
  /// Whether "no leak" is a finding: every device with a trace had the iterations leaks
  /// are judged over (analysis::kLeakMinIterations), or a leak was found.
  bool leaks_judged = true;
  /// Whether "no OOM" is a finding: an OOM was seen, or the file has a trace and none
  /// of its traces shows that its ring buffer dropped older events.
  bool oom_judged = true;
  bool outlier = false;  // set by finish_fleet

  /// The figure outliers are judged by: the peak, else allocated at the dump.
  uint64_t peak_or_allocated() const { return peak_allocated_bytes.value_or(allocated_bytes); }
};

/// A file that could not be analysed, with the one-line message.
struct FleetError {
  std::string file;
  std::string message;
};

struct Fleet {
  std::vector<FleetJson> files;  // per-file analyze documents, each with a "file" key
  std::vector<FleetRow> rows;
  std::vector<FleetError> errors;
};

/// A malformed document given to merge: what was wrong, without the file name.
class FleetFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The outlier rule, as the text footnote and the JSON state it.
inline constexpr double kOutlierFactor = 1.5;

/// The row of one file's analyze JSON document. Throws FleetFormatError.
FleetRow fleet_row(const FleetJson& analyze_doc, const std::string& file);
/// Adds a document: a single-file analyze JSON (`file` names it when it has no "file"
/// key) or a fleet document (files + fleet, as write_fleet_json writes). Throws FleetFormatError.
void add_fleet_document(Fleet& fleet, FleetJson doc);
/// Sorts the rows, files and errors by file name (ties by content) and marks the outliers.
/// `sort_files` false keeps the files in the order they were added (argument order).
void finish_fleet(Fleet& fleet, bool sort_files = true);
/// The `fleet` object: counts, totals, median, outlier rule, histograms, rows, errors.
FleetJson fleet_summary_json(const Fleet& fleet);
/// {schema_version, tool, files, fleet}: a document add_fleet_document reads back.
void write_fleet_json(std::ostream& out, const Fleet& fleet);
/// The summary table, worst first (OOM, then peak), outliers marked, within style.width columns.
void write_fleet_text(std::ostream& out, const Fleet& fleet, const TextStyle& style);
/// The index into fleet.rows of the worst file: one with an OOM first, then the highest peak.
std::optional<size_t> worst_row(const Fleet& fleet);

}  // namespace memsnap::report
