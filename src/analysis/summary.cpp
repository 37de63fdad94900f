// Totals per device, one pass over segments and blocks.
#include "memsnap/analysis/summary.hpp"

#include <algorithm>
#include <map>

namespace memsnap::analysis {

using snapshot::Block;
using snapshot::BlockState;
using snapshot::Segment;

DeviceTotals summarize(const snapshot::Device& d) {
  DeviceTotals t;
  t.device = d.index;
  std::map<std::pair<int, uint64_t>, PoolStreamCount> groups;
  for (const Segment& s : d.segments) {
    PoolStreamCount& g = groups[{int(s.pool), s.stream}];
    g.pool = s.pool;
    g.stream = s.stream;
    g.segments += 1;
    g.reserved_bytes += s.total_size;
    t.reserved_bytes += s.total_size;
    t.segments += 1;
    uint64_t covered = 0;
    for (const Block& b : d.blocks_of(s)) {
      covered += b.size;
      t.blocks += 1;
      g.blocks += 1;
      switch (b.state) {
        case BlockState::ActiveAllocated:
          t.allocated_bytes += b.size;
          t.requested_bytes += b.requested_size;
          t.internal_free_bytes += b.size >= b.requested_size ? b.size - b.requested_size : 0;
          g.allocated_bytes += b.size;
          break;
        case BlockState::ActivePendingFree: t.pending_free_bytes += b.size; break;
        case BlockState::Inactive:
          t.inactive_bytes += b.size;
          g.free_bytes += b.size;
          t.largest_free_block_bytes = std::max(t.largest_free_block_bytes, b.size);
          break;
      }
      if (b.is_active()) t.active_bytes += b.size;
    }
    if (covered < s.total_size) t.unaccounted_bytes += s.total_size - covered;
  }
  for (auto& [key, g] : groups) t.by_pool_stream.push_back(g);
  t.trace.entries = d.trace.size();
  for (const auto& e : d.trace)
    if (e.has_time()) {
      t.trace.first_time_us = e.time_us;
      break;
    }
  for (auto it = d.trace.rbegin(); it != d.trace.rend(); ++it)
    if (it->has_time()) {
      t.trace.last_time_us = it->time_us;
      break;
    }
  return t;
}

std::vector<DeviceTotals> summarize(const snapshot::Snapshot& snap) {
  std::vector<DeviceTotals> out;
  out.reserve(snap.devices.size());
  for (const auto& d : snap.devices) out.push_back(summarize(d));
  return out;
}

}  // namespace memsnap::analysis
