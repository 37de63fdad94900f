// Free memory by cause, per pool and stream, and the live blocks that pin it (rules in the header).
#include "memsnap/analysis/fragmentation.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <tuple>
#include <unordered_map>

#include "memsnap/analysis/allocator_rules.hpp"

namespace memsnap::analysis {

using snapshot::Block;
using snapshot::BlockState;
using snapshot::Segment;

const char* to_string(Regime r) {
  switch (r) {
    case Regime::Classic: return "classic";
    case Regime::Expandable: return "expandable";
    case Regime::Mixed: return "mixed";
  }
  return "?";
}

double fragmentation_ratio(uint64_t largest_free, uint64_t total_free) {
  if (total_free == 0) return 0;
  return 1.0 - double(std::min(largest_free, total_free)) / double(total_free);
}

namespace {

/// Walks one segment's blocks unit by unit (the whole segment, or one page) and
/// splits its free bytes into releasable and stranded, sharing the stranded bytes
/// of each unit equally among the live blocks that overlap it.
class UnitWalker {
 public:
  UnitWalker(uint64_t unit, std::vector<uint64_t>& share, std::vector<uint8_t>& pinning)
      : unit_(unit), share_(share), pinning_(pinning) {}

  /// Block `index` covers [start, end) counted from the segment's start.
  void add(uint32_t index, uint64_t start, uint64_t end, bool live) {
    if (end <= start) return;
    uint64_t first = start / unit_, last = (end - 1) / unit_;
    touch(first, index, live, std::min(end, (first + 1) * unit_) - start);
    if (last == first) return;
    if (!live && last > first + 1) {  // whole units inside one free block
      flush();
      releasable += (last - first - 1) * unit_;
    }
    touch(last, index, live, end - last * unit_);
  }

  void finish() { flush(); }

  uint64_t releasable = 0, stranded = 0;

 private:
  void touch(uint64_t unit_index, uint32_t block, bool live, uint64_t bytes) {
    if (unit_index != current_) {
      flush();
      current_ = unit_index;
    }
    if (live) live_.push_back(block);
    else free_ += bytes;
  }

  void flush() {
    if (free_ != 0) {
      if (live_.empty()) {
        releasable += free_;
      } else {
        stranded += free_;
        uint64_t n = live_.size(), each = free_ / n, rest = free_ % n;
        for (uint64_t i = 0; i < n; ++i) share_[live_[i]] += each + (i < rest ? 1 : 0);
      }
    }
    for (uint32_t b : live_) pinning_[b] = pinning_[b] || free_ != 0;
    free_ = 0;
    live_.clear();
    current_ = UINT64_MAX;
  }

