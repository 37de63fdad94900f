// Trace replay: undo every event from the dumped state to find the window's start,
// then one forward sweep that records live ranges, peaks, OOMs and checkpoints.
#include "memsnap/analysis/replay.hpp"

#include <algorithm>
#include <array>
#include <iterator>

#include "memsnap/analysis/allocator_rules.hpp"
#include "memsnap/util/flat_map.hpp"
#include "memsnap/util/units.hpp"

namespace memsnap::analysis {

using snapshot::Action;
using snapshot::BlockState;
using snapshot::Pool;
using snapshot::TraceEvent;

namespace {

bool is_block_action(Action a) {
  return a == Action::Alloc || a == Action::FreeRequested || a == Action::FreeCompleted || a == Action::Free;
}

// What a block event's replay reads of it: its address, size, stack and action, without
// decoding the time and stream columns, which only segment events need.
TraceEvent block_event(const snapshot::Trace& t, size_t i) {
  TraceEvent e;
  e.addr = t.addr_at(i);
  e.size = t.size_at(i);
  e.stack = t.stack_at(i);
  e.action = t.action_at(i);
  return e;
}

template <class Map>
typename Map::const_iterator containing(const Map& segs, uint64_t addr) {
  auto it = segs.upper_bound(addr);
  if (it == segs.begin()) return segs.end();
  --it;
  return addr < it->second.end ? it : segs.end();
}

// Whether [a, a + n) overlaps any range.
template <class Map>
bool overlaps(const Map& segs, uint64_t a, uint64_t n) {
  uint64_t end = a + n < a ? UINT64_MAX : a + n;
  auto it = segs.lower_bound(a);
  if (it != segs.end() && it->first < end) return true;
  if (it != segs.begin() && std::prev(it)->second.end > a) return true;
  return false;
}

// Expandable segments: mapping pages joins them to the adjacent mapped range of
// the same reservation, as the snapshot reports each contiguous range once.
template <class Map, class Seg>
void map_range(Map& segs, uint64_t a, uint64_t n, Seg proto) {
  proto.end = a + n;
  uint64_t start = a;
  auto next = segs.find(a + n);
  if (next != segs.end() && next->second.expandable && next->second.stream == proto.stream) {
    proto.end = next->second.end;
    segs.erase(next);
  }
  auto it = segs.lower_bound(a);
  if (it != segs.begin()) {
    auto prev = std::prev(it);
    if (prev->second.end == a && prev->second.expandable && prev->second.stream == proto.stream) {
      start = prev->first;
      proto.pool = prev->second.pool;
      proto.stack = prev->second.stack;
      proto.pool_id[0] = prev->second.pool_id[0];
      proto.pool_id[1] = prev->second.pool_id[1];
      segs.erase(prev);
    }
  }
  segs[start] = proto;
}

// Removes [a, a + n) from the mapped ranges; false when it was not all mapped.
template <class Map>
bool unmap_range(Map& segs, uint64_t a, uint64_t n) {
  auto it = containing(segs, a);
  if (it == segs.end() || a + n < a || it->second.end < a + n) return false;
  uint64_t start = it->first;
  auto seg = it->second;
  segs.erase(it);
  if (start < a) {
    auto left = seg;
    left.end = a;
    segs[start] = left;
  }
  if (a + n < seg.end) segs[a + n] = seg;
  return true;
}

}  // namespace

Pool Replay::guess_pool(uint64_t addr, uint64_t size, uint64_t stream, bool expandable) const {
  if (!expandable) return size == rules::kSmallBuffer ? Pool::Small : Pool::Large;
  // One reservation per pool and stream: take the pool of the nearest dumped range.
  auto lo = std::lower_bound(expandable_bases_.begin(), expandable_bases_.end(), std::pair{stream, addr},
                             [](const Base& b, const std::pair<uint64_t, uint64_t>& k) {
                               return b.stream != k.first ? b.stream < k.first : b.address < k.second;
                             });
  const Base* best = nullptr;
  if (lo != expandable_bases_.end() && lo->stream == stream) best = &*lo;
  if (lo != expandable_bases_.begin() && std::prev(lo)->stream == stream) {
    const Base& b = *std::prev(lo);
    if (!best || addr - b.address < best->address - addr) best = &b;
  }
  if (best) return best->pool;
  return size % rules::kLargeBuffer == 0 ? Pool::Large : Pool::Small;
}

void Replay::note(uint32_t event, std::string what) {
  if (!mismatch_ || event < mismatch_->event) mismatch_ = ReplayMismatch{event, std::move(what)};
}

uint64_t Replay::size_slack(uint64_t rounded) const {
  if (expandable_ || rounded <= rules::kSmallSize) return 0;
  const auto& mss = ctx_.snap.settings.max_split_size;
  return mss && rounded >= *mss ? rules::kLargeBuffer : rules::kSmallSize;
}

Replay::Replay(const Context& ctx, const snapshot::Device& device, const ReplayOptions& options)
    : ctx_(ctx), device_(device) {
  for (const auto& s : device_.segments) {
    expandable_ = expandable_ || s.expandable;
    if (s.expandable) expandable_bases_.push_back({s.stream, s.address, s.pool});
  }
  std::sort(expandable_bases_.begin(), expandable_bases_.end(), [](const Base& a, const Base& b) {
    return a.stream != b.stream ? a.stream < b.stream : a.address < b.address;
  });
  std::vector<LiveRange> start_live;
  undo(start_live, start_segments_);
  starts_mid_run_ = !start_live.empty() || !start_segments_.empty();
  AllocatorModel model(ModelSettings::from(ctx_.snap.settings));
  seed_model(model, start_live);
  ranges_.reserve(start_live.size());
  start_info_.reserve(start_live.size());
  for (const LiveRange& r : start_live) {
    auto id = static_cast<uint32_t>(ranges_.size());
    start_info_.push_back({r.addr, r.requested, r.stack});
    ranges_.push_back(
        Stored{kWindowStart, kNever, kNever, encode_size(id, r.size, r.size_exact, r.pending_at_start), 0});
  }
  first_window_range_ = static_cast<uint32_t>(ranges_.size());
  sweep(options, model);
  exact_size_ = {};  // the sweep's alone
  ranges_.trim();
  if (peak_allocated_ && starts_mid_run_) {
    // Ties go to the window's start: it comes first, as max_memory_allocated() saw it first.
    start_peak_allocated_ = start_totals_.allocated > 0 && start_totals_.allocated >= peak_allocated_->totals.allocated;
    start_peak_reserved_ = start_totals_.reserved > 0 && start_totals_.reserved >= peak_reserved_->totals.reserved;
  }
  check_layout(model);
}

namespace {
PoolKey pool_key(uint64_t stream, Pool pool, const int64_t* pool_id = nullptr) {
  return PoolKey{stream, pool == Pool::Small, pool_id ? pool_id[0] : 0, pool_id ? pool_id[1] : 0};
}
ModelState model_state(BlockState s) {
  switch (s) {
    case BlockState::ActiveAllocated: return ModelState::Allocated;
    case BlockState::ActivePendingFree: return ModelState::Pending;
    default: return ModelState::Free;
  }
}
}  // namespace

// The rewound start state into the model: its segments, then its live blocks. A block live
// at the start with no dumped size was sized from its request; the free space after it is
// part of it when the allocator could not have split that much off (should_split), since
// every free block of a pool is at least what a split leaves.
void Replay::seed_model(AllocatorModel& model, std::vector<LiveRange>& start_live) {
  for (const auto& [addr, seg] : start_segments_)
    model.add_segment(addr, seg.end - addr, pool_key(seg.stream, seg.pool, seg.pool_id), seg.expandable);
  const auto& mss = ctx_.snap.settings.max_split_size;
  for (size_t k = 0; k < start_live.size(); ++k) {
    LiveRange& r = start_live[k];
    auto seg = containing(start_segments_, r.addr);
    if (!r.size_exact && seg != start_segments_.end() && seg->second.pool != Pool::Small && !seg->second.expandable) {
      uint64_t limit = seg->second.end;
      if (k + 1 < start_live.size() && start_live[k + 1].addr < limit) limit = start_live[k + 1].addr;
      uint64_t gap = limit > r.addr + r.size ? limit - (r.addr + r.size) : 0;
      bool whole = mss && r.size >= *mss;
      if (gap > 0 && gap <= rules::kSmallSize && !whole) {
        r.size += gap;  // a remainder of 1 MiB or less stays in the block
        r.size_exact = true;
      } else if (!whole) {
        r.size_exact = true;  // a larger remainder was split off: the rounded request is the block
      }
    } else if (!r.size_exact && seg != start_segments_.end()) {
      r.size_exact = true;  // small pool and expandable segments split any remainder
    }
    if (!model.place(r.addr, r.size, r.pending_at_start ? ModelState::Pending : ModelState::Allocated))
      if (!layout_check_.first_unfollowed_event) layout_check_.first_unfollowed_event = 0;
  }
}

// The model's final layout against the dumped segments, block for block.
void Replay::check_layout(const AllocatorModel& model) {
  LayoutCheck& c = layout_check_;
  auto layout = model.layout();
  std::vector<const snapshot::Segment*> dumped;
  for (const auto& seg : device_.segments) dumped.push_back(&seg);
  std::sort(dumped.begin(), dumped.end(), [](auto* a, auto* b) { return a->address < b->address; });
  auto differ = [&](std::string what) {
    if (c.first_difference.empty()) c.first_difference = std::move(what);
  };
  if (layout.size() != dumped.size())
    differ("the replay ends with " + std::to_string(layout.size()) + " segments, the dump has " +
           std::to_string(dumped.size()));
  for (size_t k = 0; k < std::min(layout.size(), dumped.size()); ++k) {
    const auto& [addr, blocks] = layout[k];
    const snapshot::Segment& d = *dumped[k];
    ++c.segments;
    if (addr != d.address) {
      differ("segment " + hex(d.address) + " of the dump is not where the replay has one");
      continue;
    }
    auto dblocks = device_.blocks_of(d);
    if (blocks.size() != dblocks.size()) {
      differ("segment " + hex(d.address) + ": the replay has " + std::to_string(blocks.size()) + " blocks, the dump " +
             std::to_string(dblocks.size()));
      continue;
    }
    size_t j = 0;
    for (const auto& b : dblocks) {
      ++c.blocks;
      const LayoutBlock& m = blocks[j++];
      if (m.address != b.address || m.size != b.size || m.state != model_state(b.state)) {
        differ("block " + hex(b.address) + " (" + std::to_string(b.size) + " B) differs from the replay's " +
               hex(m.address) + " (" + std::to_string(m.size) + " B)");
        break;
      }
    }
  }
  c.equal = c.first_difference.empty() && !c.first_unfollowed_event;
}

uint32_t Replay::encode_size(uint32_t id, uint64_t size, bool exact, bool pending) {
  uint32_t units = kUnitsMask;
  if (size % 512 == 0 && size / 512 < kUnitsMask) {
    units = static_cast<uint32_t>(size / 512);
  } else {
    big_sizes_[id] = size;
  }
  return units | (exact ? kExactBit : 0) | (pending ? kPendingBit : 0);
}

uint32_t Replay::encode_before(uint32_t id, uint64_t allocated_before) {
  if (allocated_before % 512 == 0 && allocated_before / 512 < kBigBefore)
    return static_cast<uint32_t>(allocated_before / 512);
  big_before_[id] = allocated_before;
  return kBigBefore;
}

uint64_t Replay::size_of(uint32_t id) const {
  uint32_t units = ranges_[id].size_word & kUnitsMask;
  if (units != kUnitsMask) return uint64_t{units} * 512;
  const uint64_t* big = big_sizes_.find(id);
  return big ? *big : 0;
}

uint64_t Replay::requested_of(uint32_t id) const {
  return id < first_window_range_ ? start_info_[id].requested : device_.trace.size_at(ranges_[id].begin);
}

uint64_t Replay::allocated_before_of(uint32_t id) const {
  uint32_t units = ranges_[id].before_units;
  if (units != kBigBefore) return uint64_t{units} * 512;
  const uint64_t* big = big_before_.find(id);
  return big ? *big : 0;
}

LiveRange Replay::range(uint32_t id) const {
  const Stored& s = ranges_[id];
  LiveRange r;
  r.size = size_of(id);
  r.allocated_before = allocated_before_of(id);
  r.begin = s.begin;
  r.freed = s.freed;
  r.end = s.end;
  r.size_exact = s.size_word & kExactBit;
  r.pending_at_start = s.size_word & kPendingBit;
  if (id < first_window_range_) {
    r.addr = start_info_[id].addr;
    r.requested = start_info_[id].requested;
    r.stack = start_info_[id].stack;
  } else {
    const auto& t = device_.trace;
    r.addr = t.addr_at(s.begin);
    r.requested = t.size_at(s.begin);
    r.stack = t.stack_at(s.begin);
  }
  return r;
}

// Backwards from the dump: what was live and reserved before the first event, and
// the exact size of every alloc whose block survives to the dump.
void Replay::undo(std::vector<LiveRange>& start_live, SegMap& segs) {
  FlatMap64<Undone> live;
  std::vector<LiveRange> dumped;  // the dumped active blocks the map refers to
  for (const auto& s : device_.segments) {
    Seg rs;
    rs.end = s.address + s.total_size;
    rs.stream = s.stream;
    rs.pool = s.pool;
    rs.expandable = s.expandable;
    rs.pool_id[0] = s.pool_id[0];
    rs.pool_id[1] = s.pool_id[1];
    rs.stack = s.stack;
    segs[s.address] = rs;
    for (const auto& b : device_.blocks_of(s)) {
      if (!b.is_active()) continue;
      LiveRange r;
      r.addr = b.address;
      r.size = b.size;
      r.requested = b.requested_size;
      r.stack = b.stack;
      // "pending" while undoing
      uint32_t flags = Undone::kFromDump | (b.state == BlockState::ActivePendingFree ? Undone::kPending : 0);
      if (live.try_emplace(b.address, Undone{static_cast<uint32_t>(dumped.size()), flags}).second) dumped.push_back(r);
    }
  }
  const auto& trace = device_.trace;
  for (size_t k = trace.size(); k-- > 0;) {
    uint32_t i = static_cast<uint32_t>(k);
    switch (Action a = trace.action_at(k)) {
      case Action::Alloc:
      case Action::FreeRequested:
      case Action::FreeCompleted:
      case Action::Free: undo_block_event(live, dumped, a, trace.addr_at(k), i); break;
      case Action::SegmentAlloc:
      case Action::SegmentFree:
      case Action::SegmentMap:
      case Action::SegmentUnmap: undo_segment_event(segs, trace[k], i); break;
      default: break;
    }
  }
  std::reverse(exact_size_.begin(), exact_size_.end());  // by event, for the sweep's cursor
  // What is live at the start: a dumped block, or one a free in the window brought back with
  // the rounded size of its request.
  live.for_each([&](uint64_t addr, const Undone& u) {
    LiveRange r;
    if (u.flags & Undone::kFromDump) {
      r = dumped[u.from];
    } else {
      r.addr = addr;
      r.requested = trace.size_at(u.from);
      r.size = rules::round_size(r.requested, ctx_.snap.settings);
      r.stack = trace.stack_at(u.from);
      r.size_exact = false;
    }
    r.pending_at_start = u.flags & Undone::kPending;
    start_live.push_back(r);
  });
  // A deterministic order (the map's is seeded): by address.
  std::sort(start_live.begin(), start_live.end(),
            [](const LiveRange& a, const LiveRange& b) { return a.addr < b.addr; });
}

// Undoing an alloc removes its block (and learns its exact size when it survives to
// the dump); undoing a free brings back a block of the rounded requested size (worked out
// at the end, for the blocks still live at the start).
void Replay::undo_block_event(FlatMap64<Undone>& live, const std::vector<LiveRange>& dumped, Action action,
                              uint64_t addr, uint32_t i) {
  if (action == Action::FreeCompleted || action == Action::Free) {  // one probe: most often an insert
    Undone undone{i, action == Action::FreeCompleted ? Undone::kPending : 0};
    if (auto [u, added] = live.try_emplace(addr, undone); !added) {
      note(i, "free of " + hex(addr) + ", but a block is still live there after it");
      *u = undone;  // the later block is replaced
    }
    return;
  }
  Undone* u = live.find(addr);
  switch (action) {
    case Action::Alloc:
      if (!u || (u->flags & Undone::kPending)) {
        note(i, "alloc at " + hex(addr) + ", but no block is allocated there after it");
      } else if (u->flags & Undone::kFromDump) {
        exact_size_.push_back({i, dumped[u->from].size});  // undo runs backwards: descending events
      }
      if (u) live.erase_found(u);
      break;
    case Action::FreeRequested:
      if (!u) {
        note(i, "free_requested of " + hex(addr) + ", but its block is not awaiting completion after it");
        live.try_emplace(addr, Undone{i, 0});
      } else {
        u->flags &= ~Undone::kPending;
      }
      break;
    default: break;  // frees: above
  }
}

void Replay::undo_segment_event(SegMap& segs, const TraceEvent& e, uint32_t i) {
  switch (e.action) {
    case Action::SegmentAlloc: {
      auto it = segs.find(e.addr);
      if (it == segs.end() || it->second.end - it->first != e.size)
        note(i, "segment_alloc of " + hex(e.addr) + ", but no such segment exists after it");
      if (it != segs.end()) segs.erase(it);
      break;
    }
    case Action::SegmentFree: {
      if (overlaps(segs, e.addr, e.size))
        note(i, "segment_free of " + hex(e.addr) + ", but a segment is there after it");
      Seg s;
      s.end = e.addr + e.size;
      s.stream = e.stream;
      s.pool = guess_pool(e.addr, e.size, e.stream, false);
      s.stack = e.stack;
      segs[e.addr] = s;
      break;
    }
    case Action::SegmentMap:
      if (!unmap_range(segs, e.addr, e.size))
        note(i, "segment_map of " + hex(e.addr) + ", but that range is not mapped after it");
      break;
    default: {  // SegmentUnmap
      if (overlaps(segs, e.addr, e.size)) note(i, "segment_unmap of " + hex(e.addr) + ", but it is mapped after it");
      Seg s;
      s.stream = e.stream;
      s.expandable = true;
      s.pool = guess_pool(e.addr, e.size, e.stream, true);
      map_range(segs, e.addr, e.size, s);
      break;
    }
  }
}

int64_t Replay::apply_segment_event(SegMap& segs, const TraceEvent& e, std::string* problem) const {
  switch (e.action) {
    case Action::SegmentAlloc: {
      if (overlaps(segs, e.addr, e.size)) {
        if (problem) *problem = "segment_alloc at " + hex(e.addr) + " overlaps a live segment";
        return 0;
      }
      Seg s;
      s.end = e.addr + e.size;
      s.stream = e.stream;
      s.pool = guess_pool(e.addr, e.size, e.stream, false);
      s.stack = e.stack;
      segs[e.addr] = s;
      return static_cast<int64_t>(e.size);
    }
    case Action::SegmentFree: {
      auto it = segs.find(e.addr);
      if (it == segs.end()) {
        if (problem) *problem = "segment_free of " + hex(e.addr) + ", which is not a live segment";
        return 0;
      }
      int64_t size = static_cast<int64_t>(it->second.end - it->first);
      segs.erase(it);
      return -size;
    }
    case Action::SegmentMap: {
      if (overlaps(segs, e.addr, e.size)) return 0;
      Seg s;
      s.stream = e.stream;
      s.expandable = true;
      s.pool = guess_pool(e.addr, e.size, e.stream, true);
      s.stack = e.stack;
      map_range(segs, e.addr, e.size, s);
      return static_cast<int64_t>(e.size);
    }
    case Action::SegmentUnmap: return unmap_range(segs, e.addr, e.size) ? -static_cast<int64_t>(e.size) : 0;
    default: return 0;
  }
}

// The forward sweep's working state.
struct Replay::SweepState {
  explicit SweepState(AllocatorModel& m) : model(m) {}
  AllocatorModel& model;
  // Where a live range's id is: the tag of the model's block at its address, which the sweep
  // probes anyway (one table probe per block event, not two), or, for a block the model does
  // not hold at that address (it could not follow the trace there), this table.
  FlatMap64<uint32_t> live;  // address -> range id, for ranges the model holds no block of
  size_t live_count = 0;     // live ranges, in both places
  struct Found {
    uint32_t id = kNoRange;
    ModelBlock* block = nullptr;  // the model's block at the address (null: none there)
    bool tagged = false;          // the id is the block's tag (else it is in `live`)
  };
  static constexpr uint32_t kNoRange = ModelBlock::kNoTag;
  Found find(uint64_t addr) {
    Found f;
    f.block = model.block_at(addr);
    if (f.block && f.block->tag != kNoRange) {
      f.id = f.block->tag;
      f.tagged = true;
    } else if (!live.empty()) {
      if (const uint32_t* id = live.find(addr)) f.id = *id;
    }
    return f;
  }
  SegMap segs;
  // Segments allocs fell in lately, by 2 MiB granule of the address: most allocs land in
  // one of a few segments, and the segment map is a tree. Emptied by segment events.
  struct SegHit {
    uint64_t lo = 1, hi = 0;  // [lo, hi): empty
  };
  std::array<SegHit, 64> seg_hits;
  size_t next_exact = 0;  // cursor into exact_size_
  Totals t;
  uint32_t since_checkpoint = 0;
  // The peaks so far (record's), compared inline: most events set neither.
  uint64_t peak_allocated = 0, peak_reserved = 0;
};

void Replay::sweep(const ReplayOptions& options, AllocatorModel& model) {
  const auto& trace = device_.trace;
  const uint32_t n = static_cast<uint32_t>(trace.size());
  SweepState s(model);
  for (uint32_t id = 0; id < ranges_.size(); ++id) {
    LiveRange r = range(id);
    // seed_model placed the start's blocks: a live one at the address untagged is this range's.
    if (ModelBlock* b = model.block_at(r.addr); b && b->state != ModelState::Free && b->tag == s.kNoRange)
      b->tag = id;
    else
      s.live.try_emplace(r.addr, id);
    ++s.live_count;
    if (!r.size_exact) ++estimated_blocks_;
    if (!r.pending_at_start) {
      s.t.allocated += r.size;
      s.t.requested += r.requested;
    }
    s.t.active += r.size;
  }
  s.segs = start_segments_;
  for (const auto& [addr, seg] : s.segs) s.t.reserved += seg.end - addr;
  start_totals_ = s.t;
  // One allocation for every range the window adds: no regrowth copies, no refaults.
  size_t allocs = 0;
  for (Action a : trace.actions()) allocs += a == Action::Alloc;
  ranges_.reserve(ranges_.size() + allocs);
  for (uint32_t i = 0; i < n; ++i) {
    const Action action = trace.action_at(i);
    const TraceEvent e = is_block_action(action) ? block_event(trace, i) : trace[i];
    switch (action) {
      case Action::Alloc: sweep_alloc(s, e, i); break;
      case Action::FreeRequested:
      case Action::FreeCompleted:
      case Action::Free: sweep_free(s, e, i); break;
      case Action::SegmentAlloc:
      case Action::SegmentFree:
      case Action::SegmentMap:
      case Action::SegmentUnmap: sweep_segment(s, e, i); break;
      default: break;
    }
    if (s.t.allocated > s.peak_allocated || s.t.reserved > s.peak_reserved || action == Action::Oom || i == 0)
      record(s, e, i);
    if (++s.since_checkpoint >= std::max<size_t>(std::max<size_t>(options.checkpoint_events, 1), s.live_count) &&
        i + 1 < n)
      checkpoint(s, i);
  }
}

void Replay::sweep_segment(SweepState& s, const TraceEvent& e, uint32_t i) {
  segment_events_.push_back(i);
  s.seg_hits.fill({});
  std::string problem;
  s.t.reserved += static_cast<uint64_t>(apply_segment_event(s.segs, e, &problem));  // two's complement delta
  reserved_after_.push_back(s.t.reserved);
  if (!problem.empty()) note(i, std::move(problem));
  switch (e.action) {
    case Action::SegmentAlloc:
      s.model.add_segment(e.addr, e.size, pool_key(e.stream, guess_pool(e.addr, e.size, e.stream, false)), false);
      break;
    case Action::SegmentFree: s.model.remove_segment(e.addr, e.size); break;
    case Action::SegmentMap:
      s.model.map(e.addr, e.size, pool_key(e.stream, guess_pool(e.addr, e.size, e.stream, true)));
      break;
    default: s.model.unmap(e.addr, e.size); break;
  }
  // A segment freed with live blocks in it (the trace contradicts itself): the ranges stay live.
  for (auto [addr, id] : s.model.take_dropped_tags()) s.live.try_emplace(addr, id);
}

// The program freed the block (free_requested, or a free that completes at once),
// and, when `completes`, the allocator took it back.
void Replay::release(SweepState& s, uint32_t id, uint32_t i, bool completes) {
  Stored& r = ranges_[id];
  if (r.freed == kNever && !(r.size_word & kPendingBit)) {
    r.freed = i;
    s.t.allocated -= size_of(id);
    s.t.requested -= requested_of(id);
  }
  if (completes) {
    r.end = i;
    s.t.active -= size_of(id);
  }
}

void Replay::sweep_alloc(SweepState& s, const TraceEvent& e, uint32_t i) {
  auto id = static_cast<uint32_t>(ranges_.size());
  if (SweepState::Found old = s.find(e.addr); old.id != s.kNoRange) {
    note(i, "alloc at " + hex(e.addr) + " while a block is already live there");
    release(s, old.id, i, true);  // the old block is replaced
    if (!old.tagged) s.live.erase(e.addr);
    s.model.free_completed(e.addr, old.block);
    --s.live_count;
  } else if (auto& hit = s.seg_hits[(e.addr >> 21) & 63]; e.addr < hit.lo || e.addr >= hit.hi) {
    auto seg = containing(s.segs, e.addr);
    if (seg == s.segs.end())
      note(i, "alloc at " + hex(e.addr) + " outside every segment");
    else
      hit = {seg->first, seg->second.end};
  }
  // The model says how big the block is; a block that survives to the dump has its dumped size.
  const AllocatorModel::Followed f = s.model.alloc_at(e.addr, rules::round_size(e.size, ctx_.snap.settings), id);
  if (!f.tagged) s.live.try_emplace(e.addr, id);
  ++s.live_count;
  uint64_t size = f.size;
  bool exact = f.exact;
  while (s.next_exact < exact_size_.size() && exact_size_[s.next_exact].first < i) ++s.next_exact;
  if (!exact || (s.next_exact < exact_size_.size() && exact_size_[s.next_exact].first == i &&
                 size != exact_size_[s.next_exact].second))
    if (!layout_check_.first_unfollowed_event) layout_check_.first_unfollowed_event = i;
  if (s.next_exact < exact_size_.size() && exact_size_[s.next_exact].first == i) {
    size = exact_size_[s.next_exact].second;  // the dump's: exact whatever the model said
    exact = true;
  }
  if (!exact) ++estimated_blocks_;
  ranges_.push_back(Stored{i, kNever, kNever, encode_size(id, size, exact, false), encode_before(id, s.t.allocated)});
  s.t.allocated += size;
  s.t.active += size;
  s.t.requested += e.size;
}

void Replay::sweep_free(SweepState& s, const TraceEvent& e, uint32_t i) {
  const SweepState::Found f = s.find(e.addr);
  if (f.id == s.kNoRange) {
    if (e.action != Action::FreeRequested)
      note(i, std::string(snapshot::to_string(e.action)) + " of " + hex(e.addr) + ", where no block is live");
    return;
  }
  bool completes = e.action != Action::FreeRequested;
  release(s, f.id, i, completes);
  if (completes) {
    if (!f.tagged) s.live.erase(e.addr);
    s.model.free_completed(e.addr, f.block);  // frees the block, and its tag with it
    --s.live_count;
  } else {
    s.model.free_requested(e.addr, f.block);
  }
}

// What consumers read of the totals after event i: peaks and OOMs.
void Replay::record(SweepState& s, const TraceEvent& e, uint32_t i) {
  if (!peak_allocated_ || s.t.allocated > peak_allocated_->totals.allocated) peak_allocated_ = TotalsAt{i, s.t};
  if (!peak_reserved_ || s.t.reserved > peak_reserved_->totals.reserved) peak_reserved_ = TotalsAt{i, s.t};
  if (e.action == Action::Oom) ooms_.push_back({i, s.t});
  s.peak_allocated = peak_allocated_->totals.allocated;
  s.peak_reserved = peak_reserved_->totals.reserved;
}

// The ranges active after event i, in id order. A range is active from its beginning until
// its block is taken back (end set), so they are the last checkpoint's that are still
// active, then those begun since that are: both runs are in id order and every id of the
// second is larger. (Listing the live blocks and sorting them cost a sort every checkpoint:
// 3% of bench_analyze on the no-frames file.)
void Replay::checkpoint(SweepState& s, uint32_t i) {
  Checkpoint c;
  c.event = i;
  c.first_new_range = static_cast<uint32_t>(ranges_.size());
  c.live.reserve(s.live_count);
  auto active = [&](uint32_t id) { return ranges_[id].end == kNever; };
  uint32_t from = 0;
  if (!checkpoints_.empty()) {
    const Checkpoint& last = checkpoints_.back();
    std::copy_if(last.live.begin(), last.live.end(), std::back_inserter(c.live), active);
    from = last.first_new_range;
  }
  for (uint32_t id = from; id < c.first_new_range; ++id)
    if (active(id)) c.live.push_back(id);
  checkpoints_.push_back(std::move(c));
  s.since_checkpoint = 0;
}

TotalsCursor::TotalsCursor(const Replay& replay) : r_(replay), t_(replay.start_totals_) {
  for (uint32_t id = 0; id < r_.first_window_range_; ++id) live_.try_emplace(r_.start_info_[id].addr, id);
  next_range_ = r_.first_window_range_;
}

const Totals& TotalsCursor::after(uint32_t i) {
  while (next_event_ <= i) step(next_event_++);
  return t_;
}

// What Replay::release took away at event i from range id, read from the range.
void TotalsCursor::release(uint32_t id, uint32_t i) {
  const Replay::Stored& r = r_.ranges_[id];
  if (r.freed == i) {
    t_.allocated -= r_.size_of(id);
    t_.requested -= r_.requested_of(id);
  }
  if (r.end == i) t_.active -= r_.size_of(id);
}

// Event i as the sweep applied it (sweep_alloc, sweep_free, segment events).
void TotalsCursor::step(uint32_t i) {
  const auto& trace = r_.device_.trace;
  switch (trace.action_at(i)) {
    case Action::Alloc: {
      uint64_t addr = trace.addr_at(i);
      if (uint32_t* old = live_.find(addr)) {
        release(*old, i);
        live_.erase(addr);
      }
      uint32_t id = next_range_++;  // every alloc event began one range, in order
      live_.try_emplace(addr, id);
      uint64_t size = r_.size_of(id);
      t_.allocated += size;
      t_.active += size;
      t_.requested += trace.size_at(i);
      break;
    }
    case Action::FreeRequested:
    case Action::FreeCompleted:
    case Action::Free: {
      uint64_t addr = trace.addr_at(i);
      if (uint32_t* id = live_.find(addr)) {
        uint32_t found = *id;
        release(found, i);
        if (r_.ranges_[found].end == i) live_.erase(addr);
      }
      break;
    }
    case Action::SegmentAlloc:
    case Action::SegmentFree:
    case Action::SegmentMap:
    case Action::SegmentUnmap: t_.reserved = r_.reserved_after_[next_segment_++]; break;
    default: break;
  }
}

}  // namespace memsnap::analysis
