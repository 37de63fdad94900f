// Memory over time from forward replays of one device's trace.
//
// Pass 1 steps a ReplayState through every event and keeps the three totals
// after each one (24 bytes an event), the OOM events and, with --by-site, every
// site's running live bytes and its own peak. The points to keep are chosen
// from the full series (select_points). Pass 2, only with --by-site, replays
// again to read the top sites' live bytes at the kept points.
//
// Site bytes follow the replay exactly: an alloc or free only changes the live
// block at its own address, so the site running sums are updated by that
// block's contribution (its size when allocated and not pending a free) before
// and after ReplayState::step(). Whatever step() decides (a repaired free, a
// block replaced by an inconsistent alloc) the sums therefore stay equal to
// ReplayTotals::allocated.
#include "memsnap/analysis/timeline.hpp"

#include <algorithm>

namespace memsnap::analysis {

using snapshot::Action;

namespace {

bool touches_block(Action a) {
  return a == Action::Alloc || a == Action::FreeRequested || a == Action::FreeCompleted || a == Action::Free;
}

// The allocated bytes the live block at `addr` adds to its site.
struct Contribution {
  uint32_t site = 0;
  uint64_t bytes = 0;
  snapshot::StackId stack;
};

Contribution contribution(const ReplayState& st, uint64_t addr, Sites& sites) {
  auto it = st.live().find(addr);
  if (it == st.live().end() || it->second.pending) return {};
  return {sites.site_of(it->second.stack).v, it->second.size, it->second.stack};
}

// Running live bytes per site (indexed by SiteId), following one ReplayState.
class SiteSums {
 public:
  explicit SiteSums(Sites& sites) : sites_(sites) {}

  void start(const ReplayState& st) {
    for (const auto& [addr, a] : st.live())
      if (!a.pending) add({sites_.site_of(a.stack).v, a.size, a.stack});
  }
  // Steps `st` over its next event, keeping the sums in line.
  void step(ReplayState& st, const snapshot::TraceEvent& e) {
    if (!touches_block(e.action)) {
      st.step();
      return;
    }
    Contribution before = contribution(st, e.addr, sites_);
    st.step();
    Contribution after = contribution(st, e.addr, sites_);
    if (before.bytes) sub(before);
    if (after.bytes) add(after);
  }

  std::vector<uint64_t> live, peak, biggest;
  std::vector<snapshot::StackId> stack;  // of the biggest block seen per site

 private:
  void grow(uint32_t site) {
    if (site >= live.size()) {
      live.resize(site + 1, 0);
      peak.resize(site + 1, 0);
      biggest.resize(site + 1, 0);
      stack.resize(site + 1);
    }
  }
  void add(const Contribution& c) {
    grow(c.site);
    live[c.site] += c.bytes;
    peak[c.site] = std::max(peak[c.site], live[c.site]);
    if (c.bytes > biggest[c.site]) biggest[c.site] = c.bytes, stack[c.site] = c.stack;
  }
  void sub(const Contribution& c) {
    grow(c.site);
    live[c.site] -= c.bytes;
  }
  Sites& sites_;
};

}  // namespace

std::vector<uint32_t> select_points(const std::vector<std::array<uint64_t, 3>>& series, size_t max_points,
                                    const std::vector<uint32_t>& forced) {
  const size_t n = series.size();
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
          if (series[i][s] < series[mn][s]) mn = i;
          if (series[i][s] > series[mx][s]) mx = i;
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

Timeline build_timeline(const snapshot::Snapshot& snap, const snapshot::Device& d, const Replay& replay, Sites& sites,
                        const TimelineOptions& opt) {
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
  for (auto it = trace.rbegin(); it != trace.rend(); ++it)
    if (it->has_time()) {
      t.last_time_us = it->time_us;
      break;
    }
  auto time_of = [&](uint32_t i) {
    return trace[i].has_time() ? std::optional<int64_t>(trace[i].time_us) : std::nullopt;
  };

  TraceOptions topt;
  topt.iteration_marker = opt.iteration_marker;
  TraceAnalysis ta = analyze_trace(snap, d, replay, sites, topt);
  t.peak = ta.peak;
  if (ta.iterations.found)
    for (uint32_t b : ta.iterations.boundaries) t.iteration_starts.push_back({b, time_of(b)});

  // ---- pass 1: totals after every event, OOMs, each site's own peak -----------------
  std::vector<std::array<uint64_t, 3>> series;
  series.reserve(trace.size());
  ReplayState st = replay.start();
  SiteSums sums(sites);
  if (opt.by_site) sums.start(st);
  for (uint32_t i = 0; i < trace.size(); ++i) {
    const auto& e = trace[i];
    if (opt.by_site)
      sums.step(st, e);
    else
      st.step();
    const auto& tot = st.totals();
    series.push_back({tot.allocated, tot.active, tot.reserved});
    if (e.action == Action::Oom)
      t.ooms.push_back({i, time_of(i), e.size, e.device_free(), tot.allocated, tot.reserved});
  }

  std::vector<uint32_t> forced = {0, static_cast<uint32_t>(trace.size() - 1)};
  if (t.peak) forced.push_back(t.peak->event_index);
  for (const auto& o : t.ooms) forced.push_back(o.event_index);
  std::sort(forced.begin(), forced.end());
  forced.erase(std::unique(forced.begin(), forced.end()), forced.end());
  std::vector<uint32_t> keep = select_points(series, opt.max_points, forced);
  t.points.reserve(keep.size());
  for (uint32_t i : keep) t.points.push_back({i, time_of(i), series[i][0], series[i][1], series[i][2]});

  if (!opt.by_site) return t;

  // ---- the top sites by their own peak ----------------------------------------------
  std::vector<uint32_t> order;
  for (uint32_t s = 0; s < sums.peak.size(); ++s)
    if (sums.peak[s] > 0) order.push_back(s);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return sums.peak[a] != sums.peak[b] ? sums.peak[a] > sums.peak[b] : sites.name(SiteId{a}) < sites.name(SiteId{b});
  });
  if (order.size() > opt.top_sites) order.resize(opt.top_sites);
  std::vector<uint32_t> column(sums.peak.size(), static_cast<uint32_t>(order.size()));  // default: "other"
  for (uint32_t c = 0; c < order.size(); ++c) {
    column[order[c]] = c;
    t.sites.push_back({sites.name(SiteId{order[c]}), sites.stack(sums.stack[order[c]]), sums.peak[order[c]]});
  }

  // ---- pass 2: the top sites' live bytes at the kept points ---------------------------
  const size_t cols = t.site_columns();
  t.site_bytes.assign(keep.size() * cols, 0);
  ReplayState st2 = replay.start();
  SiteSums sums2(sites);
  sums2.start(st2);
  size_t k = 0;
  for (uint32_t i = 0; i < trace.size() && k < keep.size(); ++i) {
    sums2.step(st2, trace[i]);
    if (i != keep[k]) continue;
    uint64_t* row = &t.site_bytes[k * cols];
    for (uint32_t s = 0; s < sums2.live.size(); ++s)
      if (sums2.live[s]) row[s < column.size() ? column[s] : cols - 1] += sums2.live[s];
    ++k;
  }
  return t;
}

}  // namespace memsnap::analysis
