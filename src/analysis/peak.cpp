// Peaks from the replay's sweep; the sites live at the allocated peak from one state rebuild.
#include "memsnap/analysis/peak.hpp"

#include <algorithm>
#include <unordered_map>

namespace memsnap::analysis {

using snapshot::BlockState;
using snapshot::StackId;

std::vector<SiteBytes> sites_by_bytes(const Context& ctx, const snapshot::Device& d, size_t top, OtherSites* rest) {
  struct Acc {
    uint64_t bytes = 0, count = 0, biggest = 0;
    StackId stack;
  };
  std::unordered_map<uint32_t, Acc> by;  // dense site ids
  for (const auto& b : d.blocks) {
    if (b.state != BlockState::ActiveAllocated) continue;
    Acc& a = by[ctx.sites.site_of(b.stack).v];
    a.bytes += b.size;
    a.count += 1;
    if (b.size > a.biggest) a.biggest = b.size, a.stack = b.stack;
  }
  std::vector<std::pair<uint32_t, Acc>> v(by.begin(), by.end());
  auto order = [&](auto& x, auto& y) {
    return x.second.bytes != y.second.bytes ? x.second.bytes > y.second.bytes
                                            : ctx.sites.name(SiteId{x.first}) < ctx.sites.name(SiteId{y.first});
  };
  size_t keep = std::min(top, v.size());
  std::partial_sort(v.begin(), v.begin() + static_cast<ptrdiff_t>(keep), v.end(), order);
  if (rest) {
    *rest = {};
    for (size_t i = keep; i < v.size(); ++i) {
      rest->sites += 1;
      rest->live_bytes += v[i].second.bytes;
      rest->allocations += v[i].second.count;
    }
  }
  std::vector<SiteBytes> out;
  for (size_t i = 0; i < keep; ++i)
    out.push_back(
        {ctx.sites.name(SiteId{v[i].first}), ctx.sites.stack(v[i].second.stack), v[i].second.bytes, v[i].second.count});
  return out;
}

Peaks find_peaks(const Context& ctx, const Replay& replay, size_t top_sites) {
  Peaks out;
  const auto& trace = replay.device().trace;
  auto time_of = [&](uint32_t i) {
    return trace[i].has_time() ? std::optional<int64_t>(trace[i].time_us) : std::nullopt;
  };
  if (const auto& p = replay.peak_allocated()) {
    Peak peak;
    peak.event_index = p->event;
    peak.time_us = time_of(p->event);
    peak.allocated_bytes = p->totals.allocated;
    peak.active_bytes = p->totals.active;
    peak.reserved_bytes = p->totals.reserved;
    if (replay.allocated_peak_at_window_start()) {
      // max_memory_allocated() over the window counts the state it opened with.
      const Totals& t = replay.start_totals();
      peak.event_index = 0;
      peak.time_us = std::nullopt;
      peak.allocated_bytes = t.allocated;
      peak.active_bytes = t.active;
      peak.reserved_bytes = t.reserved;
      peak.at_window_start = true;
      if (top_sites) peak.top_sites = sites_by_bytes(ctx, replay.state_at_start().device, top_sites, &peak.other_sites);
    } else if (top_sites) {  // no state rebuilt when no site is asked for
      peak.top_sites = sites_by_bytes(ctx, replay.state_after(p->event).device, top_sites, &peak.other_sites);
    }
    out.allocated = std::move(peak);
  }
  if (const auto& p = replay.peak_reserved()) {
    out.reserved = PeakReserved{p->event, time_of(p->event), p->totals.reserved};
    if (replay.reserved_peak_at_window_start())
      out.reserved = PeakReserved{0, std::nullopt, replay.start_totals().reserved, true};
  }
  return out;
}

}  // namespace memsnap::analysis
