// Memory over time: allocated, active and reserved bytes after each trace event of
// one device, downsampled for plotting without losing the extremes, with the peak,
// OOM events and iteration boundaries as markers and, on request, the live bytes
// of the top allocation sites stacked under the allocated curve.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memsnap/analysis/iterations.hpp"
#include "memsnap/analysis/peak.hpp"
#include "memsnap/analysis/replay.hpp"
#include "memsnap/analysis/roles.hpp"
#include "memsnap/analysis/sites.hpp"
#include "memsnap/snapshot/model.hpp"

namespace memsnap::analysis {

struct TimelineOptions {
  /// Most points kept per device. Buckets of consecutive events keep the events
  /// where each series is lowest and highest, so no peak or dip is cut off.
  size_t max_points = 2000;
  bool by_site = false;
  size_t top_sites = 8;
  /// Stack the live bytes of each role (roles.hpp, the rule table analyze uses) under the
  /// curve, and mark the phases; `roles` holds the user's --role rules.
  bool by_role = false;
  RoleRules roles;
};

/// A maximal run of events in one phase (phases.hpp): from `first_event` to the next span's.
struct TimelinePhase {
  uint32_t first_event = 0;
  std::optional<int64_t> time_us;  // of first_event
  Phase phase = Phase::Other;
};

/// The allocator state right after one trace event.
struct TimelinePoint {
  uint32_t event_index = 0;
  std::optional<int64_t> time_us;
  uint64_t allocated = 0;
  uint64_t active = 0;
  uint64_t reserved = 0;
};

/// A trace event the picture marks (iteration starts, OOMs).
struct TimelineEvent {
  uint32_t event_index = 0;
  std::optional<int64_t> time_us;
};

struct TimelineOom {
  uint32_t event_index = 0;
  std::optional<int64_t> time_us;
  uint64_t requested_bytes = 0;  // the rounded request that failed
  uint64_t device_free_bytes = 0;
  uint64_t allocated_bytes = 0;  // state when it happened
  uint64_t reserved_bytes = 0;
};

struct TimelineSite {
  std::string site;
  std::vector<std::string> stack;
  uint64_t peak_live_bytes = 0;  // the most this site held alive at once
};

struct Timeline {
  int device = 0;
  size_t events = 0;   // trace entries of the device
  bool timed = false;  // every event has a timestamp: x is time, else the event index
  std::optional<int64_t> first_time_us, last_time_us;
  bool consistent = true;             // the replay met no contradiction
  std::vector<TimelinePoint> points;  // event order, at most max_points
  std::optional<Peak> peak;           // the allocated peak (most allocated bytes)
  std::vector<TimelineEvent> iteration_starts;
  std::vector<TimelineOom> ooms;
  /// With by_site: the top sites by their own peak live bytes, largest first.
  bool by_site = false;
  std::vector<TimelineSite> sites;
  /// With by_site: points.size() rows of sites.size() + 1 columns, row-major:
  /// live allocated bytes of each top site at that point, then all other sites.
  /// Each row sums to the point's allocated bytes.
  std::vector<uint64_t> site_bytes;

  /// With by_role: role names by role id (the built-in roles, then the user's), and
  /// points.size() rows of role_names.size() columns, row-major: the live allocated bytes of
  /// each role at that point. Each row sums to the point's allocated bytes.
  bool by_role = false;
  std::vector<std::string> role_names;
  std::vector<uint64_t> role_bytes;
  /// With by_role, when the file's stacks or annotations tell phases: every span, in order.
  std::vector<TimelinePhase> phases;

  size_t site_columns() const { return by_site ? sites.size() + 1 : 0; }
  uint64_t role_value(size_t point, size_t role) const { return role_bytes[point * role_names.size() + role]; }
  uint64_t site_value(size_t point, size_t column) const { return site_bytes[point * site_columns() + column]; }
};

/// The series of one device, recomputed from its replay (TotalsCursor), with the peak and the iterations the analysis
/// found. Site bytes come from the replay's live ranges, not from another pass over the trace. An empty trace gives a
/// timeline without points.
Timeline build_timeline(const Context& ctx, const Replay& replay, const std::optional<Peak>& peak,
                        const Iterations& iterations, const TimelineOptions& options = {});

/// Which of `n` events to keep so that at most `max_points` remain: per bucket of
/// consecutive events, those where any of the series is lowest or highest, plus
/// `forced` ones (always kept, even beyond max_points). Sorted, distinct.
std::vector<uint32_t> select_points(const std::vector<std::array<uint64_t, 3>>& series, size_t max_points,
                                    const std::vector<uint32_t>& forced);

}  // namespace memsnap::analysis
