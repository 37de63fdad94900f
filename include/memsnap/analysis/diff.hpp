// What changed between two snapshots of the same job: totals, segments on one side
// only, and live memory by allocation site.
//
// Rows are keyed by the site (its file, function and line: the innermost frame of
// the user's code, or the autograd node / operator for stacks without one), never
// by addresses or whole stacks, so the same code in two runs or two steps lines up
// even when a caller's line moved. Each row lists the call paths (the user's frames
// outside the site) that reached it on either side.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memsnap/analysis/accounting.hpp"
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

struct DeviceDiff {
  int device = 0;
  bool in_before = false, in_after = false;
  DiffTotals before, after;
  std::vector<SegmentRef> segments_only_before, segments_only_after;
  std::vector<SiteDelta> sites;  // largest change first; unchanged sites last
};

std::vector<DeviceDiff> diff_snapshots(const Context& before, const Context& after);

/// b - a saturated to the int64 range.
int64_t signed_delta(uint64_t a, uint64_t b);

}  // namespace memsnap::analysis
