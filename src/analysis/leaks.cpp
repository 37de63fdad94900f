// Retention of allocations across iterations, by site, in memory proportional to the
// retained allocations (never sites x iterations), and sites that grow with the input.
#include "memsnap/analysis/leaks.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace memsnap::analysis {

using snapshot::BlockState;
using snapshot::StackId;

const char* to_string(LeakPattern p) {
  switch (p) {
    case LeakPattern::AutogradHistory: return "autograd_history";
    case LeakPattern::TensorList: return "tensor_list";
    case LeakPattern::Unclassified: return "unclassified";
  }
  return "?";
}

namespace {

size_t iteration_of(const std::vector<uint32_t>& bounds, uint32_t event) {
  return size_t(std::upper_bound(bounds.begin(), bounds.end(), event) - bounds.begin()) - 1;
}

struct Retained {
  uint32_t site;
  uint32_t iteration;
  uint64_t bytes;
  StackId stack;
  bool tiny;
};

// Sites whose largest request grows from iteration to iteration: never smaller
// than in the iteration before, larger in at least half of the steps, and at
// least 1.5 times its first size by the end, over four iterations or more.
std::vector<GrowingSite> growing_sites(const Context& ctx, const Replay& replay, const std::vector<uint32_t>& bounds) {
  // The ranges of the window come in alloc-event order, so each site's iterations arrive
  // in order: the largest request per (site, iteration) is kept in one pass, no sort,
  // and the iteration is a cursor over the boundaries.
  std::vector<std::vector<std::pair<uint32_t, uint64_t>>> by_site(ctx.sites.size());  // iteration -> largest
  size_t iteration = 0;
  for (uint32_t id = replay.first_window_range(), n = static_cast<uint32_t>(replay.ranges().size()); id < n; ++id) {
    uint32_t begin = replay.begin_of(id);
    if (begin < bounds.front()) continue;
    while (iteration + 1 < bounds.size() && bounds[iteration + 1] <= begin) ++iteration;
    auto& per_iter = by_site[ctx.sites.site_of(replay.stack_of(id)).v];
    if (per_iter.empty() || per_iter.back().first != iteration)
      per_iter.emplace_back(static_cast<uint32_t>(iteration), 0);
    per_iter.back().second = std::max(per_iter.back().second, replay.requested_of(id));
  }
  std::vector<GrowingSite> out;
  for (uint32_t site = 0; site < by_site.size(); ++site) {
    const auto& per_iter = by_site[site];
    if (per_iter.size() < 4) continue;
    size_t rises = 0;
    bool monotone = true;
    for (size_t k = 1; k < per_iter.size(); ++k) {
      if (per_iter[k].second < per_iter[k - 1].second) monotone = false;
      if (per_iter[k].second > per_iter[k - 1].second) ++rises;
    }
    uint64_t lo = per_iter.front().second, hi = per_iter.back().second;
    if (!monotone || rises * 2 < per_iter.size() - 1 || double(hi) < 1.5 * double(lo)) continue;
    out.push_back(
        {ctx.sites.name(SiteId{site}), lo, hi, per_iter.front().first, per_iter.back().first, per_iter.size()});
  }
  std::sort(out.begin(), out.end(), [](const GrowingSite& a, const GrowingSite& b) {
    return a.last_bytes != b.last_bytes ? a.last_bytes > b.last_bytes : a.site < b.site;
  });
  return out;
}

// Allocations made in a judged iteration and still allocated at the dump, by site
// (stable: event order within a site).
std::vector<Retained> retained(const Context& ctx, const Replay& replay, const std::vector<uint32_t>& bounds,
                               size_t judged) {
  std::vector<Retained> kept;
  for (uint32_t id = replay.first_window_range(), n = static_cast<uint32_t>(replay.ranges().size()); id < n; ++id) {
    if (replay.freed_of(id) != kNever || replay.pending_at_start_of(id) || replay.begin_of(id) < bounds.front())
      continue;
    LiveRange r = replay.range(id);
    size_t iter = iteration_of(bounds, r.begin);
    if (iter >= judged) continue;
    kept.push_back({ctx.sites.site_of(r.stack).v, static_cast<uint32_t>(iter), r.size, r.stack, r.size <= 512});
  }
  // Grouped by site, event order kept within one: a counting sort over the dense site ids.
  std::vector<uint32_t> first(ctx.sites.size() + 1, 0);
  for (const Retained& r : kept) ++first[r.site + 1];
  for (size_t k = 1; k < first.size(); ++k) first[k] += first[k - 1];
  std::vector<Retained> grouped(kept.size());
  for (const Retained& r : kept) grouped[first[r.site]++] = r;
  return grouped;
}

// Allocated bytes and blocks at the dump, by site (dense site ids).
std::unordered_map<uint32_t, std::pair<uint64_t, uint64_t>> live_by_site(const Context& ctx,
                                                                         const snapshot::Device& d) {
  std::unordered_map<uint32_t, std::pair<uint64_t, uint64_t>> live;
  for (const auto& b : d.blocks)
    if (b.state == BlockState::ActiveAllocated) {
      auto& l = live[ctx.sites.site_of(b.stack).v];
      l.first += b.size;
      l.second += 1;
    }
  return live;
}

}  // namespace

