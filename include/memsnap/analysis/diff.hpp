// What changed between two snapshots of the same job: the peaks and what was live at
// each, totals at the dump, segments on one side only, and live memory by site.
//
// Rows are keyed by the site (its file, function and line: the innermost frame of
// the user's code, or the autograd node / operator for stacks without one), never
// by addresses or whole stacks, so the same code in two runs or two steps lines up
// even when a caller's line moved. Each row lists the call paths (the user's frames
// outside the site) that reached it on either side.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memsnap/analysis/accounting.hpp"
#include "memsnap/analysis/roles.hpp"
#include "memsnap/snapshot/model.hpp"

namespace memsnap::analysis {

struct SegmentRef {
  uint64_t address = 0;
  uint64_t size = 0;
  snapshot::Pool pool = snapshot::Pool::Unknown;
  uint64_t stream = 0;
};

/// One call path into a site, with its live memory on each side.
struct CallerPath {
  std::vector<std::string> path;  // user frames outside the site, innermost first
  uint64_t before_bytes = 0, after_bytes = 0;
  uint64_t before_allocations = 0, after_allocations = 0;
};

struct SiteDelta {
  std::string site;  // the label: "file.py:LINE:function", made distinct across rows
  /// Set on a row keyed by role rather than by site: the gradients that autograd nodes made
  /// (no frame of the user's code), one row whichever node made them ("gradient").
  std::optional<Role> role;
  std::string file;  // the full file name of the site frame ("" for nodes and operators)
  std::string function;
  int64_t line = 0;
  std::vector<std::string> stack;   // the user call path of its largest caller, site first
  std::vector<CallerPath> callers;  // largest change first
  uint64_t before_bytes = 0, after_bytes = 0;
  uint64_t before_allocations = 0, after_allocations = 0;
  /// after - before, saturated to the int64 range.
  int64_t delta_bytes() const;
  /// |after - before| without overflow.
  uint64_t change_magnitude() const {
    return after_bytes > before_bytes ? after_bytes - before_bytes : before_bytes - after_bytes;
  }
  bool is_new() const { return before_allocations == 0 && after_allocations > 0; }
  bool vanished() const { return before_allocations > 0 && after_allocations == 0; }
};

/// A device's totals on one side, from its accounting (all zero when absent).
struct DiffTotals {
  uint64_t reserved_bytes = 0, allocated_bytes = 0, active_bytes = 0, requested_bytes = 0, inactive_bytes = 0,
           largest_free_block_bytes = 0, segments = 0, blocks = 0;
};

/// One side's peaks, from a replay of its trace (known only when it has one).
struct DiffPeak {
  bool known = false;
  uint64_t allocated_bytes = 0, reserved_bytes = 0;
  uint32_t allocated_event = 0, reserved_event = 0;  // 0 with *_at_window_start
  bool allocated_at_window_start = false, reserved_at_window_start = false;
};

/// One side's bytes by role (roles.hpp: one rule table, as analyze): at the dump, and at
/// the allocated peak with the phase it happened in. A side without the device has zeros.
struct DiffRoles {
  RoleState dump;                 // phase: none
  std::optional<RoleState> peak;  // known with DiffPeak::known, or zeros for a missing device
};

struct DeviceDiff {
  int device = 0;
  bool in_before = false, in_after = false;
  DiffTotals before, after;
  DiffPeak peak_before, peak_after;
  std::vector<std::string> role_names;  // by role id: the built-in roles
  DiffRoles roles_before, roles_after;
  /// Both peaks have a phase and the phases differ ("the optimizer step" -> "the forward").
  bool peak_moved_phase() const;
  std::vector<SegmentRef> segments_only_before, segments_only_after;  // empty unless matched by address
  // Live allocated bytes by site; gradients made by autograd nodes are one row keyed by their
  // role (SiteDelta::role), so a node renamed between runs (BmmBackward0 under fp32,
  // ToCopyBackward0 under autocast) compares gradient bytes with gradient bytes.
  std::vector<SiteDelta> sites;       // at the dumps: largest change first; unchanged sites last
  std::vector<SiteDelta> peak_sites;  // live at each side's allocated peak, in the same order
};

/// Whether two files come from one process. Addresses mean something across two
/// snapshots only then: two processes map their segments wherever CUDA puts them,
/// and a deterministic program gets the same addresses in every run.
///
/// The rule, per device with a trace on both sides. Let E be the trace that ends
/// first (its last time stamp is the earlier) and L the other. One process records
/// its events in one ring buffer, so when L's window opened before E's last event,
/// E's last events are in L too. PyTorch converts its cycle counter to wall-clock
/// microseconds anew at each dump, so one event's time stamp can differ slightly
/// between two dumps; kSameEventMicros bounds that.
///   Same      E's last min(8, |E|) events occur in L in a row, with the same action,
///             address, size and stream, each time stamp within kSameEventMicros.
///   Different L's window opened before the first of those events (by more than
///             kSameEventMicros) and yet they are not in L.
///   Unknown   otherwise: the windows do not overlap (a later dump of one process and
///             another run look alike), or a trace has no time stamps (two runs of a
///             deterministic program have the same events), or no device has a trace
///             on both sides.
/// A file pair is Same when any device says so, else Different when any device says
/// so, else Unknown. Segments are matched by address only when Same.
enum class ProcessRelation : uint8_t { Same, Different, Unknown };
enum class ProcessEvidence : uint8_t {
  SharedEvents,
  OverlapWithoutSharedEvents,
  DisjointWindows,
  NoTimeStamps,
  NoTrace
};
const char* to_string(ProcessRelation r);
const char* to_string(ProcessEvidence e);
inline constexpr int64_t kSameEventMicros = 1000;
inline constexpr size_t kSameEventRun = 8;

struct ProcessMatch {
  ProcessRelation relation = ProcessRelation::Unknown;
  ProcessEvidence evidence = ProcessEvidence::NoTrace;
  std::optional<int> device;  // the device whose traces decided it
  bool segments_by_address() const { return relation == ProcessRelation::Same; }
};

ProcessMatch match_processes(const snapshot::Snapshot& before, const snapshot::Snapshot& after);

/// Device by device; segments on one side only are listed when `process` allows
/// matching by address (the two-argument form decides with match_processes).
std::vector<DeviceDiff> diff_snapshots(const Context& before, const Context& after, const ProcessMatch& process);
std::vector<DeviceDiff> diff_snapshots(const Context& before, const Context& after);

/// b - a saturated to the int64 range.
int64_t signed_delta(uint64_t a, uint64_t b);

}  // namespace memsnap::analysis
