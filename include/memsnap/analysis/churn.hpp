// Churn: memory the allocator gives back to CUDA only to ask for it again.
//
// A *free burst* is a run of consecutive segment_free (or segment_unmap) events in a
// device's trace. PyTorch frees cached segments in three situations only: the
// program called torch.cuda.empty_cache() (the events' stacks run through
// torch/cuda/memory.py:empty_cache), cudaMalloc failed and the allocator emptied its
// cache to retry (the burst is followed at once by the segment_alloc and the alloc
// of the request that failed), or garbage collection / max_split_size released
// blocks. classify_free_bursts() finds the runs and classifies them by their stacks
// too (simulate.hpp's free_bursts() reads the same stacks); find_churn() sums them
// into the two findings (cache_flush_retry, empty_cache_in_loop).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memsnap/analysis/sites.hpp"
#include "memsnap/snapshot/model.hpp"

namespace memsnap::analysis {

enum class BurstKind : uint8_t {
  EmptyCache,  // the stacks run through torch.cuda.empty_cache()
  Retry,       // followed by segment_alloc/segment_map and the alloc it served: cudaMalloc retried
  Other,       // neither (garbage collection, max_split_size, a trace cut)
};
const char* to_string(BurstKind k);  // "empty_cache", "retry", "other"

struct ChurnBurst {
  BurstKind kind = BurstKind::Other;
  uint32_t first_event = 0, last_event = 0;  // the run of segment frees, inclusive
  uint32_t segments = 0;
  uint64_t bytes = 0;
  snapshot::StackId stack;  // of the first segment free
  // Retry: the alloc that the retried cudaMalloc served, and the segment it got.
  uint32_t request_event = 0;
  uint64_t request_bytes = 0;
  uint64_t new_segment_bytes = 0;
};

/// Every free burst of the trace, oldest first. `is_empty_cache(stack)` says whether
/// a stack runs through torch.cuda.empty_cache() (empty_cache_stack() below).
std::vector<ChurnBurst> classify_free_bursts(const snapshot::Snapshot& snap, const snapshot::Trace& trace);
/// Whether the stack has torch.cuda.empty_cache() in it (a frame named empty_cache in
/// torch/cuda/memory.py, or any frame named empty_cache when the file is not given).
bool empty_cache_stack(const snapshot::Snapshot& snap, snapshot::StackId stack);

/// One request whose cudaMalloc failed and succeeded after the cache was emptied.
struct RetrySite {
  std::string site;  // of the request
  uint64_t retries = 0;
  uint64_t freed_bytes = 0;
  uint64_t largest_request_bytes = 0;
};

/// One call site of torch.cuda.empty_cache() (the user frame that calls it).
struct EmptyCacheSite {
  std::string site;
  uint64_t calls = 0;  // calls that returned memory (a call with nothing to free records nothing)
  uint64_t returned_bytes = 0;
  uint64_t segments = 0;
};

struct Churn {
  // cache flush-and-retry
  uint64_t retries = 0;
  uint64_t retry_freed_bytes = 0;
  uint64_t retry_segments = 0;
  uint64_t retry_largest_burst_bytes = 0;
  std::vector<RetrySite> retry_sites;  // most retries first
  // explicit empty_cache()
  uint64_t empty_cache_calls = 0;
  uint64_t empty_cache_returned_bytes = 0;
  uint64_t empty_cache_segments = 0;
  /// cudaMalloc'd again after the first call: segment_alloc events and their bytes.
  uint64_t reallocations = 0;
  uint64_t reallocated_bytes = 0;
  std::vector<EmptyCacheSite> empty_cache_sites;  // most calls first
};

Churn find_churn(const Context& ctx, const snapshot::Device& device);

}  // namespace memsnap::analysis
