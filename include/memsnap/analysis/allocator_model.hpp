// The CUDA caching allocator, modelled once for the replay and the simulator.
//
// PyTorch's DeviceCachingAllocator (c10/cuda/CUDACachingAllocator.cpp) keeps, per
// device, segments it got from cudaMalloc (or, with expandable segments, ranges of
// one virtual reservation per pool and stream that it maps page by page), cut into
// blocks that are allocated, awaiting their stream's events (pending), or free.
// Its rules, and where this model follows each of them:
//
// - round_size: a request is rounded up to 512 B, or with roundup_power2_divisions
//   to the next of N steps between powers of two (rules::round_size).
// - get_pool: rounded sizes up to 1 MiB come from the small pool, larger from the
//   large pool; pools are per stream, and CUDA-graph private pools
//   (segment_pool_id) are pools of their own (PoolKey).
// - get_free_block: the smallest free block of the pool and stream at least as big
//   as the request, lowest address on ties; with max_split_size set, a request
//   below it never takes a block of max_split_size or more, and a request at or
//   above it only a block smaller than request + 20 MiB (rules::oversize_allows);
//   with expandable segments a block next to unmapped space counts as the size it
//   could grow to (malloc_simulated).
// - should_split: the remainder of the chosen block becomes a free block of its own
//   when it is at least 512 B (small pool, expandable segments) or more than 1 MiB
//   (large pool, and never for blocks of max_split_size or more); otherwise the
//   whole block is handed out, and memory_allocated() counts all of it. This is the
//   rule that makes a block larger than its rounded request (alloc_at).
// - free_block: a freed block (after its streams' events completed: free_requested
//   then free_completed in the trace) merges with free neighbours of its segment
//   (try_merge_blocks; free_completed).
// - alloc_block: no free block fits: cudaMalloc a new segment of
//   get_allocation_size(rounded) (2 MiB small, 20 MiB for large requests under 10
//   MiB, else rounded up to 2 MiB) if it fits in the device; otherwise
//   release_available_cached_blocks (max_split_size set: in the request's own pool
//   and stream, the smallest cached block of at least max(request,
//   max_split_size), else the largest oversize ones first until that much is freed;
//   release_available) and, if that is not enough, release_cached_blocks (every
//   fully free segment is cudaFree'd: an empty_cache()) and alloc_block(isRetry),
//   which counts a retry whether or not the flush freed anything; then the OOM.
// - expandable segments: the reservation's unmapped tail is mapped in pages of 2 MiB
//   (small) or 20 MiB (large) to grow the free block before it; release_cached
//   unmaps the whole pages inside free blocks (map / unmap). find_expandable_block
//   returns a free block before unmapped space that already holds the request as
//   it is, mapping nothing (grow_expandable).
// - garbage_collection_threshold: garbage_collect_cached_blocks runs only when a
//   memory fraction is set (set_per_process_memory_fraction), which a snapshot
//   does not record: the model never collects, and simulate says so.
//
// Two modes share these structures. Following a trace (the replay), the trace says
// where each block and segment went and the model says how big each block was:
// alloc_at(addr) finds the free block at addr and applies should_split. Simulating,
// malloc_simulated() chooses the block itself, so another max_split_size, expandable
// segments or a smaller device can be tried on a recorded request sequence.
//
// Cost: blocks live in a seeded hash map by address with their neighbours' addresses
// (PyTorch's prev/next list), so following an event is O(1); the simulator's free
// sets are ordered (O(log n)). State is O(live blocks + segments), never O(events).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "memsnap/analysis/allocator_rules.hpp"
#include "memsnap/snapshot/model.hpp"
#include "memsnap/util/flat_map.hpp"

