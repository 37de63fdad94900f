// Why an allocation failed: the allocator's state at the out-of-memory event, its
// causes ranked, and what fixes them.
//
// The snapshot is often dumped after the exception unwound and freed the failed
// step's tensors, so the dumped segments can look healthy. The replay rebuilds the
// state at the oom event itself. Causes, most direct first:
//   fragmentation     enough bytes were cached free, but no block on the request's
//                     stream and pool was large enough (the allocator had already
//                     released every unsplit cached segment before failing);
//   segment_rounding  the rounded request would have fit in the device's free
//                     memory, but what the allocator must map is larger (a whole
//                     new segment; with expandable segments, whole pages) (ranked
//                     below capacity when live tensors hold 80% or more of reserved
//                     plus device-free memory: then the device is full);
//   leak              live memory grew across iterations up to the OOM;
//   external          (with --capacity) memory outside this allocator: capacity
//                     minus device free minus reserved;
//   capacity          live tensors fill the device.
// The first kExplainedOoms OOM events of a device are explained in full (each costs
// one state rebuild); the others are listed with the figures the sweep recorded.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memsnap/analysis/accounting.hpp"
#include "memsnap/analysis/leaks.hpp"
#include "memsnap/analysis/oom_message.hpp"
#include "memsnap/analysis/peak.hpp"
#include "memsnap/analysis/replay.hpp"

namespace memsnap::analysis {

enum class OomCause : uint8_t { Fragmentation, SegmentRounding, Leak, External, Capacity };
/// The stable JSON string: "fragmentation", "segment_rounding", "leak", "external", "capacity".
const char* to_string(OomCause c);

/// The settings memsnap may advise; never one that is already on.
enum class OomFix : uint8_t {
  ExpandableSegments,  // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
  MaxSplitSize,        // max_split_size_mb:N
  FreePinningTensors,  // `del` the pinning tensors earlier
  MoreHeadroom,        // leave more free memory
  StopKeeping,         // stop keeping tensors across iterations
  ExternalMemory,      // look at memory outside PyTorch
  ReduceLive,          // smaller batch, checkpointing, mixed precision, sharding
  RetryOutsideExcept,  // retry after the except clause
  // In place of ReduceLive when the roles live at the OOM say what fills memory (issue 54):
  CheckpointActivations,  // activations: torch.utils.checkpoint, a smaller micro-batch
  ShardModelState,        // weights + gradients + optimizer state: ZeRO/FSDP, lighter optimizer, bf16
  LoadWeightsSharded,     // weights being loaded, nothing else: load sharded, offload or quantize
  KvCacheSetting,         // a serving engine's KV cache: the engine's memory setting
};

/// A pasted OOM message (--oom-message) set against the report's state. A figure
/// "matches" when the state's prints as the message's (within its rounding, and for
/// a replayed state within approximate_within_bytes).
struct OomMessageCheck {
  OomMessage said;
  bool request_matches = false;           // "Tried to allocate" vs segment_request_bytes
  std::optional<bool> allocated_matches;  // vs allocated_bytes
  std::optional<bool> reserved_matches;   // vs reserved_bytes
  std::optional<bool> free_matches;       // vs the oom event's device free (from the trace only)
  /// capacity - free - this process (>= 2.2 wording): other processes' memory, which no
  /// snapshot shows; 0 when the figures' rounding could make up the difference.
  std::optional<uint64_t> other_processes_bytes;
  /// this process - reserved by PyTorch: CUDA context, NCCL, cuBLAS and other memory
  /// outside the caching allocator; 0 as above.
  std::optional<uint64_t> outside_allocator_bytes;
  /// The cause by the message's figures alone: fragmentation when what PyTorch had
  /// reserved but not allocated covered the "Tried to allocate" size, else capacity
  /// (nullopt without both figures). It stands in when the state differs.
  std::optional<OomCause> message_cause;
  /// The state differs from the message in allocated or reserved bytes: it is not the
  /// state at the error (a dump taken after the exception freed memory, or another OOM).
  bool state_differs() const {
    return (allocated_matches && !*allocated_matches) || (reserved_matches && !*reserved_matches);
  }
};

struct OomReport {
  /// True when the state is rebuilt at the oom trace event; false when the file
  /// holds no oom event and the dumped state stands in for it (--oom-size).
  bool from_trace = true;
  std::optional<uint32_t> event_index;
  std::optional<int64_t> time_us;
  int device = 0;
  uint64_t stream = 0;
  snapshot::Pool pool = snapshot::Pool::Unknown;
  bool expandable = false;       // decided under expandable segments
  uint64_t requested_bytes = 0;  // the rounded request the oom event records
  /// get_allocation_size(rounded): the message's "Tried to allocate", with expandable segments too.
  uint64_t segment_request_bytes = 0;
  /// What the allocator had to get from the device: the segment, or with expandable
  /// segments the pages still to map after the free block it grows.
  uint64_t map_bytes = 0;
  std::optional<uint64_t> device_free_bytes;
  std::optional<uint64_t> capacity_bytes;  // --capacity
  uint64_t reserved_bytes = 0, allocated_bytes = 0, active_bytes = 0;
  uint64_t free_cached_bytes = 0;             // reserved - active
  uint64_t free_cached_same_pool_bytes = 0;   // in the request's pool and stream
  uint64_t largest_free_block_bytes = 0;      // in the request's pool and stream
  uint64_t largest_free_block_any_bytes = 0;  // anywhere on the device
  bool cached_block_could_serve = false;
  /// Upper bound on how far allocated / free figures may be from the truth: blocks
  /// freed after the OOM left only their requested size, and the allocator's rule
  /// for that size may have handed out a larger block. 0: exact.
  uint64_t approximate_within_bytes = 0;
  uint64_t estimated_blocks = 0;  // live blocks at the OOM whose size was inferred
  /// Allocated at the dump minus at the OOM, when the dump holds less: memory the
  /// program freed after the OOM (the exception unwound), for the last OOM only.
  uint64_t freed_after_bytes = 0;
  std::vector<OomCause> causes;  // every cause that holds, most direct first
  std::vector<OomFix> fixes;     // most direct first; none already in effect
  /// The bytes and share of allocated memory the role-based fix (CheckpointActivations ...
  /// KvCacheSetting) is about: what fills memory at the OOM.
  uint64_t role_fix_bytes = 0;
  std::string site;
  std::vector<std::string> stack;
  std::vector<SiteBytes> top_sites;        // live at the OOM
  std::vector<PinningSite> pinning_sites;  // pin free memory in the request's pool and stream (top 5)
  bool retry_in_except = false;            // allocations resumed while the failed step's tensors were alive
  std::string retry_site;
  std::optional<OomMessageCheck> message;  // --oom-message, on the report it describes
  /// What `memsnap simulate` found for the advised allocator setting.
  struct WhatIf {
    std::string setting;                            // "expandable_segments:True", "max_split_size_mb:N"
    bool fits = false;                              // this request would have been served
    std::optional<uint32_t> oom_event;              // where the simulated run ran out instead, if it did
    uint64_t peak_reserved_bytes = 0;               // of the simulated run
    std::optional<uint64_t> reserved_at_oom_bytes;  // the simulated run's, right after this request
    std::optional<uint64_t> capacity_bytes;         // the device's size at this OOM, as the trace shows it
  };
  std::optional<WhatIf> what_if;

