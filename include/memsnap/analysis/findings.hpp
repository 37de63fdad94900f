// Findings: what the analyses concluded, as kinds with their numbers. The rules that
// raise them live in findings.cpp (one home, thresholds in FindingThresholds); the
// words and the fixes are the report's (report/findings_text).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace memsnap::analysis {

enum class Severity : uint8_t { Info, Warning, Critical };
/// "info", "warning", "critical".
const char* to_string(Severity s);

enum class FindingKind : uint8_t {
  // out of memory (one per explained OOM event, by its leading cause)
  OomFragmentation,
  OomSegmentRounding,
  OomLeak,
  OomExternal,
  OomCapacity,
  OomRetryInExcept,
  // across iterations
  LeakAutogradHistory,
  LeakTensorList,
  LeakGrowth,
  GrowingWithInput,
  GrowthUnattributed,
  // one pass
  ActivationsKeptWithoutBackward,
  // roles (issue 54)
  StaleGradientsAtPeak,          // the previous step's gradients live through the forward at the peak
  KvCacheReserved,               // a serving engine's KV cache holds much of the device (dump)
  GradientsNeverZeroed,          // backward adds into every step's .grad: zero_grad never runs
  ActivationsKeptAfterBackward,  // a forward's activations outlive its backward (the graph is held)
  // churn: memory returned to CUDA only to be asked for again
  CacheFlushRetry,
  EmptyCacheInLoop,
  // how the model is built
  BigLayer,
  ModelPerStep,
  // the state
  StrandedFreeMemory,
  FragmentedPool,
  ReleasableCache,
  PendingFree,
  // the file
  TraceInconsistent,
};

/// The stable identifier scripts match on ("oom_fragmentation", "leak_growth", ...).
const char* to_string(FindingKind k);
/// Whether the finding is about one explained OOM (its `index` is then into DeviceAnalysis::ooms.explained).
bool about_oom(FindingKind k);
std::optional<FindingKind> finding_kind_from_string(std::string_view s);

/// One conclusion. `index` says which element of its section it is about (the OOM
/// in DeviceAnalysis::ooms, the pool in Accounting::pools); `bytes` is its headline
/// amount (stranded, releasable, pending, growth per iteration, kept activations).
struct Finding {
  FindingKind kind = FindingKind::TraceInconsistent;
  Severity severity = Severity::Info;
  uint64_t bytes = 0;
  size_t index = 0;
};

/// Where every threshold of every finding lives. A state finding is raised only when
/// both its share of reserved memory and its absolute size pass, so that small or
/// healthy snapshots stay quiet.
struct FindingThresholds {
  double stranded_share = 0.25;           // stranded / reserved: warning
  double stranded_share_critical = 0.50;  // stranded / reserved: critical
  uint64_t stranded_min_bytes = 32ull << 20;
  double releasable_share = 0.25;  // releasable / reserved: info
  uint64_t releasable_min_bytes = 256ull << 20;
  double pool_fragmentation = 0.50;   // 1 - largest/stranded of one pool: warning ...
  double pool_stranded_share = 0.10;  // ... when its stranded bytes are this share of reserved
  uint64_t pool_stranded_min_bytes = 32ull << 20;
  double pending_share = 0.10;  // pending free / reserved: info
  uint64_t pending_min_bytes = 64ull << 20;
  // growth without a leaking site: over five iterations or more, rising in 70% of
  // them, adding more than 5% of the peak in all
  uint64_t growth_min_iterations = 5;
  double growth_rising_share = 0.7;
  double growth_share_of_peak = 0.05;
  // memory pressure: without an OOM, a cache flush-and-retry, or a peak reserved within
  // this share of a known device capacity, state findings are info, never warnings
  double pressure_share = 0.90;
  // empty_cache_in_loop: calls that returned memory, or one call after which the
  // allocator asked CUDA for this many new segments again
  uint64_t empty_cache_min_calls = 2;
  uint64_t empty_cache_min_reallocations = 8;
  // stale_gradients_at_peak: the previous step's gradients at the peak, this share of it
  double stale_gradient_share = 0.05;
  // activations_kept_after_backward: at least this share of the peak and these bytes
  double kept_after_backward_share = 0.05;
  uint64_t kept_after_backward_min_bytes = 64ull << 20;
  // kv_cache_reserved: a KV cache this share of reserved memory at the dump
  double kv_cache_share = 0.25;
};

}  // namespace memsnap::analysis