namespace memsnap::analysis {

/// The settings of PYTORCH_CUDA_ALLOC_CONF the model obeys, and the device size.
struct ModelSettings {
  bool expandable_segments = false;
  std::optional<uint64_t> max_split_size;
  std::vector<std::pair<uint64_t, uint64_t>> roundup_power2_divisions;
  double garbage_collection_threshold = 0;
  /// Bytes the allocator may reserve (device memory it can get); UINT64_MAX: no limit.
  uint64_t capacity = UINT64_MAX;

  static ModelSettings from(const snapshot::AllocatorSettings& s);
  snapshot::AllocatorSettings as_allocator_settings() const;
};

/// Parses one `--set KEY:VALUE` (the PYTORCH_CUDA_ALLOC_CONF spelling) into `s`;
/// nullopt on success, else what was wrong.
std::optional<std::string> apply_setting(ModelSettings& s, const std::string& key_value);

/// One pool: stream, small or large, and the private pool id (0, 0 for the default).
struct PoolKey {
  uint64_t stream = 0;
  bool small = false;
  int64_t pool_id0 = 0, pool_id1 = 0;
  auto operator<=>(const PoolKey&) const = default;
};

enum class ModelState : uint8_t { Free, Allocated, Pending };

struct ModelBlock {
  static constexpr uint64_t kNone = ~uint64_t{0};
  static constexpr uint32_t kNoTag = ~uint32_t{0};
  uint64_t size = 0;
  uint64_t prev = kNone, next = kNone;  // neighbours' addresses in the same mapped range
  uint64_t segment = 0;                 // start of the segment (mapped range) holding it
  ModelState state = ModelState::Free;
  // Copied from the segment, which every block event would otherwise look up (a tree):
  // should_split needs the pool and whether the segment is expandable.
  bool small = false, expandable = false;
  // The caller's name for a live block (the replay's range id), in what was padding: the
  // replay finds a block's range in this table and needs no table of its own. A free block
  // has none: a block gets it when allocated and loses it when free (set_state).
  uint32_t tag = kNoTag;
};

struct ModelSegment {
  uint64_t size = 0;  // mapped bytes of this range
  PoolKey pool;
  bool expandable = false;
  uint64_t active = 0;  // bytes of allocated or pending blocks in it (simulating only: the
                        // replay, following a trace, keeps its own totals)
};

struct ModelTotals {
  uint64_t allocated = 0, active = 0, reserved = 0;
  uint64_t stranded = 0;  // free bytes inside segments that also hold live blocks (simulating only)
};

/// One block of a layout, for comparing the model with a dump.
struct LayoutBlock {
  uint64_t address = 0, size = 0;
  ModelState state = ModelState::Free;
  bool operator==(const LayoutBlock&) const = default;
};

class AllocatorModel {
 public:
  explicit AllocatorModel(ModelSettings settings, bool simulate = false);

  const ModelSettings& settings() const { return settings_; }
  /// Simulating (malloc_simulated) rather than following a trace.
  bool simulating() const { return simulate_; }
  /// The device memory available from now on (it may change: other processes, a plan).
  /// `lower_bound`: the device held at least this much, maybe more: a request that needs more
  /// (after the cache is flushed, as for an OOM) is served, and take_lower_bound_exceeded says so.
  void set_capacity(uint64_t capacity, bool lower_bound = false) {
    settings_.capacity = capacity;
    capacity_lower_bound_ = lower_bound;
  }
  /// A request since the last call needed more than a lower-bound capacity (then lifted).
  bool take_lower_bound_exceeded() { return std::exchange(lower_bound_exceeded_, false); }
  const ModelTotals& totals() const { return t_; }
  /// The most reserved so far, and the stranded bytes at the first moment it was reached.
  uint64_t peak_reserved() const { return peak_reserved_; }
  uint64_t stranded_at_peak() const { return stranded_at_peak_; }
  size_t live_blocks() const { return blocks_.size(); }

