// Memory over time from the replay's sweep of one device's trace.
//
// The three totals after every event are recomputed from the replay's ranges in
// passes over the events (TotalsCursor), not stored; the points to keep are chosen
// from that full series (select_points), one pass per bucket count. With by-site, every site's live
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

// select_points over n events. open() starts a pass: it returns at(i), the three
// series after event i, to be called with increasing i. Each pass reads every event
// once, so the replay's totals can be recomputed on the way (TotalsCursor) instead
// of stored per event.
template <class Open>
std::vector<uint32_t> select_points_of(size_t n, const Open& open, size_t max_points,
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
    auto at = open();
    for (size_t b = 0; b < buckets; ++b) {
      size_t lo = b * n / buckets, hi = (b + 1) * n / buckets;
      if (lo >= hi) continue;
      std::array<uint64_t, 3> low = at(static_cast<uint32_t>(lo)), high = low;
      std::array<size_t, 3> mn = {lo, lo, lo}, mx = mn;
      for (size_t i = lo + 1; i < hi; ++i) {
        std::array<uint64_t, 3> v = at(static_cast<uint32_t>(i));
        for (size_t s = 0; s < 3; ++s) {
          if (v[s] < low[s]) low[s] = v[s], mn[s] = i;
          if (v[s] > high[s]) high[s] = v[s], mx[s] = i;
        }
      }
      for (size_t s = 0; s < 3; ++s) {
        out.push_back(static_cast<uint32_t>(mn[s]));
        out.push_back(static_cast<uint32_t>(mx[s]));
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
  auto open = [&] { return [&](uint32_t i) { return series[i]; }; };
  return select_points_of(series.size(), open, max_points, forced);
}

namespace {

struct Change {
  uint32_t event;
  uint32_t site;
  int64_t delta;
};

// --by-site: the bytes each of the top sites (by its own peak) holds at every kept point, and
// the rest as "other", from the replay's live ranges.
void add_site_columns(const Context& ctx, const Replay& replay, const std::vector<uint32_t>& keep,
                      const TimelineOptions& opt, Timeline& t) {
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
}

// --by-role: the bytes of each role at every kept point, from the replay's live ranges and the
// roles BlockRoles gives them (as analyze's peak.by_role), and the phase spans.
void add_role_columns(const Context& ctx, const Replay& replay, const std::vector<uint32_t>& keep,
                      const TimelineOptions& opt, Timeline& t) {
  RoleTable table(ctx, opt.roles);
  Phases phases(ctx, table.stacks(), replay.device(), &replay);
  BlockRoles roles(table, replay, phases);
  const size_t cols = table.size();
  t.role_names = table.names();
  std::vector<uint64_t> live(cols, 0);
  std::vector<Change> changes;
  const uint32_t n = static_cast<uint32_t>(replay.ranges().size());
  for (uint32_t id = 0; id < n; ++id) {
    if (replay.pending_at_start_of(id)) continue;
    const uint32_t role = roles.of(id), begin = replay.begin_of(id), freed = replay.freed_of(id);
    const uint64_t size = replay.size_of(id);
    if (begin == kWindowStart)
      live[role] += size;
    else
      changes.push_back({begin, role, static_cast<int64_t>(size)});
    if (freed != kNever) changes.push_back({freed, role, -static_cast<int64_t>(size)});
  }
  std::sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) {
    return a.event != b.event ? a.event < b.event : a.delta < b.delta;
  });
  t.role_bytes.assign(keep.size() * cols, 0);
  size_t c = 0;
  for (size_t k = 0; k < keep.size(); ++k) {
    for (; c < changes.size() && changes[c].event <= keep[k]; ++c)
      live[changes[c].site] += static_cast<uint64_t>(changes[c].delta);
    std::copy(live.begin(), live.end(), t.role_bytes.begin() + static_cast<ptrdiff_t>(k * cols));
  }
  if (!ctx.snap.stacks.has_frames() && !phases.from_annotations()) return;  // nothing tells the phases
  const auto& trace = replay.device().trace;
  for (uint32_t i = 0; i < phases.size(); ++i)
    if (t.phases.empty() || phases.span(i) != phases.span(i - 1)) {
      auto e = trace[i];
      t.phases.push_back({i, e.has_time() ? std::optional<int64_t>(e.time_us) : std::nullopt, phases.at(i)});
    }
}

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

  auto open = [&] {
    return [cursor = TotalsCursor(replay)](uint32_t i) mutable {
      const Totals& now = cursor.after(i);
      return std::array<uint64_t, 3>{now.allocated, now.active, now.reserved};
    };
  };
  for (const auto& o : replay.ooms()) {
    const auto& e = trace[o.event];
    t.ooms.push_back({o.event, time_of(o.event), e.size, e.device_free(), o.totals.allocated, o.totals.reserved});
  }

  std::vector<uint32_t> forced = {0, static_cast<uint32_t>(trace.size() - 1)};
  if (t.peak) forced.push_back(t.peak->event_index);
  for (const auto& o : t.ooms) forced.push_back(o.event_index);
  std::sort(forced.begin(), forced.end());
  forced.erase(std::unique(forced.begin(), forced.end()), forced.end());
  std::vector<uint32_t> keep = select_points_of(trace.size(), open, opt.max_points, forced);
  t.points.reserve(keep.size());
  auto at = open();
  for (uint32_t i : keep) {
    auto v = at(i);
    t.points.push_back({i, time_of(i), v[0], v[1], v[2]});
  }
  t.by_role = opt.by_role;
  if (opt.by_role) add_role_columns(ctx, replay, keep, opt, t);
  if (opt.by_site) add_site_columns(ctx, replay, keep, opt, t);
  return t;
}

}  // namespace memsnap::analysis
