// `memsnap check`: the verdict of each limit on each analysed device. The rules live here;
// report/check.hpp words and prints them.
//
//   PASS / FAIL   the figure against the limit (sizes and counts: figure <= limit passes)
//   SKIP          the file cannot answer the check, and a gate that could not look never
//                 says PASS: no leak can be judged without kLeakMinIterations iterations,
//                 no OOM seen without a trace, and neither an OOM nor a higher peak among
//                 the events a ring buffer dropped (DroppedEvents: only a peak above the
//                 limit, or an OOM still in the trace, is a finding there)
//   worst pool    --max-fragmentation judges the highest fragmentation of the device's pools
//                 that strand at least kFragmentationFloorBytes (a small pool stranding a
//                 few MiB is no reason to fail a job); the line names the pool
//   devices       the devices with segments or trace events; every device when none has any
//   --max-peak    the trace's allocated peak, or allocated at the dump without a trace
//   headroom      --capacity SIZE (the device's size) less the trace's reserved peak (reserved at
//                 the dump without a trace), at least --min-headroom (default a tenth of the
//                 capacity); without --capacity an OOM message's size is used, else SKIP
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memsnap/analysis/analyze.hpp"

namespace memsnap::analysis {

/// --max-fragmentation ignores pools that strand less than this.
inline constexpr uint64_t kFragmentationFloorBytes = 32ull << 20;

/// The checks, in the order they are made and printed.
enum class CheckKind { MaxReserved, MaxAllocated, MaxPeak, MaxFragmentation, MaxStranded, NoLeaks, NoOom, MinHeadroom };
const char* to_string(CheckKind k);  // the option without dashes: "max-reserved", ..., "no-oom"
inline constexpr CheckKind kSizeChecks[] = {CheckKind::MaxReserved, CheckKind::MaxAllocated, CheckKind::MaxPeak,
                                            CheckKind::MaxStranded};

/// The limits in force (command line over --config).
struct Limits {
  std::optional<uint64_t> max_reserved, max_allocated, max_peak, max_stranded;
  std::optional<double> max_fragmentation;  // 0 to 1
  bool no_leaks = false, no_oom = false;
  std::optional<uint64_t> capacity;      // --capacity: the device's size, for min-headroom
  std::optional<uint64_t> min_headroom;  // --min-headroom (a tenth of --capacity when only that is given)

  bool any() const;
  /// The size limit of a size check (MaxReserved, MaxAllocated, MaxPeak, MaxStranded).
  std::optional<uint64_t>& size(CheckKind k);
  const std::optional<uint64_t>& size(CheckKind k) const;
};

enum class CheckStatus { Pass, Fail, Error, Skip };
const char* to_string(CheckStatus s);  // "PASS", "FAIL", "ERROR", "SKIP"

/// Why a check was skipped (report/ words it with the figures kept on the line).
enum class SkipReason {
  None,
  PeakWithinDroppedTrace,  // max-peak: the peak is within the limit, but older events were dropped
  TooFewIterations,        // no-leaks: fewer than kLeakMinIterations iterations found
  NoTrace,                 // no-oom: the device has no trace
  OomsDropped,             // no-oom: none in the trace, but older events were dropped
  CapacityUnknown,         // min-headroom: no --capacity, and nothing in the file gives the size
};

/// One check of one file and device; or a file that could not be read (status Error,
/// `message` the one-line error).
struct CheckLine {
  std::string file;
  std::optional<int> device;
  CheckKind check = CheckKind::MaxReserved;
  CheckStatus status = CheckStatus::Pass;
  bool ratio = false;              // max-fragmentation: figure_ratio / limit_ratio
  bool at_least = false;           // min-headroom: the figure passes at or above the limit
  uint64_t capacity = 0;           // min-headroom: the device's size judged against
  std::optional<uint64_t> figure;  // bytes or a count; none when skipped
  uint64_t limit = 0;
  double figure_ratio = 0, limit_ratio = 0;
  std::string field;  // the analyze JSON field the figure is
  // max-fragmentation: the pool judged ("large pool, stream 0"; "" when none passes the
  // floor), its stranded bytes, and the pools below the floor it ignored
  std::string pool;
  uint64_t pool_stranded_bytes = 0;
  uint64_t floor_bytes = 0;
  size_t pools_ignored = 0;
  SkipReason skip = SkipReason::None;
  uint64_t skipped_figure = 0;                     // PeakWithinDroppedTrace: the trace's peak
  TraceSummary trace;                              // PeakWithinDroppedTrace, OomsDropped: what was dropped
  std::optional<int64_t> trace_alloc_max_entries;  // ... and the ring buffer's size
  std::optional<Iterations> iterations;            // TooFewIterations: what was found
  std::string message;                             // Error: why the file could not be read
};

struct CheckTotals {
  size_t checks = 0, passed = 0, failed = 0, errors = 0, skipped = 0;  // checks counts skipped ones
};
CheckTotals check_totals(const std::vector<CheckLine>& lines);

/// The checks of one analysed file, device by device, each in CheckKind order.
std::vector<CheckLine> evaluate_limits(const AnalyzeResult& result, const snapshot::AllocatorSettings& settings,
                                       const Limits& limits, const std::string& file);

}  // namespace memsnap::analysis
