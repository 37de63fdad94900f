// Per-segment accounting of one device state (the rules are in the header).
#include "memsnap/analysis/accounting.hpp"

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

double fragmentation_ratio(uint64_t largest, uint64_t total) {
  if (total == 0) return 0;
  return 1.0 - double(std::min(largest, total)) / double(total);
}

namespace {

/// Walks one segment's blocks unit by unit (the whole segment, or one page) and
/// decides where each unit's free bytes go (see the header).
class UnitWalker {
 public:
  UnitWalker(uint64_t unit, bool private_pool, std::vector<uint64_t>& share, std::vector<uint64_t>& free_stranded)
      : unit_(unit), private_(private_pool), share_(share), free_stranded_(free_stranded) {}

  /// Block `index` covers [start, end) counted from the segment's start.
  void add(uint32_t index, uint64_t start, uint64_t end, BlockState state) {
    if (end <= start) return;
    uint64_t first = start / unit_, last = (end - 1) / unit_;
    touch(first, index, state, std::min(end, (first + 1) * unit_) - start);
    if (last == first) return;
    if (last > first + 1) {  // whole units inside one block
      flush();
      uint64_t whole = (last - first - 1) * unit_;
      if (state == BlockState::Inactive) {
        (private_ ? private_held : releasable) += whole;
      } else if (state == BlockState::ActivePendingFree && !private_) {
        empty_cache_pending += whole;
      }
    }
    touch(last, index, state, end - last * unit_);
  }

  void finish() { flush(); }

  uint64_t releasable = 0, stranded = 0, private_held = 0, empty_cache_pending = 0;

 private:
  void touch(uint64_t unit_index, uint32_t block, BlockState state, uint64_t bytes) {
    if (unit_index != current_) {
      flush();
      current_ = unit_index;
    }
    switch (state) {
      case BlockState::ActiveAllocated: allocated_.push_back(block); break;
      case BlockState::ActivePendingFree: pending_ += bytes; break;
      case BlockState::Inactive:
        free_ += bytes;
        free_pieces_.emplace_back(block, bytes);
        break;
    }
  }

  void flush() {
    if (private_) {
      private_held += free_;
    } else if (allocated_.empty()) {
      releasable += free_;
      empty_cache_pending += pending_;
    } else if (free_ != 0) {
      stranded += free_;
      uint64_t n = allocated_.size(), each = free_ / n, rest = free_ % n;
      for (uint64_t i = 0; i < n; ++i) share_[allocated_[i]] += each + (i < rest ? 1 : 0);
      for (auto [b, bytes] : free_pieces_) free_stranded_[b] += bytes;
    }
    free_ = pending_ = 0;
    allocated_.clear();
    free_pieces_.clear();
    current_ = UINT64_MAX;
  }

