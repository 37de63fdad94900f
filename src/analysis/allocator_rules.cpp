// The allocator's rounding, pool, segment-size and split rules.
#include "memsnap/analysis/allocator_rules.hpp"

#include <algorithm>
#include <bit>

namespace memsnap::analysis::rules {

uint64_t round_size(uint64_t size, const snapshot::AllocatorSettings& settings) {
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

snapshot::Pool pool_for(uint64_t rounded) { return rounded <= kSmallSize ? snapshot::Pool::Small : snapshot::Pool::Large; }

uint64_t segment_size_for(uint64_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((rounded + kRoundLarge - 1) / kRoundLarge);
}

bool should_split(uint64_t block_size, uint64_t rounded, snapshot::Pool pool, bool expandable,
                  std::optional<uint64_t> max_split_size) {
  if (block_size < rounded) return false;
  uint64_t remaining = block_size - rounded;
  if (pool == snapshot::Pool::Small || expandable) return remaining >= kMinBlockSize;
  bool below_max = !max_split_size || rounded < *max_split_size;
  return below_max && remaining > kSmallSize;
}

}  // namespace memsnap::analysis::rules