  uint64_t unit_;
  std::vector<uint64_t>& share_;
  std::vector<uint8_t>& pinning_;
  uint64_t current_ = UINT64_MAX;
  uint64_t free_ = 0;
  std::vector<uint32_t> live_;
};

void add_to_histogram(std::vector<SizeBucket>& h, uint64_t size) {
  if (size == 0) return;
  uint64_t lo = std::bit_floor(size);
  auto it = std::find_if(h.begin(), h.end(), [&](const SizeBucket& b) { return b.min_bytes == lo; });
  if (it == h.end()) {
    SizeBucket b;
    b.min_bytes = lo;
    b.max_bytes = lo << 1;
    it = h.insert(std::upper_bound(h.begin(), h.end(), lo, [](uint64_t v, const SizeBucket& x) { return v < x.min_bytes; }),
                  b);
  }
  it->blocks += 1;
  it->bytes += size;
}

}  // namespace

namespace {

/// User frames outside the site frame, innermost first.
std::vector<std::string> callers_of(const snapshot::Snapshot& snap, Sites& sites, snapshot::StackId stack) {
  std::vector<std::string> out;
  const std::string& site = sites.site(stack);
  bool past_site = false;
  for (snapshot::FrameId id : snap.stacks[stack]) {
    const snapshot::Frame& fr = snap.frames[id];
    std::string_view file = snap.strings[fr.filename];
    if (is_noise_frame(file, snap.strings[fr.name]) || classify_frame(file) != FrameKind::User) continue;
    std::string text = sites.frame_string(id);
    if (!past_site) {
      past_site = text == site;
      continue;
    }
    out.push_back(std::move(text));
    if (out.size() == PinningSite::kCallers) break;
  }
  return out;
}

}  // namespace

Fragmentation analyze_fragmentation(const snapshot::Snapshot& snap, const snapshot::Device& d, Sites& sites) {
  Fragmentation f;
  f.device = d.index;
  f.segment_count = d.segments.size();
  f.segments.resize(d.segments.size());
  std::vector<uint64_t> share(d.blocks.size(), 0);
  std::vector<uint8_t> pinning(d.blocks.size(), 0);
  std::map<std::tuple<int, int64_t, int64_t, uint64_t>, PoolFragmentation> pools;
  bool any_classic = false, any_expandable = false;

  for (size_t si = 0; si < d.segments.size(); ++si) {
    const Segment& s = d.segments[si];
    SegmentFragmentation& sf = f.segments[si];
    (s.expandable ? any_expandable : any_classic) = true;
    uint64_t unit = s.expandable ? rules::expandable_page_size(s.pool) : std::max<uint64_t>(s.total_size, 1);
    UnitWalker walk(unit, share, pinning);
    PoolFragmentation& p = pools[{int(s.pool), s.pool_id[0], s.pool_id[1], s.stream}];
    p.pool = s.pool;
    p.pool_id[0] = s.pool_id[0];
    p.pool_id[1] = s.pool_id[1];
    p.stream = s.stream;
    p.segments += 1;
    p.reserved_bytes += s.total_size;
    f.reserved_bytes += s.total_size;

    uint64_t pos = 0;  // offset from the segment's start (blocks tile it in address order)
    for (uint32_t k = 0; k < s.block_count; ++k) {
      uint32_t bi = s.first_block + k;
      const Block& b = d.blocks[bi];
      switch (b.state) {
        case BlockState::ActiveAllocated:
          sf.requested_bytes += std::min(b.requested_size, b.size);
          sf.internal_free_bytes += b.size >= b.requested_size ? b.size - b.requested_size : 0;
          sf.live_blocks += 1;
          break;
        case BlockState::ActivePendingFree:
          sf.pending_free_bytes += b.size;
          sf.live_blocks += 1;
          break;
        case BlockState::Inactive:
          sf.external_free_bytes += b.size;
          sf.free_blocks += 1;
          sf.largest_free_block_bytes = std::max(sf.largest_free_block_bytes, b.size);
          add_to_histogram(p.histogram, b.size);
          break;
      }
      walk.add(bi, pos, pos + b.size, b.is_active());
      pos += b.size;
    }
    walk.finish();
    sf.releasable_bytes = walk.releasable;
    sf.stranded_bytes = walk.stranded;
    sf.fragmentation = fragmentation_ratio(sf.largest_free_block_bytes, sf.external_free_bytes);

    f.requested_bytes += sf.requested_bytes;
    f.internal_free_bytes += sf.internal_free_bytes;
    f.pending_free_bytes += sf.pending_free_bytes;
    f.external_free_bytes += sf.external_free_bytes;
    f.releasable_bytes += sf.releasable_bytes;
    f.stranded_bytes += sf.stranded_bytes;
    f.largest_free_block_bytes = std::max(f.largest_free_block_bytes, sf.largest_free_block_bytes);
    if (sf.live_blocks == 0) f.releasable_segments += 1;
    if (sf.stranded_bytes != 0) f.stranding_segments += 1;
    p.free_bytes += sf.external_free_bytes;
    p.free_blocks += sf.free_blocks;
    p.largest_free_block_bytes = std::max(p.largest_free_block_bytes, sf.largest_free_block_bytes);
    p.releasable_bytes += sf.releasable_bytes;
    p.stranded_bytes += sf.stranded_bytes;
  }
  f.regime = any_expandable ? (any_classic ? Regime::Mixed : Regime::Expandable) : Regime::Classic;
  for (auto& [key, p] : pools) {
    p.fragmentation = fragmentation_ratio(p.largest_free_block_bytes, p.free_bytes);
    f.pools.push_back(std::move(p));
  }

  // Pinning blocks grouped by allocation site.
  std::unordered_map<uint32_t, size_t> site_index;  // SiteId -> index in pinning_sites
  std::vector<uint32_t> last_segment;               // per site: last segment counted
  for (size_t si = 0; si < d.segments.size(); ++si) {
    const Segment& s = d.segments[si];
    for (uint32_t k = 0; k < s.block_count; ++k) {
      uint32_t bi = s.first_block + k;
      if (!pinning[bi]) continue;
      const Block& b = d.blocks[bi];
      f.pinning_blocks += 1;
      SiteId id = sites.site_of(b.stack);
      auto [it, inserted] = site_index.try_emplace(id.v, f.pinning_sites.size());
      if (inserted) {
        PinningSite ps;
        ps.site = sites.name(id);
        f.pinning_sites.push_back(std::move(ps));
        last_segment.push_back(UINT32_MAX);
      }
      PinningSite& ps = f.pinning_sites[it->second];
      ps.live_bytes += b.size;
      ps.stranded_bytes += share[bi];
      ps.blocks += 1;
      if (last_segment[it->second] != si) {
        last_segment[it->second] = static_cast<uint32_t>(si);
        ps.segments += 1;
      }
      if (ps.blocks == 1 || share[bi] > ps.example_stranded_bytes ||
          (share[bi] == ps.example_stranded_bytes && b.address < ps.example_address)) {
        ps.example_address = b.address;
        ps.example_size = b.size;
        ps.example_stranded_bytes = share[bi];
        ps.stack = sites.stack(b.stack);
        ps.callers = callers_of(snap, sites, b.stack);
      }
    }
  }
  std::sort(f.pinning_sites.begin(), f.pinning_sites.end(), [](const PinningSite& a, const PinningSite& b) {
    if (a.stranded_bytes != b.stranded_bytes) return a.stranded_bytes > b.stranded_bytes;
    if (a.blocks != b.blocks) return a.blocks > b.blocks;
    return a.site < b.site;
  });
  return f;
}

std::vector<uint32_t> segments_worst_first(const snapshot::Device& d, const Fragmentation& f) {
  std::vector<uint32_t> order(d.segments.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const auto &x = f.segments[a], &y = f.segments[b];
    if (x.stranded_bytes != y.stranded_bytes) return x.stranded_bytes > y.stranded_bytes;
    if (x.fragmentation != y.fragmentation) return x.fragmentation > y.fragmentation;
    if (x.external_free_bytes != y.external_free_bytes) return x.external_free_bytes > y.external_free_bytes;
    return d.segments[a].address < d.segments[b].address;
  });
  return order;
}

}  // namespace memsnap::analysis
