// `memsnap check`'s rules: which limits pass, fail or cannot be judged on each device.
#include "memsnap/analysis/check.hpp"

#include <algorithm>

#include "memsnap/analysis/leaks.hpp"

namespace memsnap::analysis {

const char* to_string(CheckKind k) {
  switch (k) {
    case CheckKind::MaxReserved: return "max-reserved";
    case CheckKind::MaxAllocated: return "max-allocated";
    case CheckKind::MaxPeak: return "max-peak";
    case CheckKind::MaxFragmentation: return "max-fragmentation";
    case CheckKind::MaxStranded: return "max-stranded";
    case CheckKind::NoLeaks: return "no-leaks";
    case CheckKind::NoOom: return "no-oom";
    case CheckKind::MinHeadroom: return "min-headroom";
  }
  return "?";
}

const char* to_string(CheckStatus s) {
  switch (s) {
    case CheckStatus::Pass: return "PASS";
    case CheckStatus::Fail: return "FAIL";
    case CheckStatus::Error: return "ERROR";
    case CheckStatus::Skip: return "SKIP";
  }
  return "?";
}

bool Limits::any() const {
  return max_reserved || max_allocated || max_peak || max_stranded || max_fragmentation || no_leaks || no_oom ||
         capacity || min_headroom;
}

std::optional<uint64_t>& Limits::size(CheckKind k) {
  switch (k) {
    case CheckKind::MaxReserved: return max_reserved;
    case CheckKind::MaxAllocated: return max_allocated;
    case CheckKind::MaxPeak: return max_peak;
    default: return max_stranded;
  }
}

const std::optional<uint64_t>& Limits::size(CheckKind k) const {
  return const_cast<Limits*>(this)->size(k);
}

CheckTotals check_totals(const std::vector<CheckLine>& lines) {
  CheckTotals t;
  for (const auto& l : lines) {
    if (l.status == CheckStatus::Error) {
      ++t.errors;
      continue;
    }
    ++t.checks;
    if (l.status == CheckStatus::Pass)
      ++t.passed;
    else if (l.status == CheckStatus::Skip)
      ++t.skipped;
    else
      ++t.failed;
  }
  return t;
}

namespace {

CheckLine line(const std::string& file, int device, CheckKind check, uint64_t figure, uint64_t limit,
               const char* field) {
  CheckLine l;
  l.file = file;
  l.device = device;
  l.check = check;
  l.status = figure <= limit ? CheckStatus::Pass : CheckStatus::Fail;
  l.figure = figure;
  l.limit = limit;
  l.field = field;
  return l;
}

CheckLine skipped(CheckLine l, SkipReason why) {
  l.status = CheckStatus::Skip;
  l.skipped_figure = l.figure.value_or(0);
  l.figure.reset();  // no figure: 0 would read as a pass
  l.skip = why;
  return l;
}

// Only a peak above the limit is a finding when the trace dropped events: a higher one
// may have been dropped.
CheckLine peak_line(const std::string& file, const DeviceAnalysis& d, const snapshot::AllocatorSettings& settings,
                    uint64_t limit) {
  const bool dropped = d.trace.dropped != DroppedEvents::NotShown;
  if (d.peaks.allocated && dropped && d.peaks.allocated->allocated_bytes <= limit) {
    CheckLine l = skipped(line(file, d.device, CheckKind::MaxPeak, d.peaks.allocated->allocated_bytes, limit,
                               "devices[].trace.events_dropped"),
                          SkipReason::PeakWithinDroppedTrace);
    l.trace = d.trace;
    l.trace_alloc_max_entries = settings.trace_alloc_max_entries;
    return l;
  }
  if (d.peaks.allocated)
    return line(file, d.device, CheckKind::MaxPeak, d.peaks.allocated->allocated_bytes, limit,
                "devices[].peak.allocated_bytes");
  return line(file, d.device, CheckKind::MaxPeak, d.accounting.allocated_bytes, limit,
              "devices[].totals.allocated_bytes (no trace, so no peak)");
}

// The worst pool of those that strand enough to matter.
CheckLine fragmentation_line(const std::string& file, const DeviceAnalysis& d, double limit) {
  double worst = 0;
  CheckLine l;
  l.floor_bytes = kFragmentationFloorBytes;
  for (const auto& p : d.accounting.pools) {
    if (p.stranded_bytes < kFragmentationFloorBytes) {
      l.pools_ignored += p.fragmentation > 0 ? 1 : 0;
      continue;
    }
    if (l.pool.empty() || p.fragmentation > worst) {
      worst = p.fragmentation;
      l.pool = std::string(snapshot::to_string(p.pool)) + " pool, stream " + std::to_string(p.stream);
      if (p.is_private())
        l.pool = "private pool (" + std::to_string(p.pool_id[0]) + "," + std::to_string(p.pool_id[1]) + ") " + l.pool;
      l.pool_stranded_bytes = p.stranded_bytes;
    }
  }
  l.file = file;
  l.device = d.device;
  l.check = CheckKind::MaxFragmentation;
  l.status = worst <= limit ? CheckStatus::Pass : CheckStatus::Fail;
  l.ratio = true;
  l.figure_ratio = worst;
  l.limit_ratio = limit;
  l.field = "devices[].fragmentation.pools[].fragmentation (the highest pool)";
  return l;
}

CheckLine leaks_line(const std::string& file, const DeviceAnalysis& d) {
  if (leaks_judged(d.iterations)) return line(file, d.device, CheckKind::NoLeaks, d.leaks.size(), 0, "devices[].leaks");
  CheckLine l =
      skipped(line(file, d.device, CheckKind::NoLeaks, 0, 0, "devices[].iterations"), SkipReason::TooFewIterations);
  l.iterations = d.iterations;
  return l;
}

// An OOM in the trace fails; none passes only when the trace shows no sign of having
// dropped what came before it.
CheckLine oom_line(const std::string& file, const DeviceAnalysis& d, const snapshot::AllocatorSettings& settings) {
  if (!d.trace.entries)
    return skipped(line(file, d.device, CheckKind::NoOom, 0, 0, "devices[].trace.entries"), SkipReason::NoTrace);
  if (d.ooms.total == 0 && d.trace.dropped != DroppedEvents::NotShown) {
    CheckLine l = skipped(line(file, d.device, CheckKind::NoOom, 0, 0, "devices[].trace.events_dropped"),
                          SkipReason::OomsDropped);
    l.trace = d.trace;
    l.trace_alloc_max_entries = settings.trace_alloc_max_entries;
    return l;
  }
  return line(file, d.device, CheckKind::NoOom, d.ooms.total, 0, "devices[].oom_events");
}

// What the device's size leaves above its reserved peak. Only a shortfall is a finding when the
// trace dropped older events (a higher peak may be among them).
CheckLine headroom_line(const std::string& file, const DeviceAnalysis& d, const snapshot::AllocatorSettings& settings,
                        const Limits& limits) {
  std::optional<uint64_t> capacity = limits.capacity ? limits.capacity : d.capacity_bytes;
  uint64_t limit = limits.min_headroom.value_or(capacity ? *capacity / 10 : 0);
  uint64_t reserved = std::max(d.peaks.reserved ? d.peaks.reserved->bytes : 0, d.accounting.reserved_bytes);
  const char* field = d.peaks.reserved ? "devices[].peak_reserved.reserved_bytes" : "devices[].totals.reserved_bytes";
  CheckLine l = line(file, d.device, CheckKind::MinHeadroom, 0, limit, field);
  l.at_least = true;
  if (!capacity) return skipped(l, SkipReason::CapacityUnknown);
  l.capacity = *capacity;
  l.figure = *capacity > reserved ? *capacity - reserved : 0;
  l.status = *l.figure >= limit ? CheckStatus::Pass : CheckStatus::Fail;
  if (l.status == CheckStatus::Pass && d.trace.dropped != DroppedEvents::NotShown) {
    l = skipped(l, SkipReason::PeakWithinDroppedTrace);
    l.skipped_figure = reserved;
    l.trace = d.trace;
    l.trace_alloc_max_entries = settings.trace_alloc_max_entries;
  }
  return l;
}

void check_device(const std::string& file, const DeviceAnalysis& d, const snapshot::AllocatorSettings& settings,
                  const Limits& limits, std::vector<CheckLine>& out) {
  const auto& t = d.accounting;
  if (limits.max_reserved)
    out.push_back(line(file, d.device, CheckKind::MaxReserved, t.reserved_bytes, *limits.max_reserved,
                       "devices[].totals.reserved_bytes"));
  if (limits.max_allocated)
    out.push_back(line(file, d.device, CheckKind::MaxAllocated, t.allocated_bytes, *limits.max_allocated,
                       "devices[].totals.allocated_bytes"));
  if (limits.max_peak) out.push_back(peak_line(file, d, settings, *limits.max_peak));
  if (limits.max_fragmentation) out.push_back(fragmentation_line(file, d, *limits.max_fragmentation));
  if (limits.max_stranded)
    out.push_back(line(file, d.device, CheckKind::MaxStranded, t.stranded_bytes, *limits.max_stranded,
                       "devices[].fragmentation.stranded_bytes"));
  if (limits.no_leaks) out.push_back(leaks_line(file, d));
  if (limits.no_oom) out.push_back(oom_line(file, d, settings));
  if (limits.capacity || limits.min_headroom) out.push_back(headroom_line(file, d, settings, limits));
}

}  // namespace

std::vector<CheckLine> evaluate_limits(const AnalyzeResult& result, const snapshot::AllocatorSettings& settings,
                                       const Limits& limits, const std::string& file) {
  std::vector<CheckLine> out;
  bool any_used = false;
  for (const auto& d : result.devices) any_used |= !d.unused;
  for (const auto& d : result.devices)
    if (!d.unused || !any_used) check_device(file, d, settings, limits, out);
  return out;
}

}  // namespace memsnap::analysis
