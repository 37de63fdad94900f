// Many snapshots at once: the rules of the fleet summary (`memsnap analyze A B ...`, `merge`).
//
// A fleet is one summary row per file. Everything of the summary (totals, median,
// outliers, the worst file) is computed from the rows alone, and the rows are kept
// sorted by file name, so combining fleets is a union of rows: associative and
// independent of the order of the inputs.
//
// The row of a file, from its analysis (fleet_row below) or from its analyze JSON (the
// reader in report/fleet.hpp, which `merge` uses; a test checks that the two agree):
//   reserved, allocated   Σ over the file's devices of the dumped totals (saturating)
//   peak                  the highest allocated peak of its devices' traces (none without one)
//   oom_events, leaks     Σ OOM events, Σ leaking sites
//   leaks_judged          a leak was found, or every device with a trace had the iterations
//                         leaks are judged over (kLeakMinIterations), and one has a trace
//   oom_judged            an OOM was seen, or the file has a trace and none shows that its
//                         ring buffer dropped older events
// Outlier: a file whose peak (allocated at the dump when it has no peak) is above 1.5
// times the median of all files' peaks, compared in integers (no rounding, no overflow).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memsnap/analysis/analyze.hpp"

namespace memsnap::analysis {

__extension__ typedef unsigned __int128 U128;  // exact products and sums of u64 figures

struct FleetRow {
  std::string file;
  uint64_t devices = 0;
  uint64_t reserved_bytes = 0;
  uint64_t allocated_bytes = 0;
  std::optional<uint64_t> peak_allocated_bytes;
  uint64_t oom_events = 0;
  uint64_t leaks = 0;
  bool leaks_judged = true;
  bool oom_judged = true;
  bool outlier = false;  // set by finish_rows

  /// The figure outliers are judged by: the peak, else allocated at the dump.
  uint64_t peak_or_allocated() const { return peak_allocated_bytes.value_or(allocated_bytes); }
  bool operator==(const FleetRow&) const = default;
};

/// A file that could not be analysed (or a shard that could not be read), with the one-line message.
struct FleetError {
  std::string file;
  std::string message;
  bool operator==(const FleetError&) const = default;
};

/// The outlier rule: strictly above kOutlierNum / kOutlierDen times the median peak.
inline constexpr uint64_t kOutlierNum = 3, kOutlierDen = 2;

/// The row of one analysed file (the rules above).
FleetRow fleet_row(const AnalyzeResult& result, std::string file);

/// The median of the rows' peak_or_allocated(), exactly: `twice` is twice the median
/// (the sum of the two middle values for an even count), so the median is twice / 2.
struct Median {
  U128 twice = 0;
  uint64_t floor() const { return uint64_t(twice / 2); }
  double value() const { return double(uint64_t(twice / 2)) + (twice % 2 ? 0.5 : 0.0); }
};
Median median_peak(const std::vector<FleetRow>& rows);

/// Sorts the rows and errors by file name (ties by content) and marks the outliers.
void finish_rows(std::vector<FleetRow>& rows, std::vector<FleetError>& errors);

/// Whether `a` is a worse file than `b`: one with an OOM first, then the higher peak.
bool worse(const FleetRow& a, const FleetRow& b);
/// The index of the worst row (the first of equals), none for no rows.
std::optional<size_t> worst_row(const std::vector<FleetRow>& rows);

/// What the summaries count over the rows (saturating sums).
struct FleetTotals {
  uint64_t devices = 0, reserved = 0, allocated = 0, peak_sum = 0, peak_max = 0, ooms = 0, leaks = 0;
  uint64_t oom_files = 0, leak_files = 0, outliers = 0, leaks_unjudged = 0, oom_unjudged = 0;
};
FleetTotals fleet_totals(const std::vector<FleetRow>& rows);

/// Files named by more than one row (a rank counted twice), sorted, each once.
std::vector<std::string> doubled_files(const std::vector<FleetRow>& rows);

}  // namespace memsnap::analysis