  // ---- following a trace ----
  /// A segment (or an expandable mapped range) that exists, wholly free.
  void add_segment(uint64_t addr, uint64_t size, PoolKey pool, bool expandable);
  /// segment_free: false when it is not a segment, or not wholly free.
  bool remove_segment(uint64_t addr, uint64_t size);
  /// segment_map: joins the adjacent mapped ranges; the new bytes join the free block before or after.
  void map(uint64_t addr, uint64_t size, PoolKey pool);
  /// segment_unmap: false when [addr, addr + size) is not inside one free block.
  bool unmap(uint64_t addr, uint64_t size);
  /// Places a live block inside the free block that covers it (the rewound start state).
  bool place(uint64_t addr, uint64_t size, ModelState state);
  struct Followed {
    uint64_t size = 0;    // the block's size as the allocator handed it out
    bool exact = true;    // false: the model's layout disagreed with the trace here
    bool tagged = false;  // the model holds the block at addr, allocated, with the tag given
  };
  /// alloc at `addr` of `rounded` bytes: the free block there, split or whole by should_split;
  /// the block allocated carries `tag`.
  Followed alloc_at(uint64_t addr, uint64_t rounded, uint32_t tag = ModelBlock::kNoTag);
  /// free_requested: the block is no longer allocated, still active. False when no allocated block is there.
  bool free_requested(uint64_t addr) { return free_requested(addr, blocks_.find(addr)); }
  bool free_requested(uint64_t addr, ModelBlock* b);
  /// free_completed (or free): the block is free and merges with free neighbours.
  bool free_completed(uint64_t addr) { return free_completed(addr, blocks_.find(addr)); }
  /// The same for the block at addr the caller found (block_at) since the model last changed.
  bool free_completed(uint64_t addr, ModelBlock* b);
  /// The block starting at addr, or null.
  const ModelBlock* block(uint64_t addr) const { return blocks_.find(addr); }
  /// The same, for giving a block a tag or for free_requested/free_completed.
  ModelBlock* block_at(uint64_t addr) { return blocks_.find(addr); }
  /// Tags of live blocks a segment event took away (a trace that frees a segment with live
  /// blocks in it), with their addresses: the caller keeps them elsewhere. Emptied by the call.
  std::vector<std::pair<uint64_t, uint32_t>> take_dropped_tags() { return std::exchange(dropped_tags_, {}); }
  /// Free space right after a live block up to the next block (0 when none or not free).
  uint64_t free_after(uint64_t addr) const;

  /// Every segment with its blocks, by address.
  std::vector<std::pair<uint64_t, std::vector<LayoutBlock>>> layout() const;

  // ---- simulating ----
  struct Malloc {
    std::optional<uint64_t> addr;  // nullopt: out of memory
    uint64_t rounded = 0;
    uint64_t alloc_size = 0;  // get_allocation_size(rounded): what the OOM message prints
    bool unplaced = false;    // not served although there was room: the model could not place it
  };
  Malloc malloc_simulated(uint64_t requested, uint64_t stream);
  /// Where the recorded run put its segments, (size, address) in order: a new segment of the
  /// next hint's size goes there (when free), so ties in best fit (lowest address) break as
  /// they did. Without hints, segments go to addresses of the model's own.
  void set_segment_hints(std::vector<std::pair<uint64_t, uint64_t>> hints) { hints_ = std::move(hints); }
  /// torch.cuda.empty_cache(): frees every wholly free segment (unmaps free pages). `retry`:
  /// a recorded flush-and-retry the model mirrors (no device size known), counted as one.
  void empty_cache(bool retry = false);

  /// Counters of what the simulated allocator did.
  struct Counters {
    uint64_t segment_allocs = 0, segment_frees = 0;  // cudaMalloc / cudaFree (map / unmap)
    uint64_t retries = 0;                            // cache flushed and cudaMalloc retried
  };
  const Counters& counters() const { return c_; }
  /// Sizes of segments allocated (or pages mapped), in order, for fidelity checks.
  const std::vector<uint64_t>& segment_sizes() const { return seg_sizes_; }

