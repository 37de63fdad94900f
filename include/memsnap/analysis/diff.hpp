// What changed between two snapshots of the same job: totals, segments, and live memory by site.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memsnap/analysis/summary.hpp"
#include "memsnap/snapshot/model.hpp"

namespace memsnap::analysis {

struct SegmentRef {
  uint64_t address = 0;
  uint64_t size = 0;
  snapshot::Pool pool = snapshot::Pool::Unknown;
  uint64_t stream = 0;
};

/// Live allocated memory of one call path in both snapshots. Rows are matched by
/// the stack's frames in the user's code (file:line:function, innermost first;
/// torch and native frames vary with autocast, dtype and kernels), never by
/// addresses, so the same code path in two runs or two steps lines up. `stack`
/// is that call path; its first element is the site.
struct SiteDelta {
  std::string site;
  std::vector<std::string> stack;
  uint64_t before_bytes = 0, after_bytes = 0;
  uint64_t before_allocations = 0, after_allocations = 0;
  int64_t delta_bytes() const { return int64_t(after_bytes) - int64_t(before_bytes); }
  bool is_new() const { return before_allocations == 0 && after_allocations > 0; }
  bool vanished() const { return before_allocations > 0 && after_allocations == 0; }
};

struct DeviceDiff {
  int device = 0;
  bool in_before = false, in_after = false;
  DeviceTotals before, after;  // zero when the device is absent on one side
  std::vector<SegmentRef> segments_only_before, segments_only_after;
  std::vector<SiteDelta> sites;  // sorted by |delta_bytes|, largest first; unchanged sites last
};

std::vector<DeviceDiff> diff_snapshots(const snapshot::Snapshot& before, const snapshot::Snapshot& after);

}  // namespace memsnap::analysis
