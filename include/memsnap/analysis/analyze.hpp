// The one place that decides which analyses run: analyze(snapshot, options) returns
// a value with everything a report prints, per device.
//
//   load (snapshot/) -> analyze (here) -> print (report/)
//
// Per selected device: the state described (the dump, or the replay at --at), its
// accounting, --fits, and, when the device has a trace, one Replay (one pass back to
// the window's start and one forward sweep) from which the peaks, iterations, leaks,
// OOMs and timeline are read. Findings are raised last, by findings.cpp's rules.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "memsnap/analysis/accounting.hpp"
#include "memsnap/analysis/antipatterns.hpp"
#include "memsnap/analysis/churn.hpp"
#include "memsnap/analysis/findings.hpp"
#include "memsnap/analysis/fits.hpp"
#include "memsnap/analysis/gradients.hpp"
#include "memsnap/analysis/iterations.hpp"
#include "memsnap/analysis/kept_after_backward.hpp"
#include "memsnap/analysis/leaks.hpp"
#include "memsnap/analysis/oom.hpp"
#include "memsnap/analysis/page.hpp"
#include "memsnap/analysis/peak.hpp"
#include "memsnap/analysis/replay.hpp"
#include "memsnap/analysis/roles.hpp"
#include "memsnap/analysis/sites.hpp"
#include "memsnap/analysis/timeline.hpp"

namespace memsnap::analysis {

struct AnalyzeOptions {
  std::optional<int> device;       // --device: only this one (must exist)
  std::optional<uint64_t> at;      // --at INDEX: describe the state right after this event
  std::optional<int64_t> at_time;  // --at-time US: ... after the last event at or before this time
  bool trace = true;               // peaks, iterations, leaks, OOMs (off for `segments`)
  IterationOptions iterations;
  OomOptions oom;
  std::optional<FitsQuery> fits;
  size_t top_sites = 10;
  std::optional<TimelineOptions> timeline;  // build a timeline per device
  std::optional<PageOptions> page;          // `memsnap report`: moments, maps and flames per device
  FindingThresholds thresholds;
  RoleRules roles;                  // --role NAME=GLOB
  bool phases_from_ranges = false;  // --phases annotations: the user's record_function ranges are the phases
  unsigned threads = 0;             // devices analysed at once: 0 = one per core, 1 = in this thread
};

/// Where the described state was taken when it is not the dump (--at).
struct AtPoint {
  uint32_t event_index = 0;
  std::optional<int64_t> time_us;
  uint64_t estimated_blocks = 0;  // live blocks whose size the replay inferred from their request
};

/// What in the file shows that the trace is the tail of a ring buffer that
/// dropped older events (an OOM among them would not be in the trace).
enum class DroppedEvents {
  NotShown,    // nothing in the file says so
  Overflowed,  // allocator_settings.trace_alloc_overflowed is true
  Full,        // the trace holds allocator_settings.trace_alloc_max_entries entries
  OneEntry,    // one entry, with memory allocated before it: the ring buffer of one
               // entry that PyTorch 2.0's _record_memory_history(True) keeps by default
};
const char* to_string(DroppedEvents d);  // "not_shown", "overflowed", "full", "one_entry"

struct TraceSummary {
  uint64_t entries = 0;
  std::optional<int64_t> first_time_us;  // of the first entry that has one
  std::optional<int64_t> last_time_us;
  bool consistent = true;
  std::optional<ReplayMismatch> first_mismatch;
  bool window_starts_mid_run = false;
  DroppedEvents dropped = DroppedEvents::NotShown;
  uint64_t estimated_blocks = 0;
  /// The replayed final layout against the dump (set when the trace was replayed).
  std::optional<LayoutCheck> layout;
};

/// Bytes by role at each state analyze reports (roles.hpp); each adds up to the state's
/// allocated bytes.
struct DeviceRoles {
  std::vector<std::string> names;     // by role id: the built-in roles, then the user's
  RoleState dump;                     // of state(): the dump, or --at
  std::vector<RoleWhere> dump_where;  // of state(): where its KV cache, NCCL, autocast blocks are
  std::optional<RoleState> peak;      // at the allocated peak
  std::optional<GradientAccumulation> never_zeroed;
  std::optional<KeptAfterBackward>
      kept_after_backward;      // activations still allocated after it  // gradients added into across steps
  std::vector<RoleState> ooms;  // parallel to ooms.explained
  bool phases_from_annotations = false;
  bool phases_from_ranges = false;    // --phases annotations, and the device has ranges: RoleState::range is the phase
  bool from_trace = false;            // phases and lives decided (else the dumped stacks alone)
  std::vector<std::string> problems;  // a state whose roles did not add up (a bug: warned)
};

struct DeviceAnalysis {
  int device = 0;
  bool unused = false;  // no segments and no trace events
  std::optional<AtPoint> at;
  Accounting accounting;                // of state()
  std::vector<uint32_t> segment_order;  // state()'s segments, worst first (segments_worst_first)
  std::optional<FitsAnswer> fits;
  TraceSummary trace;
  // Without a trace: what is live at the dump, by site (a trace's peak has its own)
  std::vector<SiteBytes> dump_sites;
  OtherSites dump_other_sites;
  Peaks peaks;
  Iterations iterations;
  std::optional<Structure> structure;
  std::vector<Leak> leaks;
  std::vector<GrowingSite> growing;
  OomResult ooms;
  Churn churn;                                 // segment frees: flush-and-retry, empty_cache() calls
  std::optional<BigLayer> big_layer;           // one parameter too large for the device
  std::optional<ModelPerStep> model_per_step;  // a module built anew in the loop
  /// The file shows training (backward or optimizer frames, a train-named caller, an
  /// OOM on another device).
  bool training = false;
  /// The device ran out of memory, the allocator emptied its cache to retry cudaMalloc,
  /// or the peak reserved came within FindingThresholds::pressure_share of a known capacity.
  bool memory_pressure = false;
  std::optional<uint64_t> capacity_bytes;  // --capacity, or what an OOM event tells
  DeviceRoles roles;                       // with AnalyzeOptions::trace
  std::optional<Timeline> timeline;
  std::optional<DevicePage> page;  // with AnalyzeOptions::page
  std::vector<Finding> findings;   // most urgent first

  /// The state the totals, accounting and --fits describe.
  const snapshot::Device& state() const { return replayed_ ? *replayed_ : *dumped_; }
  const snapshot::Device& dumped() const { return *dumped_; }

 private:
  friend struct Analyzer;
  const snapshot::Device* dumped_ = nullptr;
  std::shared_ptr<const snapshot::Device> replayed_;
};

struct AnalyzeResult {
  std::vector<DeviceAnalysis> devices;  // the selected devices, by index
  /// The earliest trace time in the file: the origin of every "+time" in reports.
  std::optional<int64_t> time_origin_us;
  /// Oddities the analyses met (a block whose requested size exceeds its size).
  std::vector<std::string> warnings;
};

/// Analyses the snapshot `ctx` holds. Throws UsageError when --device names no
/// device of the snapshot or --at / --at-time no event of its trace.
AnalyzeResult analyze(const Context& ctx, const AnalyzeOptions& options);

/// The findings of one analysed device, most urgent first (the rules of findings.cpp).
std::vector<Finding> raise_findings(const Context& ctx, const DeviceAnalysis& device, const FindingThresholds& t);

}  // namespace memsnap::analysis
