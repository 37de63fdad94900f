// Why reserved >> allocated: the free memory of one device split by cause, per pool
// and stream, and the live blocks that keep cached memory from going back to CUDA.
//
// The unit of release. The allocator gives memory back to CUDA in fixed units:
// a classic segment only as a whole (cudaFree, when it is one free block), an
// expandable segment page by page (unmap of every whole free page: 2 MiB in the
// small pool, 20 MiB in the large pool, counted from the start of the mapped
// range). A unit that holds no live byte is *releasable* (torch.cuda.empty_cache()
// returns it); the free bytes of a unit that holds at least one live block
// (allocated or pending free) are *stranded*: nothing returns them until every
// such block is freed. releasable + stranded = external free, exactly.
//
// Pinning attribution. Every live block in a unit is equally necessary to release
// it (freeing any one of them alone returns nothing), so a unit's stranded bytes
// are shared equally among the live blocks that overlap it; the remainder of the
// integer division goes one byte each to the lowest-addressed of them. The
// per-block shares, and so the per-site sums, add up to stranded_bytes exactly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memsnap/analysis/findings.hpp"
#include "memsnap/analysis/sites.hpp"
#include "memsnap/snapshot/model.hpp"

namespace memsnap::analysis {

/// Classic: cudaMalloc'd segments, returned whole. Expandable: mapped ranges of
/// expandable segments, returned page by page. Mixed: both kinds on one device.
enum class Regime : uint8_t { Classic, Expandable, Mixed };
const char* to_string(Regime r);

/// fragmentation = 1 - largest_free / total_free; 0 when there is no free memory.
/// 0 means all free bytes are one block; near 1, the free bytes are in many small pieces.
double fragmentation_ratio(uint64_t largest_free, uint64_t total_free);

/// Free blocks whose size is in [min_bytes, max_bytes), max_bytes = 2 * min_bytes.
struct SizeBucket {
  uint64_t min_bytes = 0;
  uint64_t max_bytes = 0;
  uint64_t blocks = 0;
  uint64_t bytes = 0;
};

/// One segment's accounting: requested + internal + pending + external = total_size
/// when its blocks tile it; releasable + stranded = external.
struct SegmentFragmentation {
  uint64_t requested_bytes = 0;
  uint64_t internal_free_bytes = 0;
  uint64_t pending_free_bytes = 0;
  uint64_t external_free_bytes = 0;
  uint64_t releasable_bytes = 0;
  uint64_t stranded_bytes = 0;
  uint64_t largest_free_block_bytes = 0;
  uint32_t live_blocks = 0;  // allocated or pending free
  uint32_t free_blocks = 0;
  double fragmentation = 0;
};

/// One (pool, private pool id, stream): free blocks are reusable only inside it.
struct PoolFragmentation {
  snapshot::Pool pool = snapshot::Pool::Unknown;
  int64_t pool_id[2] = {0, 0};  // (0, 0): the default pool; else a CUDA-graph / MemPool private pool
  uint64_t stream = 0;
  uint64_t segments = 0;
  uint64_t reserved_bytes = 0;
  uint64_t free_bytes = 0;  // external (inactive) bytes
  uint64_t free_blocks = 0;
  uint64_t largest_free_block_bytes = 0;
  uint64_t releasable_bytes = 0;
  uint64_t stranded_bytes = 0;
  double fragmentation = 0;
  std::vector<SizeBucket> histogram;  // non-empty power-of-two buckets, ascending

  bool is_private() const { return pool_id[0] != 0 || pool_id[1] != 0; }
};

/// Live blocks from one allocation site that strand free memory.
struct PinningSite {
  std::string site;                // Sites::site
  std::vector<std::string> stack;  // the filtered stack of the example block
  /// The user-code frames (FrameKind::User) outside the site in that stack, innermost
  /// first, at most kCallers: where the site was called from.
  std::vector<std::string> callers;
  static constexpr size_t kCallers = 3;
  uint64_t live_bytes = 0;         // Σ size of this site's pinning blocks
  uint64_t stranded_bytes = 0;     // Σ of their shares (see the attribution rule above)
  uint64_t blocks = 0;
  uint64_t segments = 0;  // segments holding at least one of them
  // The block of this site with the largest share (ties: lowest address).
  uint64_t example_address = 0;
  uint64_t example_size = 0;
  uint64_t example_stranded_bytes = 0;
};

struct Fragmentation {
  int device = 0;
  Regime regime = Regime::Classic;
  uint64_t segment_count = 0;
  uint64_t reserved_bytes = 0;
  uint64_t requested_bytes = 0;
  uint64_t internal_free_bytes = 0;  // size - requested of allocated blocks
  uint64_t pending_free_bytes = 0;   // active_pending_free blocks
  uint64_t external_free_bytes = 0;  // inactive blocks
  uint64_t releasable_bytes = 0;     // external bytes in units with no live block
  uint64_t stranded_bytes = 0;       // external bytes in units with a live block
  uint64_t largest_free_block_bytes = 0;
  uint64_t releasable_segments = 0;  // segments with no live block at all
  uint64_t stranding_segments = 0;   // segments with stranded bytes
  uint64_t pinning_blocks = 0;       // live blocks sharing stranded bytes
  std::vector<PoolFragmentation> pools;       // by pool, private pool id, stream
  std::vector<PinningSite> pinning_sites;     // most stranded bytes first
  std::vector<SegmentFragmentation> segments;  // parallel to Device::segments
};

/// Pure: reads the device (any Device, dumped or reconstructed by Replay), the
/// snapshot's frame tables, and names sites through `sites` (built on `snap`).
Fragmentation analyze_fragmentation(const snapshot::Snapshot& snap, const snapshot::Device& device, Sites& sites);

/// Indices into Device::segments, the worst first: most stranded bytes, then the
/// highest fragmentation, then the most free bytes, then the lowest address.
std::vector<uint32_t> segments_worst_first(const snapshot::Device& device, const Fragmentation& frag);

/// The one place where the fragmentation findings' thresholds live. A finding is
/// raised only when both its share of reserved memory and its absolute size pass,
/// so that small or healthy snapshots stay quiet.
struct FragmentationThresholds {
  double stranded_share = 0.25;             // stranded / reserved: warning
  double stranded_share_critical = 0.50;    // stranded / reserved: critical
  uint64_t stranded_min_bytes = 32ull << 20;
  double releasable_share = 0.25;           // releasable / reserved: info
  uint64_t releasable_min_bytes = 256ull << 20;
  double pool_fragmentation = 0.50;         // 1 - largest/free of one pool: warning ...
  double pool_stranded_share = 0.10;        // ... when its stranded bytes are this share of reserved
  uint64_t pool_stranded_min_bytes = 32ull << 20;  // (releasable bytes do not count: the OOM retry frees them)
  double pending_share = 0.10;              // pending free / reserved: info
  uint64_t pending_min_bytes = 64ull << 20;
};

/// Plain-words conclusions with the fixes PyTorch documents. `settings` decides
/// which fix applies (expandable_segments already on, max_split_size already set).
std::vector<Finding> fragmentation_findings(const Fragmentation& frag, const snapshot::AllocatorSettings& settings,
                                            const FragmentationThresholds& thresholds = {});

}  // namespace memsnap::analysis
