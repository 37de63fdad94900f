// `memsnap simulate`: the recorded request sequence run through the allocator model
// under other settings or another device size.
//
// The requests are the trace's own: each alloc's size and stream, each free where the
// program freed it and where its stream's events completed, explicit empty_cache()
// calls, in the recorded order. The allocator model (allocator_model.hpp) decides the
// rest: which block serves each request, when it needs a new segment, when it must
// flush its cache and retry, when it runs out. With the recorded settings and
// capacity the run must reproduce the recorded one (same segment sizes in order,
// same peak reserved, same OOM); the fidelity measured on the file is reported, and
// where it is not identical the what-if figures are estimates.
//
// A trace that starts mid-run (the ring buffer dropped older events) starts from the
// state rewound to the window's start, under every setting: its segments and live
// blocks where the trace says they were (they were allocated before the window, under
// the recorded settings), counted against the capacity. A start state larger than the
// capacity is an OOM at the window's start; a start block the model cannot put where
// the trace says (an inconsistent trace) is allocated by the model instead, and counted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memsnap/analysis/allocator_model.hpp"
#include "memsnap/analysis/replay.hpp"
#include "memsnap/analysis/roles.hpp"
#include "memsnap/analysis/sites.hpp"

namespace memsnap::analysis {

/// What-if by role: `--scale ROLE:F` (factor F) or `--drop ROLE` (factor 0). Every traced alloc
/// of a block with that role (roles.hpp), and every block of it live when the window opens, is
/// F times its request (rounded as the allocator rounds requests: 512 B, and
/// roundup_power2_divisions) or is gone, its frees with it. An estimate: the sizes scale
/// uniformly, where the real change (a smaller batch, sharded optimizer state) would move other
/// roles too.
struct RoleEdit {
  std::string role;
  double factor = 1;  // 0: dropped
  std::string text;   // the option as given ("--scale activation:0.5"), for messages
};
/// The largest --scale factor taken.
inline constexpr double kMaxRoleScale = 1000;
/// Parses the value of --scale (ROLE:F, 0 < F <= kMaxRoleScale) or --drop (ROLE); throws
/// UsageError naming the option. The role name is checked by simulate(), against the roles.
RoleEdit parse_role_scale(const std::string& value);
RoleEdit parse_role_drop(const std::string& value);

struct SimulateOptions {
  std::vector<std::string> sets;     // "KEY:VALUE", one run each
  std::optional<uint64_t> capacity;  // the device size to try; default: the recorded one
  std::string capacity_note;         // how --capacity was read, when a reader could misread it
  bool min_capacity = false;
  std::vector<RoleEdit> role_edits;  // --scale / --drop: a run of their own, and every --set run
  RoleRules roles;                   // --role NAME=GLOB
};

struct SimOom {
  uint32_t event_index = 0;
  uint64_t requested_bytes = 0;  // rounded; at the window's start: the start state's reserved bytes
  std::string site;
  bool at_window_start = false;  // the state alive when the window opens does not fit
  bool over_capacity = false;    // the run held more (requested_bytes) than the size known from here
};

// A run that needs more than the trace shows the device had: the recorded run's own
// reserved bytes are only a lower bound on the device, so this is no OOM.
struct SimNeed {
  uint32_t event_index = 0;
  uint64_t reserved_bytes = 0;  // what the run holds there
  uint64_t shown_bytes = 0;     // the most the trace shows the device held
};

// The run with the recorded settings and device against the trace: every alloc's place (its
// address, or its offset within its expandable range), the segment sizes in order, the peaks
// and the OOM event. Identical only when every comparison agrees and something was compared.
struct Fidelity {
  uint64_t segments_recorded = 0, segments_simulated = 0, segments_matching = 0;  // leading sizes equal
  uint64_t allocs_compared = 0, allocs_matching = 0;
  bool peak_reserved_equal = false, peak_allocated_equal = false;
  bool oom_equal = false;
  std::optional<uint32_t> first_divergence_event;  // the first event where the model parts
  std::string first_divergence;                    // what differs there (or at the peaks)
  /// The replay (following the trace) reported it could not follow from this event.
  std::optional<uint32_t> replay_divergence_event;
  bool compared_nothing() const { return allocs_compared == 0 && segments_recorded == 0 && segments_simulated == 0; }
  bool identical() const {
    return !compared_nothing() && segments_recorded == segments_simulated && segments_matching == segments_recorded &&
           allocs_matching == allocs_compared && peak_reserved_equal && peak_allocated_equal && oom_equal;
  }
};

struct SimRun {
  std::string label;  // "recorded", "as recorded" or the --set text
  ModelSettings settings;
  std::optional<uint64_t> capacity;  // nullopt: no limit known
  uint64_t peak_reserved = 0, peak_allocated = 0;
  uint64_t stranded_at_peak = 0;  // free bytes inside segments that hold live blocks, at the reserved peak
  double fragmentation_at_peak = 0;
  uint64_t segment_allocs = 0, segment_frees = 0, retries = 0;
  uint64_t ooms = 0;
  std::optional<SimOom> oom;                         // the first
  std::optional<SimNeed> need;                       // the first event that needs more than the trace shows
  std::optional<uint64_t> reserved_at_recorded_oom;  // right after the recorded run's first OOM event
  std::optional<uint64_t> min_capacity;
  uint64_t start_blocks_moved = 0;  // start blocks the model could not put where the trace says
  uint64_t unplaced = 0;            // requests not served though there was room (counted as OOMs)
  // With role edits: whether this run applies them, its allocated bytes by role id at its peak
  // allocated, and its layout against the recorded one (a run that scales by 1 is the recorded run).
  bool role_edited = false;
  std::vector<uint64_t> peak_allocated_by_role;
  std::vector<uint64_t> by_role_at_recorded_peak;  // right after the recorded run's peak allocated event
  std::optional<Fidelity> layout;
};

/// One role's edit and its bytes at the peak allocated: of the as-recorded run (before) and of
/// the run with the recorded settings and every edit (after: at its own peak, and at the event
/// of the recorded peak).
struct RoleEditResult {
  RoleEdit edit;
  uint64_t peak_before = 0, peak_after = 0;
  uint64_t at_recorded_peak_after = 0;
  uint64_t blocks = 0;        // traced allocs and window-start blocks of the role
  uint64_t start_blocks = 0;  // of those, alive when the window opens (changed in their recorded segments)
};

struct Simulation {
  int device = 0;
  bool starts_mid_run = false;
  // The recorded run ran out of memory and the trace has no alloc after that: the runs
  // cover only the recorded part of the failing step, not the rest of the job.
  bool ends_at_oom = false;
  uint64_t start_blocks = 0, start_segments = 0;  // alive when the window opens
  uint64_t start_reserved = 0, start_allocated = 0;
  std::string capacity_source;  // how the recorded capacity was found
  SimRun recorded;              // figures read from the trace
  std::vector<SimRun> runs;     // runs[0]: the recorded settings and capacity
  Fidelity fidelity;
  uint64_t explicit_empty_cache = 0;  // recorded torch.cuda.empty_cache() calls (by their stacks), made in every run
  uint64_t other_flushes = 0;         // other recorded flushes not forced by a failed cudaMalloc, made in every run
  bool gc_ignored = false;            // a run sets garbage_collection_threshold, which needs a memory fraction
  std::vector<RoleEditResult> role_edits;  // in the order given
  std::vector<std::string> role_names;     // by role id, when role edits were made
};

/// Throws UsageError for a setting it cannot parse or an absurd capacity.
Simulation simulate(const Context& ctx, const Replay& replay, const SimulateOptions& options);

/// The recorded trace's bursts of segment_free / segment_unmap: each one a cache flush;
/// `explicit_call` when a stack names torch.cuda.empty_cache() (the program's call, never a
/// retry); else `retry` when the next event maps memory again or is the OOM (the allocator
/// emptied its cache to retry a cudaMalloc); else some other flush.
struct FreeBurst {
  uint32_t first = 0, last = 0;  // event indices
  uint64_t bytes = 0;
  bool retry = false;
  bool explicit_call = false;
};
std::vector<FreeBurst> free_bursts(const snapshot::Snapshot& snap, const snapshot::Trace& trace);

}  // namespace memsnap::analysis