  uint64_t unit_;
  bool private_;
  std::vector<uint64_t>& share_;
  std::vector<uint64_t>& free_stranded_;
  uint64_t current_ = UINT64_MAX;
  uint64_t free_ = 0, pending_ = 0;
  std::vector<uint32_t> allocated_;
  std::vector<std::pair<uint32_t, uint64_t>> free_pieces_;
};

void add_to_histogram(std::vector<SizeBucket>& h, uint64_t size) {
  if (size == 0) return;
  uint64_t lo = std::bit_floor(size);
  auto it = std::lower_bound(h.begin(), h.end(), lo, [](const SizeBucket& b, uint64_t v) { return b.min_bytes < v; });
  if (it == h.end() || it->min_bytes != lo) {
    SizeBucket b;
    b.min_bytes = lo;
    b.max_bytes = lo > (UINT64_MAX >> 1) ? UINT64_MAX : lo << 1;
    it = h.insert(it, b);
  }
  it->blocks += 1;
  it->bytes += size;
}

// One segment: its blocks by state, its release units walked, its pool's figures.
void account_segment(const snapshot::Device& d, size_t si, Accounting& a, PoolAccount& p,
                     std::vector<uint64_t>& free_stranded) {
  const Segment& s = d.segments[si];
  SegmentAccount& sa = a.segments[si];
  const bool private_pool = s.pool_id[0] != 0 || s.pool_id[1] != 0;
  uint64_t unit = s.expandable ? rules::expandable_page_size(s.pool) : std::max<uint64_t>(s.total_size, 1);
  UnitWalker walk(unit, private_pool, a.block_stranded, free_stranded);
  p.pool = s.pool;
  p.pool_id[0] = s.pool_id[0];
  p.pool_id[1] = s.pool_id[1];
  p.stream = s.stream;
  p.segments += 1;
  p.blocks += s.block_count;
  p.reserved_bytes += s.total_size;
  a.reserved_bytes += s.total_size;
  uint64_t pos = 0;  // offset from the segment's start (blocks tile it in address order)
  for (uint32_t k = 0; k < s.block_count; ++k) {
    uint32_t bi = s.first_block + k;
    const Block& b = d.blocks[bi];
    switch (b.state) {
      case BlockState::ActiveAllocated: {
        uint64_t requested = std::min(b.requested_size, b.size);
        if (b.requested_size > b.size) a.clamped.push_back({b.address, b.size, b.requested_size});
        sa.requested_bytes += requested;
        sa.internal_free_bytes += b.size - requested;
        sa.allocated_blocks += 1;
        p.allocated_bytes += b.size;
        break;
      }
      case BlockState::ActivePendingFree:
        sa.pending_free_bytes += b.size;
        sa.pending_blocks += 1;
        break;
      case BlockState::Inactive:
        sa.external_free_bytes += b.size;
        sa.free_blocks += 1;
        sa.largest_free_block_bytes = std::max(sa.largest_free_block_bytes, b.size);
        add_to_histogram(p.histogram, b.size);
        break;
    }
    walk.add(bi, pos, pos + b.size, b.state);
    pos += b.size;
  }
  if (pos < s.total_size) a.unaccounted_bytes += s.total_size - pos;
  walk.finish();
  sa.releasable_bytes = walk.releasable;
  sa.stranded_bytes = walk.stranded;
  sa.private_held_bytes = walk.private_held;
  sa.empty_cache_pending_bytes = walk.empty_cache_pending;
  sa.fragmentation = fragmentation_ratio(sa.largest_free_block_bytes, sa.external_free_bytes);

  a.requested_bytes += sa.requested_bytes;
  a.internal_free_bytes += sa.internal_free_bytes;
  a.pending_free_bytes += sa.pending_free_bytes;
  a.external_free_bytes += sa.external_free_bytes;
  a.releasable_bytes += sa.releasable_bytes;
  a.stranded_bytes += sa.stranded_bytes;
  a.private_held_bytes += sa.private_held_bytes;
  a.empty_cache_pending_bytes += sa.empty_cache_pending_bytes;
  a.largest_free_block_bytes = std::max(a.largest_free_block_bytes, sa.largest_free_block_bytes);
  if (sa.allocated_blocks == 0 && !private_pool) {
    a.releasable_segments += 1;
    a.releasable_whole_bytes += sa.releasable_bytes;
  } else if (sa.releasable_bytes != 0) {
    a.releasable_partial_segments += 1;
    a.releasable_partial_bytes += sa.releasable_bytes;
  }
  if (sa.stranded_bytes != 0) a.stranding_segments += 1;
  p.free_bytes += sa.external_free_bytes;
  p.free_blocks += sa.free_blocks;
  p.largest_free_block_bytes = std::max(p.largest_free_block_bytes, sa.largest_free_block_bytes);
  p.releasable_bytes += sa.releasable_bytes;
  p.stranded_bytes += sa.stranded_bytes;
  p.private_held_bytes += sa.private_held_bytes;
  for (uint32_t k = 0; k < s.block_count; ++k)
    p.largest_stranded_block_bytes = std::max(p.largest_stranded_block_bytes, free_stranded[s.first_block + k]);
}

}  // namespace

