// The accounting of one device state, segment by segment: the one place that
// decides what every reserved byte is. Totals, fragmentation, the OOM analysis and
// the segment map all read it.
//
// Identity, exact by construction, per segment and per device:
//   reserved = requested + internal_free + pending_free + external_free
//   allocated = requested + internal_free        active = allocated + pending_free
//   external_free = releasable + stranded + private_held
// A block's requested size is clamped to its size (a file may state more; such
// blocks are listed in `clamped` and reported as warnings).
//
// The unit of release. The allocator gives memory back to CUDA in fixed units: a
// classic segment only as a whole (cudaFree, when it is one free block), an
// expandable segment page by page (2 MiB in the small pool, 20 MiB in the large
// pool, counted from the start of the mapped range). torch.cuda.empty_cache()
// first waits for the events of pending frees (they become free), then releases
// every unit that holds no allocated block. So, in the default pool:
//   releasable  free bytes in a unit that holds no allocated block (pending
//               blocks do not keep a unit: empty_cache returns their bytes too,
//               see empty_cache_bytes);
//   stranded    free bytes in a unit that holds at least one allocated block:
//               nothing returns them until every such block is freed.
// Private pools (segment_pool_id other than (0, 0): CUDA graphs, MemPool) follow
// their own rule: their cached blocks go back only after the graph or pool that
// owns them is destroyed, which the snapshot cannot show, so their free bytes are
// `private_held`, neither releasable nor stranded by a tensor.
//
// Pinning attribution. Every allocated block in a stranding unit is equally
// necessary to release it (freeing any one of them alone returns nothing), so a
// unit's stranded bytes are shared equally among the allocated blocks that overlap
// it; the remainder of the integer division goes one byte each to the
// lowest-addressed of them. The per-block shares, and so the per-site sums, add up
// to `stranded` exactly. Pending blocks pin nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memsnap/analysis/sites.hpp"
#include "memsnap/snapshot/model.hpp"

namespace memsnap::analysis {

/// Classic: cudaMalloc'd segments, returned whole. Expandable: mapped ranges of
/// expandable segments, returned page by page. Mixed: both kinds on one device.
enum class Regime : uint8_t { Classic, Expandable, Mixed };
const char* to_string(Regime r);

/// 1 - largest / total; 0 when total is 0. 0 means all free bytes are one block;
/// near 1, the free bytes are in many small pieces.
double fragmentation_ratio(uint64_t largest, uint64_t total);

/// Free blocks whose size is in [min_bytes, max_bytes), max_bytes = 2 * min_bytes.
struct SizeBucket {
  uint64_t min_bytes = 0;
  uint64_t max_bytes = 0;
  uint64_t blocks = 0;
  uint64_t bytes = 0;
};

/// One segment (parallel to Device::segments).
struct SegmentAccount {
  uint64_t requested_bytes = 0;
  uint64_t internal_free_bytes = 0;
  uint64_t pending_free_bytes = 0;
  uint64_t external_free_bytes = 0;
  uint64_t releasable_bytes = 0;
  uint64_t stranded_bytes = 0;
  uint64_t private_held_bytes = 0;
  uint64_t empty_cache_pending_bytes = 0;  // pending bytes in units with no allocated block
  uint64_t largest_free_block_bytes = 0;
  uint32_t allocated_blocks = 0;
  uint32_t pending_blocks = 0;
  uint32_t free_blocks = 0;
  double fragmentation = 0;  // over this segment's free blocks
};

/// One (pool, private pool id, stream): free blocks are reusable only inside it.
struct PoolAccount {
  snapshot::Pool pool = snapshot::Pool::Unknown;
  int64_t pool_id[2] = {0, 0};  // (0, 0): the default pool; else a CUDA-graph / MemPool private pool
  uint64_t stream = 0;
  uint64_t segments = 0;
  uint64_t blocks = 0;
  uint64_t reserved_bytes = 0;
  uint64_t allocated_bytes = 0;
  uint64_t free_bytes = 0;  // external (inactive) bytes
  uint64_t free_blocks = 0;
  uint64_t largest_free_block_bytes = 0;
  uint64_t releasable_bytes = 0;
  uint64_t stranded_bytes = 0;
  uint64_t private_held_bytes = 0;
  uint64_t largest_stranded_block_bytes = 0;  // the stranded bytes of the one free block with most of them
  /// 1 - largest stranded piece / stranded bytes: how split up the memory is that
  /// stays cached after the allocator's own release-and-retry (whole free units go
  /// back to CUDA before an OOM is reported, so they do not count).
  double fragmentation = 0;
  std::vector<SizeBucket> histogram;  // all free blocks, non-empty power-of-two buckets, ascending

