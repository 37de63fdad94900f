// "Would a request of N bytes fit?": the caching allocator's decision for one
// request against one device's state, following its rules (allocator_rules):
// round the size, pick the pool at 1 MiB, best fit among the free blocks of the
// same stream and pool (default pool only: private pools serve only their
// capture), the max_split_size oversize rules, the split rule; and when nothing
// fits, the new segment it would ask CUDA for.
//
// What a snapshot cannot tell: whether the events of pending-free blocks have
// completed (torch processes them first, so they might serve the request; they
// are reported separately), and, with expandable segments, the unmapped address
// space before the lowest mapped range (memsnap assumes the space after each
// mapped range, up to the next one of the same stream and pool, is unmapped and
// that the last range can grow without bound).
#pragma once

#include <cstdint>
#include <optional>

#include "memsnap/snapshot/model.hpp"

namespace memsnap::analysis {

struct FitsQuery {
  uint64_t bytes = 0;
  uint64_t stream = 0;  // cudaStream_t as an integer; 0 is the default stream
};

struct FitsAnswer {
  uint64_t request_bytes = 0;
  uint64_t rounded_bytes = 0;  // round_size (512 B, or roundup_power2_divisions)
  snapshot::Pool pool = snapshot::Pool::Small;
  uint64_t stream = 0;
  bool expandable = false;  // decided under expandable segments
  std::optional<uint64_t> max_split_size;

  // The free blocks the request may use: same stream, same pool, default pool.
  uint64_t free_blocks = 0;
  uint64_t free_bytes = 0;
  uint64_t largest_free_block_bytes = 0;
  uint64_t pending_free_bytes = 0;        // same stream and pool, awaiting other streams
  uint64_t other_streams_free_bytes = 0;  // same pool on other streams: never used for this request
  uint64_t private_pools_free_bytes = 0;  // CUDA-graph / MemPool pools: never used outside their capture

  bool served_from_cache = false;
  // Served: the block best fit picks. Split: `remainder_bytes` stay free at
  // block_address + rounded_bytes. Not split: the whole block is handed out and
  // the remainder is slack inside it.
  std::optional<uint64_t> block_address;
  std::optional<uint64_t> block_bytes;
  bool split = false;
  uint64_t remainder_bytes = 0;
  /// Best fit found this block but max_split_size's oversize rule refused it.
  std::optional<uint64_t> oversize_rejected_bytes;

  // Not served: what the allocator asks CUDA for. Classic: the cudaMalloc size
  // (2 MiB, 20 MiB, or the request rounded up to 2 MiB). Expandable: the bytes of
  // new pages it maps (whole 2 MiB / 20 MiB pages), after growing the free block
  // at the end of a mapped range when there is one (grows_block_*).
  uint64_t new_segment_bytes = 0;
  std::optional<uint64_t> grows_block_address;
  std::optional<uint64_t> grows_block_bytes;
};

/// Pure; `settings` supplies max_split_size, roundup_power2_divisions and expandable_segments.
FitsAnswer would_fit(const snapshot::Device& device, const snapshot::AllocatorSettings& settings,
                     const FitsQuery& query);

}  // namespace memsnap::analysis