Accounting account(const Context& ctx, const snapshot::Device& d) {
  Accounting a;
  a.device = d.index;
  a.segment_count = d.segments.size();
  a.block_count = d.blocks.size();
  a.segments.resize(d.segments.size());
  a.block_stranded.assign(d.blocks.size(), 0);
  a.free_stranded.assign(d.blocks.size(), 0);
  std::map<std::tuple<int, int64_t, int64_t, uint64_t>, PoolAccount> pools;
  bool any_classic = false, any_expandable = false;

  for (size_t si = 0; si < d.segments.size(); ++si) {
    const Segment& s = d.segments[si];
    (s.expandable ? any_expandable : any_classic) = true;
    account_segment(d, si, a, pools[{int(s.pool), s.pool_id[0], s.pool_id[1], s.stream}], a.free_stranded);
  }
  a.allocated_bytes = a.requested_bytes + a.internal_free_bytes;
  a.active_bytes = a.allocated_bytes + a.pending_free_bytes;
  a.regime = any_expandable ? (any_classic ? Regime::Mixed : Regime::Expandable) : Regime::Classic;
  for (auto& [key, p] : pools) {
    p.fragmentation = fragmentation_ratio(p.largest_stranded_block_bytes, p.stranded_bytes);
    a.pools.push_back(std::move(p));
  }
  for (uint64_t s : a.block_stranded) a.pinning_blocks += s != 0;
  a.stacks_recorded = ctx.snap.stacks.has_frames();
  std::vector<uint8_t> all(d.segments.size(), 1);
  a.pinning_sites = detail::collect_pinning_sites(ctx, d, a, all);
  return a;
}

namespace detail {

std::vector<PinningSite> collect_pinning_sites(const Context& ctx, const snapshot::Device& d, const Accounting& a,
                                               const std::vector<uint8_t>& segment_kept) {
  std::vector<PinningSite> out;
  std::unordered_map<uint32_t, size_t> site_index;  // SiteId -> index in out (keys are dense ids)
  std::vector<uint32_t> last_segment;               // per site: last segment counted
  std::vector<snapshot::StackId> example_stack;
  for (size_t si = 0; si < d.segments.size(); ++si) {
    if (!segment_kept[si]) continue;
    const Segment& s = d.segments[si];
    for (uint32_t k = 0; k < s.block_count; ++k) {
      uint32_t bi = s.first_block + k;
      uint64_t share = a.block_stranded[bi];
      if (share == 0) continue;
      const Block& b = d.blocks[bi];
      SiteId id = ctx.sites.site_of(b.stack);
      auto [it, inserted] = site_index.try_emplace(id.v, out.size());
      if (inserted) {
        out.emplace_back().site = ctx.sites.name(id);
        last_segment.push_back(UINT32_MAX);
        example_stack.push_back(b.stack);
      }
      PinningSite& ps = out[it->second];
      ps.live_bytes += b.size;
      ps.stranded_bytes += share;
      ps.blocks += 1;
      if (last_segment[it->second] != si) {
        last_segment[it->second] = static_cast<uint32_t>(si);
        ps.segments += 1;
      }
      if (ps.blocks == 1 || share > ps.example_stranded_bytes ||
          (share == ps.example_stranded_bytes && b.address < ps.example_address)) {
        ps.example_address = b.address;
        ps.example_size = b.size;
        ps.example_stranded_bytes = share;
        example_stack[it->second] = b.stack;
      }
    }
  }
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].stack = ctx.sites.stack(example_stack[i]);
    out[i].callers = ctx.sites.callers(example_stack[i], PinningSite::kCallers);
  }
  std::sort(out.begin(), out.end(), [](const PinningSite& x, const PinningSite& y) {
    if (x.stranded_bytes != y.stranded_bytes) return x.stranded_bytes > y.stranded_bytes;
    if (x.blocks != y.blocks) return x.blocks > y.blocks;
    return x.site < y.site;
  });
  return out;
}

}  // namespace detail

std::vector<uint32_t> segments_worst_first(const snapshot::Device& d, const Accounting& a) {
  std::vector<uint32_t> order(d.segments.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    const auto &p = a.segments[x], &q = a.segments[y];
    if (p.stranded_bytes != q.stranded_bytes) return p.stranded_bytes > q.stranded_bytes;
    if (p.fragmentation != q.fragmentation) return p.fragmentation > q.fragmentation;
    if (p.external_free_bytes != q.external_free_bytes) return p.external_free_bytes > q.external_free_bytes;
    return d.segments[x].address < d.segments[y].address;
  });
  return order;
}

}  // namespace memsnap::analysis