  bool is_private() const { return pool_id[0] != 0 || pool_id[1] != 0; }
};

/// Allocated blocks from one allocation site that strand free memory.
struct PinningSite {
  std::string site;
  std::vector<std::string> stack;    // the filtered stack of the example block
  std::vector<std::string> callers;  // user frames outside the site, innermost first
  static constexpr size_t kCallers = 3;
  uint64_t live_bytes = 0;      // Σ size of this site's pinning blocks
  uint64_t stranded_bytes = 0;  // Σ of their shares
  uint64_t blocks = 0;
  uint64_t segments = 0;  // segments holding at least one of them
  // The block of this site with the largest share (ties: lowest address).
  uint64_t example_address = 0;
  uint64_t example_size = 0;
  uint64_t example_stranded_bytes = 0;
};

/// A block whose stated requested size exceeds its size (clamped to the size).
struct ClampedBlock {
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t stated_requested = 0;
};

struct Accounting {
  int device = 0;
  Regime regime = Regime::Classic;
  uint64_t segment_count = 0;
  uint64_t block_count = 0;
  uint64_t reserved_bytes = 0;       // Σ segment total_size
  uint64_t allocated_bytes = 0;      // Σ size of active_allocated blocks
  uint64_t active_bytes = 0;         // allocated + pending free
  uint64_t requested_bytes = 0;      // Σ requested (clamped) of allocated blocks
  uint64_t internal_free_bytes = 0;  // size - requested of allocated blocks
  uint64_t pending_free_bytes = 0;   // active_pending_free blocks
  uint64_t external_free_bytes = 0;  // inactive blocks
  uint64_t releasable_bytes = 0;
  uint64_t stranded_bytes = 0;
  uint64_t private_held_bytes = 0;
  uint64_t empty_cache_pending_bytes = 0;  // pending bytes empty_cache would also return
  uint64_t largest_free_block_bytes = 0;
  uint64_t unaccounted_bytes = 0;            // total_size not covered by blocks (0 in a consistent file)
  uint64_t releasable_segments = 0;          // segments with no allocated block (default pool)
  uint64_t releasable_whole_bytes = 0;       // ... their releasable bytes
  uint64_t releasable_partial_segments = 0;  // segments still holding blocks with releasable pages
  uint64_t releasable_partial_bytes = 0;     // ... those pages
  uint64_t stranding_segments = 0;           // segments with stranded bytes
  uint64_t pinning_blocks = 0;               // allocated blocks sharing stranded bytes
  bool stacks_recorded = false;              // the file has stacks (of any device, block, segment or event)
  std::vector<SegmentAccount> segments;      // parallel to Device::segments
  std::vector<PoolAccount> pools;            // by pool, private pool id, stream
  std::vector<PinningSite> pinning_sites;    // most stranded bytes first
  std::vector<uint64_t> block_stranded;      // per Device::blocks: its share of stranded bytes
  std::vector<uint64_t> free_stranded;       // per Device::blocks: a free block's bytes that are stranded
  std::vector<ClampedBlock> clamped;

  /// What torch.cuda.empty_cache() would give back to CUDA now.
  uint64_t empty_cache_bytes() const { return releasable_bytes + empty_cache_pending_bytes; }
};

/// Accounts one device state (the dump, or one rebuilt by replay).
Accounting account(const Context& ctx, const snapshot::Device& device);

/// The pinning sites of the segments `keep` accepts (for the OOM analysis: the
/// request's pool and stream), from an accounting of the same device.
template <class Keep>
std::vector<PinningSite> pinning_sites(const Context& ctx, const snapshot::Device& device, const Accounting& a,
                                       Keep keep);

/// Indices into Device::segments, the worst first: most stranded bytes, then the
/// highest fragmentation, then the most free bytes, then the lowest address.
std::vector<uint32_t> segments_worst_first(const snapshot::Device& device, const Accounting& a);

namespace detail {
std::vector<PinningSite> collect_pinning_sites(const Context& ctx, const snapshot::Device& device, const Accounting& a,
                                               const std::vector<uint8_t>& segment_kept);
}

template <class Keep>
std::vector<PinningSite> pinning_sites(const Context& ctx, const snapshot::Device& device, const Accounting& a,
                                       Keep keep) {
  std::vector<uint8_t> kept(device.segments.size());
  for (size_t i = 0; i < kept.size(); ++i) kept[i] = keep(device.segments[i]) ? 1 : 0;
  return detail::collect_pinning_sites(ctx, device, a, kept);
}

}  // namespace memsnap::analysis
