// The CUDA caching allocator's sizing rules (c10/cuda/CUDACachingAllocator.cpp; SNAPSHOT_FORMAT.md §9).
#pragma once

#include <cstdint>
#include <optional>

#include "memsnap/snapshot/model.hpp"

namespace memsnap::analysis::rules {

inline constexpr uint64_t kMinBlockSize = 512;
inline constexpr uint64_t kSmallSize = 1ull << 20;      // requests up to this use the small pool
inline constexpr uint64_t kSmallBuffer = 2ull << 20;    // small-pool segment (and expandable small page)
inline constexpr uint64_t kLargeBuffer = 20ull << 20;   // large-pool segment for requests < kMinLargeAlloc
inline constexpr uint64_t kMinLargeAlloc = 10ull << 20;
inline constexpr uint64_t kRoundLarge = 2ull << 20;

/// round_size: < 512 -> 512, else a multiple of 512, or the next of `divisions`
/// steps between powers of two when roundup_power2_divisions applies to the size.
uint64_t round_size(uint64_t requested, const snapshot::AllocatorSettings& settings = {});
/// Pool a rounded size is served from (default pools; private pools are chosen by capture).
snapshot::Pool pool_for(uint64_t rounded);
/// get_allocation_size: the segment cudaMalloc'd for a rounded request that found no free block.
uint64_t segment_size_for(uint64_t rounded);
/// should_split: whether a free block of `block_size` serving `rounded` is split (remainder stays free).
bool should_split(uint64_t block_size, uint64_t rounded, snapshot::Pool pool, bool expandable,
                  std::optional<uint64_t> max_split_size);

}  // namespace memsnap::analysis::rules
