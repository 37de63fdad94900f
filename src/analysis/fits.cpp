// The allocator's decision for one request (rules and limits in the header).
#include "memsnap/analysis/fits.hpp"

#include <algorithm>
#include <vector>

#include "memsnap/analysis/allocator_rules.hpp"

namespace memsnap::analysis {

using snapshot::Block;
using snapshot::BlockState;
using snapshot::Pool;
using snapshot::Segment;

namespace {

bool default_pool(const Segment& s) {
  return s.pool_id[0] == 0 && s.pool_id[1] == 0;
}

uint64_t round_up(uint64_t n, uint64_t step) {
  return (n + step - 1) / step * step;
}

/// find_expandable_block + map_block: the pages mapped for `rounded` when no free
/// block fits. `ranges` are the mapped ranges of the request's stream and pool in
/// address order.
void map_new_pages(const snapshot::Device& d, const std::vector<const Segment*>& ranges, FitsAnswer& a) {
  uint64_t page = rules::expandable_page_size(a.pool);
  for (size_t i = 0; i < ranges.size(); ++i) {
    const Segment& s = *ranges[i];
    auto blocks = d.blocks_of(s);
    uint64_t end = s.address + s.total_size;
    bool last = i + 1 == ranges.size();
    uint64_t gap = last ? UINT64_MAX : (ranges[i + 1]->address > end ? ranges[i + 1]->address - end : 0);
    if (gap == 0) continue;
    const Block* tail = !blocks.empty() && blocks.back().state == BlockState::Inactive ? &blocks.back() : nullptr;
    uint64_t have = tail ? tail->size : 0;
    uint64_t avail = gap == UINT64_MAX ? UINT64_MAX : have + gap;
    if (!last && avail < a.rounded_bytes) {
      // The walk continues into the next range while its blocks are free.
      auto next = d.blocks_of(*ranges[i + 1]);
      for (const Block& b : next) {
        if (b.state != BlockState::Inactive || avail >= a.rounded_bytes) break;
        avail += b.size;
      }
    }
    if (avail < a.rounded_bytes) continue;
    a.new_segment_bytes = std::min(round_up(a.rounded_bytes - std::min(have, a.rounded_bytes), page), gap);
    if (tail) {
      a.grows_block_address = tail->address;
      a.grows_block_bytes = tail->size;
    }
    return;
  }
  // No mapped range on this stream and pool yet: a fresh one.
  a.new_segment_bytes = round_up(a.rounded_bytes, page);
}

}  // namespace

FitsAnswer would_fit(const snapshot::Device& d, const snapshot::AllocatorSettings& settings, const FitsQuery& q) {
  FitsAnswer a;
  a.request_bytes = q.bytes;
  a.stream = q.stream;
  a.rounded_bytes = rules::round_size(q.bytes, settings);
  a.pool = rules::pool_for(a.rounded_bytes);
  a.max_split_size = settings.max_split_size;
  a.expandable = settings.expandable_segments;

  std::vector<rules::FreeBlockRef> candidates;
  std::vector<const Segment*> ranges;  // expandable mapped ranges of this stream and pool
  for (const Segment& s : d.segments) {
    bool same_pool = s.pool == a.pool || (s.pool == Pool::Unknown && rules::pool_for(s.total_size) == a.pool);
    if (!same_pool) continue;
    auto blocks = d.blocks_of(s);
    if (!default_pool(s)) {
      for (const Block& b : blocks)
        if (b.state == BlockState::Inactive) a.private_pools_free_bytes += b.size;
      continue;
    }
    if (s.stream != q.stream) {
      for (const Block& b : blocks)
        if (b.state == BlockState::Inactive) a.other_streams_free_bytes += b.size;
      continue;
    }
    if (s.expandable) {
      a.expandable = true;
      ranges.push_back(&s);
    }
    for (size_t k = 0; k < blocks.size(); ++k) {
      const Block& b = blocks[k];
      if (b.state == BlockState::ActivePendingFree) a.pending_free_bytes += b.size;
      if (b.state != BlockState::Inactive) continue;
      a.free_blocks += 1;
      a.free_bytes += b.size;
      a.largest_free_block_bytes = std::max(a.largest_free_block_bytes, b.size);
      rules::FreeBlockRef ref;
      ref.size = b.size;
      ref.address = b.address;
      // A free block ending a mapped range can grow into the unmapped space after it.
      if (s.expandable && k + 1 == blocks.size()) ref.growable_bytes = UINT64_MAX;
      candidates.push_back(ref);
    }
  }
  std::sort(ranges.begin(), ranges.end(), [](const Segment* x, const Segment* y) { return x->address < y->address; });
  // Growable tails: the gap up to the next mapped range, unbounded after the last one.
  for (auto& c : candidates) {
    if (c.growable_bytes == 0) continue;
    for (size_t i = 0; i + 1 < ranges.size(); ++i) {
      uint64_t end = ranges[i]->address + ranges[i]->total_size;
      if (c.address < end && c.address >= ranges[i]->address)
        c.growable_bytes = ranges[i + 1]->address > end ? ranges[i + 1]->address - end : 0;
    }
  }

  rules::BestFit fit = rules::best_fit(candidates, a.rounded_bytes, settings.max_split_size, a.expandable);
  if (fit.rejected) a.oversize_rejected_bytes = candidates[*fit.rejected].size;
  if (fit.chosen) {
    const auto& c = candidates[*fit.chosen];
    a.served_from_cache = true;
    a.block_address = c.address;
    a.block_bytes = c.size;
    a.split = rules::should_split(c.size, a.rounded_bytes, a.pool, a.expandable, settings.max_split_size);
    a.remainder_bytes = c.size - a.rounded_bytes;
    return a;
  }
  if (a.expandable)
    map_new_pages(d, ranges, a);
  else
    a.new_segment_bytes = rules::segment_size_for(a.rounded_bytes);
  return a;
}

}  // namespace memsnap::analysis
