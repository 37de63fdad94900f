// Memory over time from the replay's sweep of one device's trace.
//
// The sweep recorded the three totals after every event; the points to keep are
// chosen from that full series (select_points). With by-site, every site's live
// allocated bytes follow from the replay's live ranges: each range adds its size
// to its site at its alloc event (or at the window's start) and takes it away at
// its free; walking those changes in event order gives each site's own peak and
// its bytes at the kept points. The site sums equal the allocated total at every
// point, because the totals were computed from the same ranges.
#include "memsnap/analysis/timeline.hpp"

#include <algorithm>

namespace memsnap::analysis {

using snapshot::Action;

namespace {

// select_points over n events where value(i, s) is series s after event i: the
// replay's series are read in place, not copied (a copy was 24 B an event).
template <class Value>
std::vector<uint32_t> select_points_of(size_t n, const Value& value, size_t max_points,
                                       const std::vector<uint32_t>& forced) {
  std::vector<uint32_t> out;
  if (n <= max_points) {
    for (uint32_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  size_t room = max_points > forced.size() ? max_points - forced.size() : 1;
  size_t buckets = std::max<size_t>(1, room / 2);
  for (;;) {
    out.assign(forced.begin(), forced.end());
    for (size_t b = 0; b < buckets; ++b) {
      size_t lo = b * n / buckets, hi = (b + 1) * n / buckets;
      if (lo >= hi) continue;
      for (size_t s = 0; s < 3; ++s) {
        size_t mn = lo, mx = lo;
        for (size_t i = lo + 1; i < hi; ++i) {
          uint64_t v = value(i, s);
          if (v < value(mn, s)) mn = i;
          if (v > value(mx, s)) mx = i;
        }
        out.push_back(static_cast<uint32_t>(mn));
        out.push_back(static_cast<uint32_t>(mx));
      }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    if (out.size() <= max_points || buckets == 1) return out;
    // Fewer buckets, in proportion to the overshoot (always strictly fewer).
    buckets = std::max<size_t>(1, std::min(buckets - 1, buckets * room / (out.size() + 1)));
  }
}

}  // namespace

std::vector<uint32_t> select_points(const std::vector<std::array<uint64_t, 3>>& series, size_t max_points,
                                    const std::vector<uint32_t>& forced) {
  return select_points_of(
      series.size(), [&](size_t i, size_t s) { return series[i][s]; }, max_points, forced);
}

namespace {

struct Change {
  uint32_t event;
  uint32_t site;
  int64_t delta;
};

}  // namespace

Timeline build_timeline(const Context& ctx, const Replay& replay, const std::optional<Peak>& peak,
                        const Iterations& iterations, const TimelineOptions& opt) {
  const snapshot::Device& d = replay.device();
  Timeline t;
  t.device = d.index;
  t.events = d.trace.size();
  t.consistent = replay.consistent();
  t.by_site = opt.by_site;
  const auto& trace = d.trace;
  if (trace.empty()) return t;

  t.timed = std::all_of(trace.begin(), trace.end(), [](const auto& e) { return e.has_time(); });
  for (const auto& e : trace)
    if (e.has_time()) {
      t.first_time_us = e.time_us;
      break;
    }
  for (size_t i = trace.size(); i-- > 0;)
    if (trace[i].has_time()) {
      t.last_time_us = trace[i].time_us;
      break;
    }
  auto time_of = [&](uint32_t i) {
    return trace[i].has_time() ? std::optional<int64_t>(trace[i].time_us) : std::nullopt;
  };
  t.peak = peak;
  for (uint32_t b : iterations.boundaries) t.iteration_starts.push_back({b, time_of(b)});

  const Series* series[3] = {&replay.allocated_series(), &replay.active_series(), &replay.reserved_series()};
  auto value = [&](size_t i, size_t s) { return (*series[s])[i]; };
  for (const auto& o : replay.ooms()) {
    const auto& e = trace[o.event];
    t.ooms.push_back({o.event, time_of(o.event), e.size, e.device_free(), o.totals.allocated, o.totals.reserved});
  }

  std::vector<uint32_t> forced = {0, static_cast<uint32_t>(trace.size() - 1)};
  if (t.peak) forced.push_back(t.peak->event_index);
  for (const auto& o : t.ooms) forced.push_back(o.event_index);
  std::sort(forced.begin(), forced.end());
  forced.erase(std::unique(forced.begin(), forced.end()), forced.end());
  std::vector<uint32_t> keep = select_points_of(series[0]->size(), value, opt.max_points, forced);
  t.points.reserve(keep.size());
  for (uint32_t i : keep) t.points.push_back({i, time_of(i), value(i, 0), value(i, 1), value(i, 2)});
  if (!opt.by_site) return t;

  // ---- site bytes from the live ranges ------------------------------------------------
  const size_t nsites = ctx.sites.size();
  std::vector<uint64_t> live(nsites, 0), own_peak(nsites, 0), biggest(nsites, 0);
  std::vector<snapshot::StackId> stack(nsites);
  std::vector<Change> changes;
  for (const LiveRange& r : replay.ranges()) {
    if (r.pending_at_start) continue;
    uint32_t site = ctx.sites.site_of(r.stack).v;
    if (r.size > biggest[site]) biggest[site] = r.size, stack[site] = r.stack;
    if (r.begin == kWindowStart)
      live[site] += r.size;
    else
      changes.push_back({r.begin, site, static_cast<int64_t>(r.size)});
    if (r.freed != kNever) changes.push_back({r.freed, site, -static_cast<int64_t>(r.size)});
  }
  for (size_t s = 0; s < nsites; ++s) own_peak[s] = live[s];
  // In event order, frees before allocations of the same event (a replaced block).
  std::sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) {
    return a.event != b.event ? a.event < b.event : a.delta < b.delta;
  });
  std::vector<uint64_t> start_live = live;
  for (const Change& c : changes) {
    live[c.site] += static_cast<uint64_t>(c.delta);
    own_peak[c.site] = std::max(own_peak[c.site], live[c.site]);
  }
  std::vector<uint32_t> order;
  for (uint32_t s = 0; s < nsites; ++s)
    if (own_peak[s] > 0) order.push_back(s);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return own_peak[a] != own_peak[b] ? own_peak[a] > own_peak[b]
                                      : ctx.sites.name(SiteId{a}) < ctx.sites.name(SiteId{b});
  });
  if (order.size() > opt.top_sites) order.resize(opt.top_sites);
  std::vector<uint32_t> column(nsites, static_cast<uint32_t>(order.size()));  // default: "other"
  for (uint32_t c = 0; c < order.size(); ++c) {
    column[order[c]] = c;
    t.sites.push_back({ctx.sites.name(SiteId{order[c]}), ctx.sites.stack(stack[order[c]]), own_peak[order[c]]});
  }
  const size_t cols = t.site_columns();
  t.site_bytes.assign(keep.size() * cols, 0);
  std::vector<uint64_t> col_bytes(cols, 0);
  for (uint32_t s = 0; s < nsites; ++s) col_bytes[column[s]] += start_live[s];
  size_t c = 0;
  for (size_t k = 0; k < keep.size(); ++k) {
    for (; c < changes.size() && changes[c].event <= keep[k]; ++c)
      col_bytes[column[changes[c].site]] += static_cast<uint64_t>(changes[c].delta);
    std::copy(col_bytes.begin(), col_bytes.end(), t.site_bytes.begin() + static_cast<ptrdiff_t>(k * cols));
  }
  return t;
}

}  // namespace memsnap::analysis