LeakResult find_leaks(const Context& ctx, const snapshot::Device& d, const Replay& replay, const Iterations& it) {
  LeakResult out;
  const auto& bounds = it.boundaries;
  if (it.count >= 4) out.growing = growing_sites(ctx, replay, bounds);
  if (!leaks_judged(it)) return out;
  const size_t judged = bounds.size() - 1;  // iterations 0 .. K-2; the last may be incomplete

  std::vector<Retained> kept = retained(ctx, replay, bounds, judged);
  auto live = live_by_site(ctx, d);

  struct SiteFacts {
    size_t leak;
    bool tiny, forward;
  };
  std::vector<SiteFacts> facts;
  for (size_t i = 0; i < kept.size();) {
    size_t j = i;
    while (j < kept.size() && kept[j].site == kept[i].site) ++j;
    // iterations with retained allocations, in order (kept is in event order within a site)
    size_t first = judged, last = 0, n = 0;
    uint32_t prev = UINT32_MAX;
    uint64_t bytes = 0, count = 0, tiny = 0;
    std::map<uint32_t, uint64_t> stacks;  // stack -> retained allocations
    for (size_t k = i; k < j; ++k) {
      const Retained& r = kept[k];
      if (r.iteration != prev) {
        ++n;
        prev = r.iteration;
      }
      first = std::min<size_t>(first, r.iteration);
      last = std::max<size_t>(last, r.iteration);
      bytes += r.bytes;
      count += 1;
      tiny += r.tiny;
      stacks[r.stack.v] += 1;
    }
    uint32_t site = kept[i].site;
    i = j;
    if (n < 3 || last + 3 < judged || double(n) < 0.6 * double(last - first + 1)) continue;
    Leak lk;
    lk.site = ctx.sites.name(SiteId{site});
    auto common = std::max_element(stacks.begin(), stacks.end(), [](auto& a, auto& b) { return a.second < b.second; });
    lk.stack = ctx.sites.stack(StackId{common->first});
    double span = double(last - first + 1);
    lk.growth_bytes_per_iteration = double(bytes) / span;
    lk.growth_allocations_per_iteration = double(count) / span;
    lk.first_iteration = first;
    lk.last_iteration = last;
    lk.iterations_retained = n;
    lk.iterations_judged = judged;
    lk.tiny = tiny * 2 >= count;
    auto lv = live.find(site);
    if (lv != live.end()) lk.live_bytes = lv->second.first, lk.live_allocations = lv->second.second;
    bool forward = false;
    for (auto& [stk, c] : stacks) forward = forward || ctx.sites.traits(StackId{stk}).forward;
    facts.push_back({out.leaks.size(), lk.tiny, forward && !lk.tiny});
    out.leaks.push_back(std::move(lk));
  }
  bool tiny_site = false, forward_site = false;
  for (const auto& f : facts) tiny_site = tiny_site || f.tiny, forward_site = forward_site || f.forward;
  for (const auto& f : facts) {
    LeakPattern& p = out.leaks[f.leak].pattern;
    if (tiny_site && forward_site)
      p = LeakPattern::AutogradHistory;
    else if (!forward_site && (!tiny_site || f.tiny))
      p = LeakPattern::TensorList;
    else
      p = LeakPattern::Unclassified;
  }
  std::sort(out.leaks.begin(), out.leaks.end(), [](const Leak& a, const Leak& b) {
    return a.growth_bytes_per_iteration != b.growth_bytes_per_iteration
               ? a.growth_bytes_per_iteration > b.growth_bytes_per_iteration
               : a.site < b.site;
  });
  return out;
}

}  // namespace memsnap::analysis
