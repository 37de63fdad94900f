// The CUDA caching allocator's sizing rules (c10/cuda/CUDACachingAllocator.cpp; SNAPSHOT_FORMAT.md §9).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "memsnap/snapshot/model.hpp"

namespace memsnap::analysis::rules {

inline constexpr uint64_t kMinBlockSize = 512;
inline constexpr uint64_t kSmallSize = 1ull << 20;     // requests up to this use the small pool
inline constexpr uint64_t kSmallBuffer = 2ull << 20;   // small-pool segment (and expandable small page)
inline constexpr uint64_t kLargeBuffer = 20ull << 20;  // large-pool segment for requests < kMinLargeAlloc
inline constexpr uint64_t kMinLargeAlloc = 10ull << 20;
inline constexpr uint64_t kRoundLarge = 2ull << 20;

/// round_size: < 512 -> 512, else a multiple of 512, or the next of `divisions`
/// steps between powers of two when roundup_power2_divisions applies to the size.
/// Inline for the common case (no divisions): the replay rounds every alloc.
uint64_t round_size_divisions(uint64_t requested, const snapshot::AllocatorSettings& settings);
inline uint64_t round_size(uint64_t requested, const snapshot::AllocatorSettings& settings = {}) {
  if (!settings.roundup_power2_divisions.empty()) return round_size_divisions(requested, settings);
  if (requested < kMinBlockSize) return kMinBlockSize;
  return kMinBlockSize * ((requested + kMinBlockSize - 1) / kMinBlockSize);
}
/// Pool a rounded size is served from (default pools; private pools are chosen by capture).
snapshot::Pool pool_for(uint64_t rounded);
/// get_allocation_size: the segment cudaMalloc'd for a rounded request that found no free block.
uint64_t segment_size_for(uint64_t rounded);
/// should_split: whether a free block of `block_size` serving `rounded` is split (remainder
/// stays free): any remainder of 512 B or more in the small pool and in expandable segments;
/// in the large pool, one of more than 1 MiB, and never from a request of max_split_size or more.
inline bool should_split(uint64_t block_size, uint64_t rounded, snapshot::Pool pool, bool expandable,
                         std::optional<uint64_t> max_split_size) {
  if (block_size < rounded) return false;
  const uint64_t remaining = block_size - rounded;
  if (pool == snapshot::Pool::Small || expandable) return remaining >= kMinBlockSize;
  const bool below_max = !max_split_size || rounded < *max_split_size;
  return below_max && remaining > kSmallSize;
}

/// The page an expandable segment maps and unmaps at a time: 2 MiB for the small
/// pool, 20 MiB for the large pool (Unknown is treated as large).
uint64_t expandable_page_size(snapshot::Pool pool);

/// get_free_block's oversize rules when max_split_size is set: a request below
/// max_split_size may not take a block of max_split_size or more, and a request of
/// max_split_size or more may only take a block smaller than request + 20 MiB.
bool oversize_allows(uint64_t block_size, uint64_t rounded, std::optional<uint64_t> max_split_size);

/// A free block the allocator could hand out (one stream, one pool).
struct FreeBlockRef {
  uint64_t size = 0;
  uint64_t address = 0;
  /// Expandable segments only: unmapped address space right after the block that it
  /// could grow into (0 when the next block is mapped).
  uint64_t growable_bytes = 0;
};

struct BestFit {
  std::optional<size_t> chosen;    // index into the candidates
  std::optional<size_t> rejected;  // the block best fit found but the oversize rule refused
};

/// get_free_block: the smallest free block >= rounded (ties: lowest address); with
/// expandable segments, it then moves on to the next larger block while that one's
/// size plus growable tail is smaller (torch keeps blocks next to unmapped space
/// for growing); finally the oversize rules. `blocks` must all be on the request's
/// stream and pool, in any order.
BestFit best_fit(std::span<const FreeBlockRef> blocks, uint64_t rounded, std::optional<uint64_t> max_split_size,
                 bool expandable);

}  // namespace memsnap::analysis::rules
