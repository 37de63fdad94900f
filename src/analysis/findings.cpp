// The rules that raise findings: one home for every threshold (FindingThresholds).
#include "memsnap/analysis/findings.hpp"

#include <algorithm>
#include <array>
#include <string_view>

#include "memsnap/analysis/analyze.hpp"

namespace memsnap::analysis {

const char* to_string(Severity s) {
  switch (s) {
    case Severity::Info: return "info";
    case Severity::Warning: return "warning";
    case Severity::Critical: return "critical";
  }
  return "?";
}

namespace {

struct KindName {
  FindingKind kind;
  const char* name;
};

// The stable JSON strings: scripts match on them, so they never change.
constexpr std::array<KindName, 25> kKindNames{{
    {FindingKind::OomFragmentation, "oom_fragmentation"},
    {FindingKind::OomSegmentRounding, "oom_segment_rounding"},
    {FindingKind::OomLeak, "oom_leak"},
    {FindingKind::OomExternal, "oom_external"},
    {FindingKind::OomCapacity, "oom_capacity"},
    {FindingKind::OomRetryInExcept, "oom_retry_in_except"},
    {FindingKind::LeakAutogradHistory, "leak_autograd_history"},
    {FindingKind::LeakTensorList, "leak_tensor_list"},
    {FindingKind::LeakGrowth, "leak_growth"},
    {FindingKind::GrowingWithInput, "growing_with_input"},
    {FindingKind::GrowthUnattributed, "growth_unattributed"},
    {FindingKind::ActivationsKeptWithoutBackward, "activations_kept_without_backward"},
    {FindingKind::StaleGradientsAtPeak, "stale_gradients_at_peak"},
    {FindingKind::GradientsNeverZeroed, "gradients_never_zeroed"},
    {FindingKind::ActivationsKeptAfterBackward, "activations_kept_after_backward"},
    {FindingKind::KvCacheReserved, "kv_cache_reserved"},
    {FindingKind::CacheFlushRetry, "cache_flush_retry"},
    {FindingKind::EmptyCacheInLoop, "empty_cache_in_loop"},
    {FindingKind::BigLayer, "big_layer"},
    {FindingKind::ModelPerStep, "model_per_step"},
    {FindingKind::StrandedFreeMemory, "stranded_free_memory"},
    {FindingKind::FragmentedPool, "fragmented_pool"},
    {FindingKind::ReleasableCache, "releasable_cache"},
    {FindingKind::PendingFree, "pending_free"},
    {FindingKind::TraceInconsistent, "trace_inconsistent"},
}};

bool passes(uint64_t bytes, uint64_t reserved, double share, uint64_t min_bytes) {
  return bytes >= min_bytes && double(bytes) >= share * double(reserved);
}

FindingKind oom_kind(OomCause c) {
  switch (c) {
    case OomCause::Fragmentation: return FindingKind::OomFragmentation;
    case OomCause::SegmentRounding: return FindingKind::OomSegmentRounding;
    case OomCause::Leak: return FindingKind::OomLeak;
    case OomCause::External: return FindingKind::OomExternal;
    case OomCause::Capacity: return FindingKind::OomCapacity;
  }
  return FindingKind::OomCapacity;
}

}  // namespace

bool about_oom(FindingKind k) {
  switch (k) {
    case FindingKind::OomFragmentation:
    case FindingKind::OomSegmentRounding:
    case FindingKind::OomLeak:
    case FindingKind::OomExternal:
    case FindingKind::OomCapacity:
    case FindingKind::OomRetryInExcept: return true;
    default: return false;
  }
}

const char* to_string(FindingKind k) {
  for (const auto& kn : kKindNames)
    if (kn.kind == k) return kn.name;
  return "?";
}

std::optional<FindingKind> finding_kind_from_string(std::string_view s) {
  for (const auto& kn : kKindNames)
    if (s == kn.name) return kn.kind;
  return std::nullopt;
}

namespace {

// Out of memory first: one per explained OOM, by its leading cause.
void add_oom_findings(std::vector<Finding>& f, const DeviceAnalysis& d) {
  for (size_t i = 0; i < d.ooms.explained.size(); ++i) {
    const OomReport& r = d.ooms.explained[i];
    f.push_back({oom_kind(r.cause()), Severity::Critical, r.requested_bytes, i});
    if (r.retry_in_except) f.push_back({FindingKind::OomRetryInExcept, Severity::Warning, r.requested_bytes, i});
  }
}

// Across iterations: leaks by pattern, one finding per pattern; the headline growth
// is the iterations' own figure, so the line, the table and the finding agree.
void add_growth_findings(std::vector<Finding>& f, const DeviceAnalysis& d, const FindingThresholds& t) {
  const Iterations& it = d.iterations;
  uint64_t growth = it.growth_bytes_per_iteration > 0 ? uint64_t(it.growth_bytes_per_iteration) : 0;
  bool autograd = false, list = false, other = false;
  for (const auto& l : d.leaks) {
    autograd = autograd || l.pattern == LeakPattern::AutogradHistory;
    list = list || l.pattern == LeakPattern::TensorList;
    other = other || l.pattern == LeakPattern::Unclassified;
  }
  // A module built anew each step is the leak's cause when every unclassified
  // leaking site is that module's constructor or build site: name it, not a leak.
  if (other && d.model_per_step) {
    bool explained = true;
    for (const auto& l : d.leaks)
      if (l.pattern == LeakPattern::Unclassified && l.site != d.model_per_step->site &&
          l.site != d.model_per_step->constructor)
        explained = false;
    if (explained) other = false;
  }
  if (d.model_per_step)
    f.push_back({FindingKind::ModelPerStep, Severity::Warning, d.model_per_step->bytes_per_build, 0});
  if (autograd) f.push_back({FindingKind::LeakAutogradHistory, Severity::Critical, growth, 0});
  if (list) f.push_back({FindingKind::LeakTensorList, Severity::Critical, growth, 0});
  if (other) f.push_back({FindingKind::LeakGrowth, Severity::Warning, growth, 0});
  if (!d.growing.empty())
    f.push_back({FindingKind::GrowingWithInput, Severity::Warning, d.growing.front().last_bytes, 0});
  if (d.leaks.empty() && it.count >= t.growth_min_iterations && growth > 0 &&
      it.rising_share >= t.growth_rising_share && d.peaks.allocated &&
      double(growth) * double(it.count) > t.growth_share_of_peak * double(d.peaks.allocated->allocated_bytes))
    f.push_back({FindingKind::GrowthUnattributed, Severity::Warning, growth, 0});
}

// How the program runs: the model's build, churn of the cache, activations kept.
void add_behaviour_findings(std::vector<Finding>& f, const DeviceAnalysis& d, const FindingThresholds& t) {
  // How the model is built: a parameter too large for the device.
  if (d.big_layer)
    f.push_back({FindingKind::BigLayer, d.memory_pressure ? Severity::Warning : Severity::Info,
                 d.big_layer->footprint_bytes, 0});
  // Churn: the allocator emptied its cache to retry cudaMalloc (the job runs at the
  // edge of memory); the program called empty_cache() again and again.
  if (d.churn.retries > 0) f.push_back({FindingKind::CacheFlushRetry, Severity::Warning, d.churn.retry_freed_bytes, 0});
  if (d.churn.empty_cache_calls >= t.empty_cache_min_calls ||
      (d.churn.empty_cache_calls > 0 && d.churn.reallocations >= t.empty_cache_min_reallocations))
    f.push_back({FindingKind::EmptyCacheInLoop, Severity::Info, d.churn.empty_cache_returned_bytes, 0});
  // One pass that keeps every layer's activations, and no backward to free them (and
  // nothing in the file shows training: a step whose backward never ran is not
  // evaluation).
  // Autocast's cached casts are kept too, but no_grad does not free them: not activations.
  if (d.structure && d.structure->keeps_activations && !d.structure->backward_seen && !d.training &&
      d.structure->kept_bytes > d.structure->kept_autocast_cache_bytes)
    f.push_back({FindingKind::ActivationsKeptWithoutBackward, Severity::Info,
                 d.structure->kept_bytes - d.structure->kept_autocast_cache_bytes, 0});
}

// Roles (issue 54): what fills memory decides the advice.
void add_role_findings(std::vector<Finding>& f, const DeviceAnalysis& d, const FindingThresholds& t) {
  const DeviceRoles& r = d.roles;
  // The previous step's gradients alive through the forward at the peak: zero_grad runs late.
  if (r.peak && d.peaks.allocated && r.peak->stale_gradients > 0 &&
      double(r.peak->stale_gradients) >= t.stale_gradient_share * double(d.peaks.allocated->allocated_bytes))
    f.push_back({FindingKind::StaleGradientsAtPeak, d.memory_pressure ? Severity::Warning : Severity::Info,
                 r.peak->stale_gradients, 0});
  // The backward adds into gradients that outlived the last step: nothing zeroes them.
  if (r.never_zeroed) f.push_back({FindingKind::GradientsNeverZeroed, Severity::Warning, r.never_zeroed->bytes, 0});
  // A forward's activations still allocated after its backward: the graph or outputs are held
  // (not when growth across iterations already names the autograd history kept).
  const bool history =
      std::any_of(f.begin(), f.end(), [](const Finding& x) { return x.kind == FindingKind::LeakAutogradHistory; });
  if (const auto& k = r.kept_after_backward;
      k && !history && d.peaks.allocated && k->bytes >= t.kept_after_backward_min_bytes &&
      double(k->bytes) >= t.kept_after_backward_share * double(d.peaks.allocated->allocated_bytes))
    f.push_back({FindingKind::ActivationsKeptAfterBackward, d.memory_pressure ? Severity::Warning : Severity::Info,
                 k->bytes, 0});
  // A serving engine's KV cache, reserved up front: its size is the engine's setting.
  if (r.dump.by_role.bytes.size() > size_t(Role::KvCache)) {
    uint64_t kv = r.dump.by_role.bytes[size_t(Role::KvCache)];
    if (kv > 0 && double(kv) >= t.kv_cache_share * double(d.accounting.reserved_bytes))
      f.push_back({FindingKind::KvCacheReserved, Severity::Info, kv, 0});
  }
}

// The state: warnings only when memory was tight (an OOM, a flush-and-retry, a peak
// near the device's capacity); otherwise the cached memory cost the run nothing.
void add_state_findings(std::vector<Finding>& f, const DeviceAnalysis& d, const FindingThresholds& t) {
  const Accounting& a = d.accounting;
  const uint64_t reserved = a.reserved_bytes;
  const Severity tight = d.memory_pressure ? Severity::Warning : Severity::Info;
  if (passes(a.stranded_bytes, reserved, t.stranded_share, t.stranded_min_bytes))
    f.push_back({FindingKind::StrandedFreeMemory,
                 d.memory_pressure && double(a.stranded_bytes) >= t.stranded_share_critical * double(reserved)
                     ? Severity::Critical
                     : tight,
                 a.stranded_bytes, 0});
  // The worst fragmented pool, measured on the memory that stays cached after the
  // allocator's own release-and-retry (whole free units go back before an OOM).
  std::optional<size_t> worst;
  for (size_t i = 0; i < a.pools.size(); ++i) {
    const auto& p = a.pools[i];
    if (p.fragmentation >= t.pool_fragmentation &&
        passes(p.stranded_bytes, reserved, t.pool_stranded_share, t.pool_stranded_min_bytes) &&
        (!worst || p.stranded_bytes > a.pools[*worst].stranded_bytes))
      worst = i;
  }
  if (worst) f.push_back({FindingKind::FragmentedPool, tight, a.pools[*worst].stranded_bytes, *worst});
  if (passes(a.releasable_bytes, reserved, t.releasable_share, t.releasable_min_bytes))
    f.push_back({FindingKind::ReleasableCache, Severity::Info, a.releasable_bytes, 0});
  if (passes(a.pending_free_bytes, reserved, t.pending_share, t.pending_min_bytes))
    f.push_back({FindingKind::PendingFree, Severity::Info, a.pending_free_bytes, 0});
}

}  // namespace

std::vector<Finding> raise_findings(const Context& ctx, const DeviceAnalysis& d, const FindingThresholds& t) {
  (void)ctx;
  std::vector<Finding> f;
  add_oom_findings(f, d);
  if (!d.trace.consistent && d.trace.first_mismatch)
    f.push_back({FindingKind::TraceInconsistent, Severity::Warning, 0, 0});
  add_growth_findings(f, d, t);
  add_behaviour_findings(f, d, t);
  add_role_findings(f, d, t);
  add_state_findings(f, d, t);
  return f;
}

}  // namespace memsnap::analysis