  OomCause cause() const { return causes.front(); }
};

/// An OOM event beyond the explained ones: the sweep's figures.
struct OomEvent {
  uint32_t event_index = 0;
  std::optional<int64_t> time_us;
  uint64_t stream = 0;
  uint64_t requested_bytes = 0;
  uint64_t device_free_bytes = 0;
  uint64_t allocated_bytes = 0;
  uint64_t reserved_bytes = 0;
  std::string site;
};

struct OomOptions {
  std::optional<uint64_t> capacity;         // the device's total memory
  std::optional<uint64_t> assumed_request;  // analyse the dump as an OOM of this size (no oom event)
  std::optional<uint64_t> assumed_stream;
  /// --oom-message: on its GPU (every device when it names none), the last OOM of the
  /// trace is checked against it, or, without one, it stands for --oom-size (its
  /// "Tried to allocate"), with the device free and capacity it gives. --capacity and
  /// --oom-size override its figures.
  std::optional<OomMessage> message;
};

inline constexpr size_t kExplainedOoms = 20;

struct OomResult {
  std::vector<OomReport> explained;  // the first kExplainedOoms, oldest first
  std::vector<OomEvent> more;        // the rest, oldest first
  uint64_t total = 0;                // oom events of the device (+1 for --oom-size)
};

/// `dumped` is the dumped device with its accounting; `leaks` the device's leaks.
OomResult analyze_ooms(const Context& ctx, const snapshot::Device& dumped, const Accounting& dumped_accounting,
                       const Replay* replay, const std::vector<Leak>& leaks, const OomOptions& options);

}  // namespace memsnap::analysis
