// The allocator's rounding, pool, segment-size and split rules.
#include "memsnap/analysis/allocator_rules.hpp"

#include <algorithm>
#include <bit>
#include <numeric>
#include <vector>

namespace memsnap::analysis::rules {

uint64_t round_size_divisions(uint64_t size, const snapshot::AllocatorSettings& settings) {
  if (size < kMinBlockSize) return kMinBlockSize;
  // CUDAAllocatorConfig::roundup_power2_divisions: 16 intervals, one per power of
  // two from 1 MiB (everything smaller uses the first, everything larger the last).
  uint64_t divisions = 0;
  if (!settings.roundup_power2_divisions.empty()) {
    int log_size = std::bit_width(size) - 1;
    int index = std::min(std::max(log_size - 20, 0), 15);
    for (const auto& [bucket_mib, div] : settings.roundup_power2_divisions)
      if (bucket_mib == (uint64_t{1} << index)) divisions = div;
  }
  if (divisions > 1 && size > kMinBlockSize * divisions) {
    // roundup_power2_next_division
    if (std::has_single_bit(size)) return size;
    uint64_t floor2 = std::bit_floor(size);
    uint64_t step = floor2 >> (std::bit_width(divisions) - 1);
    if (step == 0) return floor2 << 1;
    uint64_t down = size & ~(step - 1);
    return down == size ? size : down + step;
  }
  return kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
}

snapshot::Pool pool_for(uint64_t rounded) {
  return rounded <= kSmallSize ? snapshot::Pool::Small : snapshot::Pool::Large;
}

uint64_t segment_size_for(uint64_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((rounded + kRoundLarge - 1) / kRoundLarge);
}

uint64_t expandable_page_size(snapshot::Pool pool) {
  return pool == snapshot::Pool::Small ? kSmallBuffer : kLargeBuffer;
}

bool oversize_allows(uint64_t block_size, uint64_t rounded, std::optional<uint64_t> max_split_size) {
  if (!max_split_size) return true;
  if (rounded < *max_split_size) return block_size < *max_split_size;
  return block_size < rounded + kLargeBuffer;
}

BestFit best_fit(std::span<const FreeBlockRef> blocks, uint64_t rounded, std::optional<uint64_t> max_split_size,
                 bool expandable) {
  // The free set is ordered by (size, address) for one stream, as torch's BlockComparatorSize.
  std::vector<size_t> order(blocks.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return blocks[a].size != blocks[b].size ? blocks[a].size < blocks[b].size : blocks[a].address < blocks[b].address;
  });
  auto it = std::find_if(order.begin(), order.end(), [&](size_t i) { return blocks[i].size >= rounded; });
  BestFit out;
  if (it == order.end()) return out;
  if (expandable) {
    // get_free_block moves on while the next block's size plus growable tail is smaller.
    auto reach = [&](size_t i) {
      return blocks[i].size + std::min(blocks[i].growable_bytes, UINT64_MAX - blocks[i].size);
    };
    for (auto next = it + 1; next != order.end() && reach(*next) < reach(*it); ++next) it = next;
  }
  if (!oversize_allows(blocks[*it].size, rounded, max_split_size))
    out.rejected = *it;
  else
    out.chosen = *it;
  return out;
}

}  // namespace memsnap::analysis::rules
