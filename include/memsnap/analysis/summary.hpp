// Per-device totals with torch's own definitions, and the free-memory accounting.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "memsnap/snapshot/model.hpp"

namespace memsnap::analysis {

/// Segments and blocks of one (pool, stream) pair.
struct PoolStreamCount {
  snapshot::Pool pool = snapshot::Pool::Unknown;
  uint64_t stream = 0;
  uint64_t segments = 0;
  uint64_t blocks = 0;
  uint64_t reserved_bytes = 0;
  uint64_t allocated_bytes = 0;
  uint64_t free_bytes = 0;  // inactive
};

struct TraceSpan {
  uint64_t entries = 0;
  std::optional<int64_t> first_time_us;  // time of the first entry that has one
  std::optional<int64_t> last_time_us;
};

/// Accounting identity, exact by construction:
///   reserved = requested + internal_free + pending_free + external_free
/// where allocated = requested + internal_free and active = allocated + pending_free.
struct DeviceTotals {
  int device = 0;
  uint64_t reserved_bytes = 0;    // Σ segment total_size
  uint64_t allocated_bytes = 0;   // Σ size of active_allocated blocks
  uint64_t active_bytes = 0;      // Σ size of blocks that are not inactive
  uint64_t requested_bytes = 0;   // Σ requested size of active_allocated blocks
  uint64_t inactive_bytes = 0;    // Σ size of inactive blocks (= external free)
  uint64_t pending_free_bytes = 0;   // Σ size of active_pending_free blocks
  uint64_t internal_free_bytes = 0;  // allocated - requested: rounding slack inside allocated blocks
  uint64_t segments = 0;
  uint64_t blocks = 0;
  uint64_t largest_free_block_bytes = 0;  // largest inactive block
  uint64_t unaccounted_bytes = 0;  // total_size not covered by blocks (0 in a consistent file)
  std::vector<PoolStreamCount> by_pool_stream;  // sorted by pool, then stream
  TraceSpan trace;
};

std::vector<DeviceTotals> summarize(const snapshot::Snapshot& snap);
DeviceTotals summarize(const snapshot::Device& device);

}  // namespace memsnap::analysis
