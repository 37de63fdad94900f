// Trace replay: undo every event from the dumped state to find the window's start, then step forwards.
#include "memsnap/analysis/replay.hpp"

#include <algorithm>
#include <cstdio>

#include "memsnap/analysis/allocator_rules.hpp"

namespace memsnap::analysis {

using snapshot::Action;
using snapshot::BlockState;
using snapshot::Pool;
using snapshot::TraceEvent;

namespace {

using SegMap = std::map<uint64_t, ReplaySegment>;

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// The segment (mapped range) containing `addr`, or end().
SegMap::const_iterator containing(const SegMap& segs, uint64_t addr) {
  auto it = segs.upper_bound(addr);
  if (it == segs.begin()) return segs.end();
  --it;
  return addr < it->second.end ? it : segs.end();
}

// Whether [a, a + n) overlaps any range.
bool overlaps(const SegMap& segs, uint64_t a, uint64_t n) {
  auto it = segs.lower_bound(a);
  if (it != segs.end() && it->first < a + n) return true;
  if (it != segs.begin() && std::prev(it)->second.end > a) return true;
  return false;
}

// Expandable segments: mapping pages joins them to the adjacent mapped range of
// the same reservation, as the snapshot reports each contiguous range once.
void map_range(SegMap& segs, uint64_t a, uint64_t n, ReplaySegment proto) {
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
bool unmap_range(SegMap& segs, uint64_t a, uint64_t n) {
  auto it = containing(segs, a);
  if (it == segs.end() || it->second.end < a + n) return false;
  uint64_t start = it->first;
  ReplaySegment seg = it->second;
  segs.erase(it);
  if (start < a) {
    ReplaySegment left = seg;
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
  const snapshot::Segment* best = nullptr;
  uint64_t best_d = UINT64_MAX;
  for (const auto& s : device_.segments) {
    if (!s.expandable || s.stream != stream) continue;
    uint64_t d = s.address > addr ? s.address - addr : addr - s.address;
    if (d < best_d) best_d = d, best = &s;
  }
  if (best) return best->pool;
  return size % rules::kLargeBuffer == 0 ? Pool::Large : Pool::Small;
}

void Replay::note(uint32_t event, std::string what) {
  if (!mismatch_ || event < mismatch_->event) mismatch_ = ReplayMismatch{event, std::move(what)};
}

bool Replay::window_starts_mid_run() const { return !start_.live_.empty() || !start_.segments_.empty(); }

Replay::Replay(const snapshot::Snapshot& snap, const snapshot::Device& device) : snap_(snap), device_(device) {
  start_.replay_ = this;
  // The dumped state: exact.
  auto& live = start_.live_;
  auto& segs = start_.segments_;
  for (const auto& s : device_.segments) {
    expandable_ = expandable_ || s.expandable;
    ReplaySegment rs;
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
      LiveAlloc a;
      a.size = b.size;
      a.requested = b.requested_size;
      a.stream = s.stream;
      a.stack = b.stack;
      a.pending = b.state == BlockState::ActivePendingFree;
      live[b.address] = a;
    }
  }
  undo_all(live, segs);

  for (const auto& [addr, a] : live) {
    if (!a.size_exact) ++estimated_blocks_;
    if (!a.pending) {
      start_.totals_.allocated += a.size;
      start_.totals_.requested += a.requested;
    }
    start_.totals_.active += a.size;
  }
  for (const auto& [addr, s] : segs) start_.totals_.reserved += s.end - addr;

  // Forwards once to check every event against the state it meets.
  ReplayState st = start_;
  const auto& trace = device_.trace;
  for (uint32_t i = 0; i < trace.size(); ++i) {
    const TraceEvent& e = trace[i];
    switch (e.action) {
      case Action::Alloc:
        if (!exact_size_.count(i)) ++estimated_blocks_;
        if (st.live_.count(e.addr)) note(i, "alloc at " + hex(e.addr) + " while a block is already live there");
        else if (containing(st.segments_, e.addr) == st.segments_.end())
          note(i, "alloc at " + hex(e.addr) + " outside every segment");
        break;
      case Action::FreeRequested:
      case Action::FreeCompleted:
      case Action::Free:
        if (!st.live_.count(e.addr))
          note(i, std::string(snapshot::to_string(e.action)) + " of " + hex(e.addr) + ", where no block is live");
        break;
      case Action::SegmentAlloc:
        if (overlaps(st.segments_, e.addr, e.size))
          note(i, "segment_alloc at " + hex(e.addr) + " overlaps a live segment");
        break;
      case Action::SegmentFree:
        if (!st.segments_.count(e.addr)) note(i, "segment_free of " + hex(e.addr) + ", which is not a live segment");
        break;
      default: break;
    }
    st.step();
  }
}

void Replay::undo_all(std::unordered_map<uint64_t, LiveAlloc>& live, SegMap& segs) {
  const auto& trace = device_.trace;
  for (size_t k = trace.size(); k-- > 0;) {
    const TraceEvent& e = trace[k];
    uint32_t i = static_cast<uint32_t>(k);
    switch (e.action) {
      case Action::Alloc: {
        auto it = live.find(e.addr);
        if (it == live.end() || it->second.pending) {
          note(i, "alloc at " + hex(e.addr) + ", but no block is allocated there after it");
          if (it != live.end()) live.erase(it);
          break;
        }
        if (it->second.size_exact) exact_size_[i] = it->second.size;
        live.erase(it);
        break;
      }
      case Action::FreeRequested: {
        auto it = live.find(e.addr);
        if (it == live.end()) {
          note(i, "free_requested of " + hex(e.addr) + ", but its block is not awaiting completion after it");
          LiveAlloc a;
          a.size = rules::round_size(e.size, snap_.settings);
          a.requested = e.size;
          a.stream = e.stream;
          a.stack = e.stack;
          a.size_exact = false;
          live[e.addr] = a;
        } else {
          it->second.pending = false;
        }
        break;
      }
      case Action::FreeCompleted:
      case Action::Free: {
        if (live.count(e.addr)) note(i, "free of " + hex(e.addr) + ", but a block is still live there after it");
        LiveAlloc a;
        a.size = rules::round_size(e.size, snap_.settings);
        a.requested = e.size;
        a.stream = e.stream;
        a.stack = e.stack;
        a.pending = e.action == Action::FreeCompleted;
        a.size_exact = false;
        live[e.addr] = a;
        break;
      }
      case Action::SegmentAlloc: {
        auto it = segs.find(e.addr);
        if (it == segs.end() || it->second.end - it->first != e.size) {
          note(i, "segment_alloc of " + hex(e.addr) + ", but no such segment exists after it");
          if (it != segs.end()) segs.erase(it);
        } else {
          segs.erase(it);
        }
        break;
      }
      case Action::SegmentFree: {
        if (overlaps(segs, e.addr, e.size)) note(i, "segment_free of " + hex(e.addr) + ", but a segment is there after it");
        ReplaySegment s;
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
      case Action::SegmentUnmap: {
        if (overlaps(segs, e.addr, e.size)) note(i, "segment_unmap of " + hex(e.addr) + ", but it is mapped after it");
        ReplaySegment s;
        s.stream = e.stream;
        s.expandable = true;
        s.pool = guess_pool(e.addr, e.size, e.stream, true);
        map_range(segs, e.addr, e.size, s);
        break;
      }
      default: break;
    }
  }
}

void ReplayState::step() {
  const auto& trace = replay_->device_.trace;
  uint32_t i = position_ == kBeforeWindow ? 0 : position_ + 1;
  if (i >= trace.size()) return;
  position_ = i;
  const TraceEvent& e = trace[i];
  switch (e.action) {
    case Action::Alloc: {
      LiveAlloc a;
      if (auto it = replay_->exact_size_.find(i); it != replay_->exact_size_.end()) {
        a.size = it->second;
      } else {
        a.size = rules::round_size(e.size, replay_->snap_.settings);
        a.size_exact = false;
      }
      a.requested = e.size;
      a.stream = e.stream;
      a.stack = e.stack;
      a.alloc_event = i;
      auto [it, inserted] = live_.try_emplace(e.addr, a);
      if (!inserted) {  // inconsistent trace: the old block is replaced
        const LiveAlloc& old = it->second;
        if (!old.pending) {
          totals_.allocated -= old.size;
          totals_.requested -= old.requested;
        }
        totals_.active -= old.size;
        it->second = a;
      }
      totals_.allocated += a.size;
      totals_.active += a.size;
      totals_.requested += a.requested;
      break;
    }
    case Action::FreeRequested: {
      auto it = live_.find(e.addr);
      if (it != live_.end() && !it->second.pending) {
        it->second.pending = true;
        totals_.allocated -= it->second.size;
        totals_.requested -= it->second.requested;
      }
      break;
    }
    case Action::FreeCompleted:
    case Action::Free: {
      auto it = live_.find(e.addr);
      if (it != live_.end()) {
        if (!it->second.pending) {
          totals_.allocated -= it->second.size;
          totals_.requested -= it->second.requested;
        }
        totals_.active -= it->second.size;
        live_.erase(it);
      }
      break;
    }
    case Action::SegmentAlloc: {
      if (overlaps(segments_, e.addr, e.size)) break;
      ReplaySegment s;
      s.end = e.addr + e.size;
      s.stream = e.stream;
      s.pool = replay_->guess_pool(e.addr, e.size, e.stream, false);
      s.stack = e.stack;
      segments_[e.addr] = s;
      totals_.reserved += e.size;
      break;
    }
    case Action::SegmentFree: {
      auto it = segments_.find(e.addr);
      if (it != segments_.end()) {
        totals_.reserved -= it->second.end - it->first;
        segments_.erase(it);
      }
      break;
    }
    case Action::SegmentMap: {
      if (overlaps(segments_, e.addr, e.size)) break;
      ReplaySegment s;
      s.stream = e.stream;
      s.expandable = true;
      s.pool = replay_->guess_pool(e.addr, e.size, e.stream, true);
      s.stack = e.stack;
      map_range(segments_, e.addr, e.size, s);
      totals_.reserved += e.size;
      break;
    }
    case Action::SegmentUnmap:
      if (unmap_range(segments_, e.addr, e.size)) totals_.reserved -= e.size;
      break;
    default: break;
  }
}

uint64_t ReplayState::estimated_live_blocks() const {
  uint64_t n = 0;
  for (const auto& [addr, a] : live_) n += !a.size_exact;
  return n;
}

ReplayState Replay::state_after(uint32_t index) const {
  ReplayState s = start_;
  uint32_t last = std::min<uint32_t>(index, static_cast<uint32_t>(device_.trace.size()) - 1);
  if (device_.trace.empty()) return s;
  for (uint32_t i = 0; i <= last; ++i) s.step();
  return s;
}

snapshot::Device ReplayState::to_device(int index) const {
  snapshot::Device d;
  d.index = index;
  std::vector<std::pair<uint64_t, const LiveAlloc*>> blocks;
  blocks.reserve(live_.size());
  for (const auto& [addr, a] : live_) blocks.emplace_back(addr, &a);
  std::sort(blocks.begin(), blocks.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  size_t bi = 0;
  uint32_t file_index = 0;
  for (const auto& [start, rs] : segments_) {
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
    while (bi < blocks.size() && blocks[bi].first < start) ++bi;  // outside every segment
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
    for (; bi < blocks.size() && blocks[bi].first < rs.end; ++bi) {
      const auto& [addr, a] = blocks[bi];
      if (addr < cursor) continue;  // overlaps an estimated neighbour: keep the first
      gap(addr);
      snapshot::Block b;
      b.address = addr;
      b.size = std::min(a->size, rs.end - addr);
      b.requested_size = a->requested;
      b.requested_known = true;
      b.stack = a->stack;
      b.state = a->pending ? BlockState::ActivePendingFree : BlockState::ActiveAllocated;
      d.blocks.push_back(b);
      cursor = addr + b.size;
    }
    gap(rs.end);
    s.block_count = static_cast<uint32_t>(d.blocks.size() - s.first_block);
    d.segments.push_back(s);
  }
  return d;
}

}  // namespace memsnap::analysis
