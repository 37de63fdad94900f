// What the replay answers after its sweep: the allocator state right after any event of the
// window (from the nearest checkpoint and the ranges begun since) and at the window's start,
// as a snapshot::Device. The sweep itself, and the totals event by event (TotalsCursor, on
// the timeline's hot path beside the accessors it calls), stay in replay.cpp.
#include <algorithm>

#include "memsnap/analysis/replay.hpp"

namespace memsnap::analysis {

using snapshot::BlockState;

std::optional<uint32_t> Replay::range_of_alloc(uint32_t event) const {
  auto first = ranges_.begin() + first_window_range_;
  auto it = std::lower_bound(first, ranges_.end(), event, [](const Stored& r, uint32_t e) { return r.begin < e; });
  if (it == ranges_.end() || it->begin != event) return std::nullopt;
  return static_cast<uint32_t>(it - ranges_.begin());
}

ReplayedState Replay::state_after(uint32_t index) const {
  ReplayedState out;
  // Blocks: the nearest checkpoint at or before the event, then the ranges begun since.
  auto cp = std::upper_bound(checkpoints_.begin(), checkpoints_.end(), index,
                             [](uint32_t i, const Checkpoint& c) { return i < c.event; });
  std::vector<LiveRange> live;
  auto take = [&](uint32_t id) {
    LiveRange r = range(id);
    if (r.active_at(index)) live.push_back(r);
  };
  uint32_t from = first_window_range_;
  if (cp == checkpoints_.begin()) {
    for (uint32_t id = 0; id < first_window_range_; ++id) take(id);
  } else {
    --cp;
    for (uint32_t id : cp->live) take(id);
    from = cp->first_new_range;
  }
  for (uint32_t id = from; id < ranges_.size() && ranges_[id].begin <= index; ++id) take(id);
  std::sort(live.begin(), live.end(), [](const LiveRange& a, const LiveRange& b) { return a.addr < b.addr; });
  // Segments: the window's start plus the segment events up to the event.
  SegMap segs = start_segments_;
  for (uint32_t i : segment_events_) {
    if (i > index) break;
    apply_segment_event(segs, device_.trace[i], nullptr);
  }
  out.device = to_device(segs, live, [index](const LiveRange& r) { return r.allocated_at(index); });
  for (const LiveRange& r : live) {
    out.totals.active += r.size;
    if (r.allocated_at(index)) {
      out.totals.allocated += r.size;
      out.totals.requested += r.requested;
    }
    if (!r.size_exact) {
      ++out.estimated_blocks;
      out.size_uncertainty += size_slack(r.size);
    }
  }
  for (const auto& [addr, s] : segs) out.totals.reserved += s.end - addr;
  return out;
}

ReplayedState Replay::state_at_start() const {
  ReplayedState out;
  std::vector<LiveRange> live;
  for (uint32_t id = 0; id < first_window_range_; ++id) live.push_back(range(id));  // sorted by address
  out.device = to_device(start_segments_, live, [](const LiveRange& r) { return !r.pending_at_start; });
  out.totals = start_totals_;
  for (const LiveRange& r : live)
    if (!r.size_exact) {
      ++out.estimated_blocks;
      out.size_uncertainty += size_slack(r.size);
    }
  return out;
}

snapshot::Device Replay::to_device(const SegMap& segs, const std::vector<LiveRange>& blocks,
                                   const std::function<bool(const LiveRange&)>& allocated) const {
  snapshot::Device d;
  d.index = device_.index;
  size_t bi = 0;
  uint32_t file_index = 0;
  for (const auto& [start, rs] : segs) {
    snapshot::Segment s;
    s.address = start;
    s.total_size = rs.end - start;
    s.stream = rs.stream;
    s.pool = rs.pool;
    s.pool_id[0] = rs.pool_id[0];
    s.pool_id[1] = rs.pool_id[1];
    s.expandable = rs.expandable;
    s.stack = rs.stack;
    s.file_index = file_index++;
    s.first_block = static_cast<uint32_t>(d.blocks.size());
    while (bi < blocks.size() && blocks[bi].addr < start) ++bi;  // outside every segment
    uint64_t cursor = start;
    auto gap = [&](uint64_t upto) {
      if (upto > cursor) {
        snapshot::Block f;
        f.address = cursor;
        f.size = upto - cursor;
        f.state = BlockState::Inactive;
        d.blocks.push_back(f);
        cursor = upto;
      }
    };
    for (; bi < blocks.size() && blocks[bi].addr < rs.end; ++bi) {
      const LiveRange& r = blocks[bi];
      if (r.addr < cursor) continue;  // overlaps an estimated neighbour: keep the first
      gap(r.addr);
      snapshot::Block b;
      b.address = r.addr;
      b.size = std::min(r.size, rs.end - r.addr);
      b.requested_size = r.requested;
      b.requested_known = true;
      b.stack = r.stack;
      b.state = allocated(r) ? BlockState::ActiveAllocated : BlockState::ActivePendingFree;
      d.blocks.push_back(b);
      cursor = r.addr + b.size;
    }
    gap(rs.end);
    s.block_count = static_cast<uint32_t>(d.blocks.size() - s.first_block);
    d.segments.push_back(s);
  }
  return d;
}

}  // namespace memsnap::analysis