 private:
  using Blocks = FlatMap64<ModelBlock>;
  ModelBlock* find_covering(uint64_t addr);
  uint64_t covering_start(uint64_t addr) const;
  // Moves a block between states, keeping the totals and, simulating, the free index and
  // the segments' live bytes (following a trace, nothing reads those: the replay keeps its
  // own). Inline, as index_free's test: following a trace calls them at every block event.
  void set_state(uint64_t addr, ModelBlock& b, ModelState s) {
    if (b.state == s) return;
    const bool was_live = b.state != ModelState::Free, live = s != ModelState::Free;
    if (!was_live) index_free(addr, b, false);
    if (b.state == ModelState::Allocated) t_.allocated -= b.size;
    if (s == ModelState::Allocated) t_.allocated += b.size;
    if (was_live != live) {
      const uint64_t d = live ? b.size : uint64_t{0} - b.size;  // two's complement delta
      t_.active += d;
      if (simulate_) adjust_segment_active(b.segment, static_cast<int64_t>(d));
    }
    b.state = s;
    if (!live) {
      b.tag = ModelBlock::kNoTag;
      index_free(addr, b, true);
    }
  }
  void adjust_segment_active(uint64_t seg, int64_t delta);
  /// Cuts the block b at addr after first_size bytes; the first part then takes first_state.
  void split(uint64_t addr, ModelBlock* b, uint64_t first_size, std::optional<ModelState> first_state = std::nullopt);
  uint64_t merge_free(uint64_t addr, ModelBlock* block);
  void index_free(uint64_t addr, const ModelBlock& b, bool add) {
    if (simulate_) index_free_simulated(addr, b, add);
  }
  void index_free_simulated(uint64_t addr, const ModelBlock& b, bool add);
  uint64_t segment_stranded(const ModelSegment& s) const { return s.active ? s.size - s.active : 0; }

  std::optional<uint64_t> find_free(const PoolKey& pool, uint64_t rounded);
  std::optional<uint64_t> new_segment(const PoolKey& pool, uint64_t rounded);
  std::optional<uint64_t> grow_expandable(const PoolKey& pool, uint64_t rounded);
  bool release_cached(std::optional<uint64_t> at_least_block);
  bool release_available(const PoolKey& pool, uint64_t rounded);
  uint64_t unmap_free_pages();

  ModelSettings settings_;
  bool capacity_lower_bound_ = false, lower_bound_exceeded_ = false;
  snapshot::AllocatorSettings rounding_;  // settings_ as rules::round_size takes them
  bool simulate_;
  Blocks blocks_;
  std::map<uint64_t, ModelSegment> segments_;               // by start address
  std::set<std::tuple<PoolKey, uint64_t, uint64_t>> free_;  // simulate: (pool, size, address)
  ModelTotals t_;
  uint64_t peak_reserved_ = 0, stranded_at_peak_ = 0;
  void note_peak() {
    if (t_.reserved > peak_reserved_) peak_reserved_ = t_.reserved, stranded_at_peak_ = t_.stranded;
  }
  Counters c_;
  std::vector<uint64_t> seg_sizes_;
  // Walking a segment's blocks (covering_start) is for addresses the trace and the model
  // disagree on; a hostile trace could ask for it at every event: a budget bounds the work,
  // and once spent such addresses are unfollowed (reported, sized from the request).
  mutable uint64_t walk_budget_ = uint64_t{1} << 25;
  uint64_t place_hint_ = ModelBlock::kNone;    // the free block after the last placed one
  uint64_t next_address_ = uint64_t{1} << 52;  // above any address a trace records
  std::vector<std::pair<uint64_t, uint64_t>> hints_;
  std::vector<std::pair<uint64_t, uint32_t>> dropped_tags_;
  size_t next_hint_ = 0;
  std::map<PoolKey, std::pair<uint64_t, uint64_t>> reservations_;  // expandable: pool -> [start, end)
};

}  // namespace memsnap::analysis
