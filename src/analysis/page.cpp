// The moments a report page holds, their segment maps, blocks and sites, and its flame trees.
#include "memsnap/analysis/page.hpp"

#include <algorithm>
#include <array>
#include <bit>

#include "memsnap/util/flat_map.hpp"

namespace memsnap::analysis {

using snapshot::Block;
using snapshot::BlockState;

const char* to_string(MapClass c) {
  switch (c) {
    case MapClass::Allocated: return "allocated";
    case MapClass::Pinning: return "pinning";
    case MapClass::Pending: return "pending";
    case MapClass::Free: return "free";
    case MapClass::Stranded: return "stranded";
    case MapClass::PrivateFree: return "private_free";
  }
  return "?";
}

const char* to_string(Moment m) {
  switch (m) {
    case Moment::Dump: return "dump";
    case Moment::Peak: return "peak";
    case Moment::Oom: return "oom";
    case Moment::Iteration: return "iteration";
    case Moment::Even: return "even";
  }
  return "?";
}

// ---- segment maps ---------------------------------------------------------------------

namespace {

MapClass classify(const Block& b, uint32_t index, bool private_pool, const Accounting& a) {
  switch (b.state) {
    case BlockState::ActiveAllocated: return a.block_stranded[index] ? MapClass::Pinning : MapClass::Allocated;
    case BlockState::ActivePendingFree: return MapClass::Pending;
    case BlockState::Inactive: break;
  }
  if (private_pool) return MapClass::PrivateFree;
  return a.free_stranded[index] ? MapClass::Stranded : MapClass::Free;
}

// The runs of the kept segments with blocks below `merge_below` joined to the run they fall in.
void build_runs(const snapshot::Device& d, const Accounting& a, const std::vector<uint32_t>& kept, uint64_t merge_below,
                SegmentMap& map) {
  map.runs.clear();
  map.segments.clear();
  for (uint32_t si : kept) {
    const snapshot::Segment& s = d.segments[si];
    MapSegment ms;
    ms.address = s.address;
    ms.size = s.total_size;
    ms.stream = s.stream;
    ms.pool = s.pool;
    ms.expandable = s.expandable;
    ms.private_pool = s.pool_id[0] != 0 || s.pool_id[1] != 0;
    ms.stranded_bytes = a.segments[si].stranded_bytes;
    ms.first_run = static_cast<uint32_t>(map.runs.size());
    std::array<uint64_t, 6> tally{};
    bool open = false;
    MapRun run;
    auto close = [&] {
      if (!open) return;
      run.cls = static_cast<MapClass>(std::max_element(tally.begin(), tally.end()) - tally.begin());
      map.runs.push_back(run);
      tally.fill(0);
      open = false;
    };
    uint64_t pos = 0;
    for (uint32_t k = 0; k < s.block_count; ++k) {
      uint32_t bi = s.first_block + k;
      const Block& b = d.blocks[bi];
      MapClass c = classify(b, bi, ms.private_pool, a);
      if (b.state == BlockState::ActiveAllocated) ms.allocated_bytes += b.size;
      if (open && (b.size < merge_below || run.cls == c)) {
        run.bytes += b.size;
        run.blocks += 1;
      } else {
        close();
        run = MapRun{pos, b.size, c, 1};
        open = true;
      }
      tally[static_cast<size_t>(c)] += b.size;
      pos += b.size;
    }
    close();
    ms.runs = static_cast<uint32_t>(map.runs.size()) - ms.first_run;
    map.segments.push_back(ms);
  }
  map.merge_below = merge_below;
}

}  // namespace

SegmentMap segment_map(const snapshot::Device& d, const Accounting& a, size_t max_runs, size_t max_segments) {
  SegmentMap map;
  std::vector<uint32_t> kept(d.segments.size());
  for (uint32_t i = 0; i < kept.size(); ++i) kept[i] = i;
  max_segments = std::max<size_t>(max_segments, 1);
  if (kept.size() > max_segments) {
    std::nth_element(kept.begin(), kept.begin() + static_cast<ptrdiff_t>(max_segments), kept.end(),
                     [&](uint32_t x, uint32_t y) {
                       const auto &p = d.segments[x], &q = d.segments[y];
                       return p.total_size != q.total_size ? p.total_size > q.total_size : p.address < q.address;
                     });
    for (size_t k = max_segments; k < kept.size(); ++k) {
      map.segments_left_out += 1;
      map.bytes_left_out += d.segments[kept[k]].total_size;
    }
    kept.resize(max_segments);
  }
  std::sort(kept.begin(), kept.end(), [&](uint32_t x, uint32_t y) {
    return d.segments[x].address != d.segments[y].address ? d.segments[x].address < d.segments[y].address : x < y;
  });
  uint64_t reserved = 0;
  for (uint32_t si : kept) reserved += d.segments[si].total_size;
  // Exact first; then the smallest power of two that brings the runs under the bound. A
  // threshold above every block leaves one run a segment, and there are fewer segments.
  max_runs = std::max(max_runs, kept.size());
  uint64_t threshold = 0;
  for (int round = 0; round < 70; ++round) {
    build_runs(d, a, kept, threshold, map);
    if (map.runs.size() <= max_runs) break;
    uint64_t next = std::bit_ceil(std::max<uint64_t>(reserved / max_runs, 1));
    threshold = threshold == 0 ? next : (threshold > (UINT64_MAX >> 1) ? UINT64_MAX : threshold * 2);
  }
  return map;
}

// ---- flame trees ----------------------------------------------------------------------

size_t prune_flame(FlameTree& t, size_t max_nodes) {
  const size_t n = t.nodes.size();
  if (n <= std::max<size_t>(max_nodes, 1)) return 0;
  // The widest max_nodes nodes stay; a node is never wider than its parent, so the kept
  // set is closed under parents except for ties, which the order by index settles.
  std::vector<uint32_t> order(n);
  for (uint32_t i = 0; i < n; ++i) order[i] = i;
  std::nth_element(order.begin(), order.begin() + static_cast<ptrdiff_t>(max_nodes - 1), order.end(),
                   [&](uint32_t x, uint32_t y) {
                     return t.nodes[x].width != t.nodes[y].width ? t.nodes[x].width > t.nodes[y].width : x < y;
                   });
  const FlameNode& cut = t.nodes[order[max_nodes - 1]];
  auto wider = [&](uint32_t i) {  // in the kept set: wider than the cut, or as wide and not later
    return t.nodes[i].width != cut.width ? t.nodes[i].width > cut.width : i <= order[max_nodes - 1];
  };
  std::vector<uint32_t> new_index(n, UINT32_MAX);
  std::vector<FlameNode> nodes;
  for (uint32_t i = 0; i < n; ++i) {
    bool keep = i == 0 || (wider(i) && new_index[t.nodes[i].parent] != UINT32_MAX);
    if (!keep) {
      i += t.subtree_size[i] - 1;  // the whole subtree goes
      continue;
    }
    FlameNode node = t.nodes[i];
    node.parent = i == 0 ? 0 : new_index[node.parent];
    new_index[i] = static_cast<uint32_t>(nodes.size());
    nodes.push_back(node);
  }
  // Subtree sizes and self bytes of the pre-order sequence that is left.
  std::vector<uint32_t> sizes(nodes.size(), 1);
  for (size_t i = nodes.size(); i-- > 1;) sizes[nodes[i].parent] += sizes[i];
  std::vector<uint64_t> child_bytes(nodes.size(), 0);
  for (size_t i = 1; i < nodes.size(); ++i) child_bytes[nodes[i].parent] += nodes[i].bytes;
  for (size_t i = 0; i < nodes.size(); ++i)
    nodes[i].self_bytes = nodes[i].bytes > child_bytes[i] ? nodes[i].bytes - child_bytes[i] : 0;
  uint32_t depth = 0;
  for (const auto& node : nodes) depth = std::max(depth, node.depth);
  // Only the frames a kept node names stay, so the frame table is bounded by the nodes: a tree
  // of 150,000 distinct frames pruned to a few thousand nodes kept every frame's text (issue 38).
  std::vector<uint32_t> frame_index(t.frames.size(), UINT32_MAX);
  std::vector<ProfileFrame> frames;
  for (size_t i = 1; i < nodes.size(); ++i) {
    uint32_t& f = frame_index[nodes[i].frame];
    if (f == UINT32_MAX) {
      f = static_cast<uint32_t>(frames.size());
      frames.push_back(t.frames[nodes[i].frame]);
    }
    nodes[i].frame = f;
  }
  size_t left_out = n - nodes.size();
  t.frames = std::move(frames);
  t.nodes = std::move(nodes);
  t.subtree_size = std::move(sizes);
  t.max_depth = depth;
  return left_out;
}

// ---- the moments ------------------------------------------------------------------------

namespace {

struct Wanted {
  uint32_t event;
  Moment moment;
  uint64_t iteration;
};

// Which moment names an event when several do: the peak, then an OOM, an iteration start.
int rank(Moment m) {
  switch (m) {
    case Moment::Peak: return 0;
    case Moment::Oom: return 1;
    case Moment::Iteration: return 2;
    default: return 3;
  }
}

// A main moment (the dump, the peak, the last OOM) gets `top_blocks` blocks and its pinning
// sites; the others `other_blocks` and none.
PageState describe(const Context& ctx, const snapshot::Device& d, bool main, const PageOptions& o) {
  const size_t top_blocks = main ? o.top_blocks : o.other_blocks, top_sites = o.top_sites;
  PageState s;
  Accounting a = account(ctx, d);
  s.reserved_bytes = a.reserved_bytes;
  s.allocated_bytes = a.allocated_bytes;
  s.active_bytes = a.active_bytes;
  s.requested_bytes = a.requested_bytes;
  s.segments = a.segment_count;
  s.blocks = a.block_count;
  s.stranded_bytes = a.stranded_bytes;
  s.largest_free_block_bytes = a.largest_free_block_bytes;
  s.map = segment_map(d, a, o.map_runs, o.map_segments);

  std::vector<uint32_t> live;
  for (uint32_t i = 0; i < d.blocks.size(); ++i)
    if (d.blocks[i].is_active()) live.push_back(i);
  s.live_blocks = live.size();
  auto larger = [&](uint32_t x, uint32_t y) {
    const Block &p = d.blocks[x], &q = d.blocks[y];
    return p.size != q.size ? p.size > q.size : p.address < q.address;
  };
  size_t k = std::min(top_blocks, live.size());
  std::partial_sort(live.begin(), live.begin() + static_cast<ptrdiff_t>(k), live.end(), larger);
  for (size_t i = 0; i < k; ++i) {
    const Block& b = d.blocks[live[i]];
    s.largest.push_back(
        {b.address, b.size, std::min(b.requested_size, b.size), b.state, b.stack, a.block_stranded[live[i]]});
  }

  FlatMap64<uint32_t> index;  // site id -> into sites
  std::vector<PageSite> sites;
  std::vector<uint64_t> largest;
  for (const Block& b : d.blocks) {
    if (b.state != BlockState::ActiveAllocated) continue;
    SiteId id = ctx.sites.site_of(b.stack);
    auto [slot, inserted] = index.try_emplace(id.v, static_cast<uint32_t>(sites.size()));
    if (inserted) {
      sites.push_back({id, 0, 0, b.stack});
      largest.push_back(0);
    }
    PageSite& p = sites[*slot];
    p.bytes += b.size;
    p.blocks += 1;
    if (b.size > largest[*slot]) largest[*slot] = b.size, p.stack = b.stack;
  }
  auto more = [&](const PageSite& x, const PageSite& y) {
    return x.bytes != y.bytes ? x.bytes > y.bytes : ctx.sites.name(x.site) < ctx.sites.name(y.site);
  };
  size_t m = std::min(top_sites, sites.size());
  std::partial_sort(sites.begin(), sites.begin() + static_cast<ptrdiff_t>(m), sites.end(), more);
  sites.resize(m);
  s.sites = std::move(sites);
  if (main) {
    a.pinning_sites.resize(std::min<size_t>(a.pinning_sites.size(), top_sites));
    s.pinning_sites = std::move(a.pinning_sites);
  }
  return s;
}

void add_flame(const Context& ctx, const snapshot::Device& d, Moment m, std::optional<uint32_t> event, size_t max_nodes,
               std::vector<PageFlame>& out) {
  PageFlame f;
  f.moment = m;
  f.event = event;
  StackOptions o;
  o.code = ctx.sites.rules();
  f.tree = flame_tree(stack_profile(ctx.snap, d, o, &ctx.sites.classifier()));
  f.nodes_left_out = prune_flame(f.tree, max_nodes);
  out.push_back(std::move(f));
}

}  // namespace

DevicePage build_page(const Context& ctx, const snapshot::Device& dumped, const Replay* replay,
                      const std::optional<Timeline>& timeline, const Iterations& iterations, const PageOptions& o) {
  DevicePage page;
  const auto& trace = dumped.trace;
  page.trace_events = trace.size();
  if (timeline)
    for (const auto& p : timeline->points) page.point_events.push_back(trace[p.event_index]);

  std::vector<Wanted> wanted;
  std::optional<uint32_t> peak_event, oom_event;
  if (replay && !trace.empty()) {
    const uint32_t n = static_cast<uint32_t>(trace.size());
    if (replay->peak_allocated()) {
      peak_event = replay->peak_allocated()->event;
      wanted.push_back({*peak_event, Moment::Peak, 0});
    }
    const auto& ooms = replay->ooms();
    for (size_t k = 0; k < ooms.size(); ++k)
      if (k + 1 < o.oom_states || k + 1 == ooms.size()) wanted.push_back({ooms[k].event, Moment::Oom, 0});
    if (!ooms.empty()) oom_event = ooms.back().event;
    const auto& b = iterations.boundaries;
    const size_t ni = std::min(o.iteration_states, b.size());
    for (size_t k = 0; k < ni; ++k) {
      size_t at = ni == 1 ? 0 : k * (b.size() - 1) / (ni - 1);
      if (b[at] < n) wanted.push_back({b[at], Moment::Iteration, at + 1});
    }
    const size_t ne = std::min<size_t>(o.even_states, n);
    for (size_t k = 0; k < ne; ++k)
      wanted.push_back({static_cast<uint32_t>(ne == 1 ? n - 1 : k * uint64_t(n - 1) / (ne - 1)), Moment::Even, 0});
    std::sort(wanted.begin(), wanted.end(), [](const Wanted& x, const Wanted& y) {
      return x.event != y.event ? x.event < y.event : rank(x.moment) < rank(y.moment);
    });
    wanted.erase(
        std::unique(wanted.begin(), wanted.end(), [](const Wanted& x, const Wanted& y) { return x.event == y.event; }),
        wanted.end());
  }

  std::optional<snapshot::Device> at_peak, at_oom;
  for (const Wanted& w : wanted) {
    ReplayedState st = replay->state_after(w.event);
    bool main_moment = w.event == peak_event || w.event == oom_event;
    PageState s = describe(ctx, st.device, main_moment, o);
    s.moment = w.moment;
    s.event = w.event;
    if (trace[w.event].has_time()) s.time_us = trace[w.event].time_us;
    s.iteration = w.iteration;
    s.estimated_blocks = st.estimated_blocks;
    s.size_uncertainty = st.size_uncertainty;
    page.states.push_back(std::move(s));
    if (w.event == peak_event && w.event == oom_event) at_peak = st.device;
    if (w.event == oom_event)
      at_oom = std::move(st.device);
    else if (w.event == peak_event)
      at_peak = std::move(st.device);
  }
  page.states.push_back(describe(ctx, dumped, true, o));

  add_flame(ctx, dumped, Moment::Dump, std::nullopt, o.flame_nodes, page.flames);
  if (at_peak) add_flame(ctx, *at_peak, Moment::Peak, peak_event, o.flame_nodes, page.flames);
  if (at_oom) add_flame(ctx, *at_oom, Moment::Oom, oom_event, o.flame_nodes, page.flames);
  return page;
}

}  // namespace memsnap::analysis
