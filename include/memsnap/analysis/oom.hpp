// Why an allocation failed: the allocator's state at the out-of-memory event, its cause and the fix.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memsnap/analysis/findings.hpp"
#include "memsnap/analysis/replay.hpp"
#include "memsnap/analysis/sites.hpp"
#include "memsnap/analysis/trace_analysis.hpp"
#include "memsnap/snapshot/model.hpp"

namespace memsnap::analysis {

struct OomCause {
  std::string cause;     // fragmentation, capacity, segment_rounding, leak, external
  std::string evidence;  // the numbers that support it, in words
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
  uint64_t requested_bytes = 0;        // the rounded request the oom event records
  uint64_t segment_request_bytes = 0;  // the new segment it needed: the message's "Tried to allocate"
  std::optional<uint64_t> device_free_bytes;
  std::optional<uint64_t> capacity_bytes;  // --capacity
  uint64_t reserved_bytes = 0, allocated_bytes = 0, active_bytes = 0;
  uint64_t free_cached_bytes = 0;               // reserved - active
  uint64_t free_cached_same_pool_bytes = 0;     // in the request's pool and stream
  uint64_t largest_free_block_bytes = 0;        // in the request's pool and stream
  uint64_t largest_free_block_any_bytes = 0;    // anywhere on the device
  bool cached_block_could_serve = false;
  /// Upper bound on how far allocated / free figures may be from the truth: blocks
  /// freed after the OOM left only their requested size in the trace.
  uint64_t approximate_within_bytes = 0;
  std::string cause;
  std::vector<OomCause> causes;  // every cause that holds, most direct first
  std::string message;           // PyTorch's error message, rebuilt from these numbers
  std::string site;
  std::vector<std::string> stack;
  std::vector<SiteBytes> top_sites;      // live at the OOM
  /// Sites of the live blocks that strand free memory in the request's pool and
  /// stream; live_bytes holds the bytes they strand (fragmentation's attribution).
  std::vector<SiteBytes> pinning_sites;
  std::vector<std::string> advice;
  bool retry_in_except = false;  // allocations resumed while the failed step's tensors were alive
};

struct OomOptions {
  std::optional<uint64_t> capacity;      // the device's total memory
  std::optional<uint64_t> assumed_request;  // analyse the dump as an OOM of this size (no oom event)
  std::optional<uint64_t> assumed_stream;
};

/// One report per oom event of the device, oldest first (or one for the dump
/// when `assumed_request` is set and the trace has no oom event).
std::vector<OomReport> analyze_ooms(const snapshot::Snapshot& snap, const snapshot::Device& device,
                                    const Replay& replay, Sites& sites, const TraceAnalysis& trace,
                                    const OomOptions& options);

/// One critical finding per OOM (kind "oom_" + cause), plus the retry-in-except warning.
std::vector<Finding> oom_findings(const std::vector<OomReport>& ooms);

}  // namespace memsnap::analysis
