// The recorded request sequence through the allocator model (see simulate.hpp).
#include "memsnap/analysis/simulate.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "memsnap/analysis/churn.hpp"
#include "memsnap/analysis/phases.hpp"
#include "memsnap/util/error.hpp"
#include "memsnap/util/flat_map.hpp"
#include "memsnap/util/units.hpp"

namespace memsnap::analysis {

using snapshot::Action;

namespace {

bool frees_segment(Action a) {
  return a == Action::SegmentFree || a == Action::SegmentUnmap;
}
bool maps_segment(Action a) {
  return a == Action::SegmentAlloc || a == Action::SegmentMap;
}

// Free bytes empty_cache() cannot return, in a device state: inside segments that also hold
// live blocks; in an expandable range, the free bytes outside whole pages (release_cached
// unmaps every whole free page, the range's live blocks or not).
uint64_t stranded(const snapshot::Device& d) {
  uint64_t out = 0;
  for (const auto& s : d.segments) {
    uint64_t active = 0, free = 0;
    const uint64_t page = s.pool == snapshot::Pool::Small ? rules::kSmallBuffer : rules::kLargeBuffer;
    for (const auto& b : d.blocks_of(s)) {
      if (b.is_active()) {
        active += b.size;
      } else if (s.expandable) {
        const uint64_t lo = (b.address - s.address + page - 1) / page * page,
                       hi = (b.address + b.size - s.address) / page * page;
        out += b.size - (hi > lo ? hi - lo : 0);
      } else {
        free += b.size;
      }
    }
    if (active) out += free;
  }
  return out;
}

// The device's size over the run, in steps from an event on. A size is known (an OOM's
// device_free plus what PyTorch held then, or --capacity) or only a lower bound (what the
// recorded run itself held): a run that needs more than a lower bound is not out of memory,
// it needs more than the trace shows the device had (SimNeed).
struct CapacityStep {
  uint32_t from = 0;
  uint64_t capacity = UINT64_MAX;
  bool lower_bound = false;
};
using CapacityPlan = std::vector<CapacityStep>;

CapacityPlan constant(std::optional<uint64_t> c) {
  return {{0, c.value_or(UINT64_MAX), false}};
}

// The device as the recorded run saw it: at each OOM what it held plus what
// cudaMemGetInfo said was free, known from there back to where the run held more (then
// what it held from there to the OOM, a lower bound); after the last OOM, no limit (the
// run went on). Memory outside the allocator (other processes, a shrinking budget) makes
// this change over time, and a constant would fail the recorded run earlier than it failed.
CapacityPlan recorded_plan(const Replay& replay) {
  const auto& trace = replay.device().trace;
  uint64_t reserved = 0;  // after the event, walking backwards from the dump
  for (const auto& s : replay.device().segments) reserved += s.total_size;
  CapacityPlan rev;
  std::optional<uint64_t> bound;  // the next OOM's capacity
  uint64_t suffix = 0;            // the most reserved from here to that OOM
  for (size_t k = trace.size(); k-- > 0;) {
    const Action a = trace.action_at(k);
    if (a == Action::Oom) {
      const uint64_t free = trace[k].device_free();
      bound = free > UINT64_MAX - 1 - reserved ? UINT64_MAX - 1 : reserved + free;
      suffix = 0;
    }
    suffix = std::max(suffix, reserved);
    const CapacityStep step{static_cast<uint32_t>(k), bound ? std::max(*bound, suffix) : UINT64_MAX,
                            bound && suffix > *bound};
    if (rev.empty() || rev.back().capacity != step.capacity || rev.back().lower_bound != step.lower_bound)
      rev.push_back(step);
    else
      rev.back().from = step.from;
    if (maps_segment(a)) reserved -= std::min(reserved, trace.size_at(k));
    if (frees_segment(a)) reserved += trace.size_at(k);
  }
  std::reverse(rev.begin(), rev.end());
  if (rev.empty()) rev.push_back({0, UINT64_MAX, false});
  rev.front().from = 0;
  // What was reserved when the window opened, the device held too.
  if (rev.front().capacity != UINT64_MAX && reserved > rev.front().capacity) rev.front() = {0, reserved, true};
  return rev;
}

// The recorded run's expandable mapped ranges (start -> end), followed through the trace's
// segment_map / segment_unmap: where an alloc sits within its range.
using Ranges = std::map<uint64_t, uint64_t>;

void map_range(Ranges& r, uint64_t a, uint64_t n) {
  uint64_t lo = a, hi = n > UINT64_MAX - a ? UINT64_MAX : a + n;
  auto it = r.lower_bound(a);
  if (it != r.begin())
    if (auto p = std::prev(it); p->second >= lo) {
      lo = p->first;
      hi = std::max(hi, p->second);
      r.erase(p);
    }
  while (it != r.end() && it->first <= hi) {
    hi = std::max(hi, it->second);
    it = r.erase(it);
  }
  r[lo] = hi;
}

void unmap_range(Ranges& r, uint64_t a, uint64_t n) {
  auto it = r.upper_bound(a);
  if (it == r.begin() || std::prev(it)->second <= a) return;
  --it;
  const uint64_t lo = it->first, hi = it->second, end = n > UINT64_MAX - a ? UINT64_MAX : a + n;
  r.erase(it);
  if (lo < a) r[lo] = a;
  if (end < hi) r[end] = hi;
}

// An alloc's place: its address, or (expandable) its offset within its mapped range.
struct Place {
  bool expandable = false;
  uint64_t at = 0;
  bool operator==(const Place&) const = default;
};

std::string place_text(const Place& p) {
  return p.expandable ? "offset " + hex(p.at) + " of an expandable range" : hex(p.at);
}

// What the fidelity run notes while it runs, to compare with the trace.
struct Probe {
  Ranges ranges;  // recorded
  uint64_t allocs_compared = 0, allocs_matching = 0;
  std::optional<uint32_t> first_alloc;
  std::string first_alloc_what;
  std::vector<uint32_t> segment_events;  // the event at which the model made each segment
};

struct RunSpec {
  std::string label;
  ModelSettings settings;
  bool role_edits = false;  // applies the --scale / --drop edits
};

// The role of every block the runs allocate, and the edits by role (SimRoleView: a unity build
// shares this namespace with the other analyses).
struct SimRoleView {
  std::vector<RoleId> event_role;  // per trace event: the role of the block an alloc makes
  std::vector<RoleId> start_role;  // per range live when the window opens
  std::vector<double> factor;      // per role id: 1 unchanged, 0 dropped, else scaled
  uint32_t peak_event = kNever;    // the recorded peak allocated (kWindowStart: the start state)
};

// A request F times as large, at least one byte (the model rounds it as the allocator does).
uint64_t sim_scaled_request(uint64_t requested, double f) {
  const long double v = std::ceil(static_cast<long double>(requested) * static_cast<long double>(f));
  return v < 1 ? 1 : static_cast<uint64_t>(v);
}

class Runner {
 public:
  Runner(const Context& ctx, const Replay& replay, const std::vector<FreeBurst>& bursts, bool mirror_retries,
         const SimRoleView* roles = nullptr)
      : ctx_(ctx), replay_(replay), bursts_(bursts), mirror_retries_(mirror_retries), roles_(roles) {}

  SimRun run(const RunSpec& spec, const CapacityPlan& plan, bool stop_at_oom = false, Probe* probe = nullptr) const {
    SimRun out;
    out.label = spec.label;
    out.settings = spec.settings;
    out.role_edited = roles_ && spec.role_edits;
    // Allocated bytes by role (with roles): each live block's role is its tag in the model.
    std::vector<uint64_t> by_role(roles_ ? roles_->factor.size() : 0, 0);
    auto factor_of = [&](RoleId role) { return out.role_edited ? roles_->factor[role] : 1.0; };
    auto tag = [&](AllocatorModel& model, uint64_t addr, RoleId role) {
      if (!roles_) return;
      ModelBlock* b = model.block_at(addr);
      if (!b || b->state != ModelState::Allocated) return;
      b->tag = role;
      by_role[role] += b->size;
    };
    auto untag = [&](const AllocatorModel& model, uint64_t addr) {
      if (!roles_) return;
      const ModelBlock* b = model.block(addr);
      if (b && b->state == ModelState::Allocated && b->tag < by_role.size()) by_role[b->tag] -= b->size;
    };
    out.capacity = plan_capacity(plan);
    AllocatorModel m(spec.settings, true);  // no limit while the start state is seeded
    // New segments go where the recorded run put them while the sizes agree: ties in best
    // fit (lowest address) break as they did, and a --set equal to the recorded settings
    // is the recorded run.
    m.set_segment_hints(segment_hints());
    size_t next_step = 1;
    FlatMap64<uint64_t> live;  // recorded address -> simulated address
    out.start_blocks_moved = seed(m, live, spec, factor_of, tag);
    if (roles_) out.peak_allocated_by_role = by_role;
    if (roles_ && roles_->peak_event == kWindowStart) out.by_role_at_recorded_peak = by_role;
    m.set_capacity(plan.front().capacity, plan.front().lower_bound);
    auto observe = [&] {
      const ModelTotals& t = m.totals();
      // The model notes the state when a segment takes reserved memory to a new high
      // (before the request that needed it takes its block), as the trace's segment_alloc is.
      if (m.peak_reserved() > out.peak_reserved) {
        out.peak_reserved = m.peak_reserved();
        out.stranded_at_peak = m.stranded_at_peak();
      }
      if (t.allocated > out.peak_allocated) {
        out.peak_allocated = t.allocated;
        if (roles_) out.peak_allocated_by_role = by_role;
      }
    };
    observe();
    // The start state counts against the device: one that does not fit is an OOM before the
    // first event, and the run stops there (every later figure would be of a device that
    // cannot exist).
    if (!plan.front().lower_bound && m.totals().reserved > plan.front().capacity) {
      out.oom = SimOom{0, m.totals().reserved, "the state alive when the window opens", true};
      out.ooms = 1;
      finish(out, m);
      out.peak_reserved = out.peak_allocated = out.stranded_at_peak = 0;  // nothing ran
      out.fragmentation_at_peak = 0;
      return out;
    }
    const auto& trace = replay_.device().trace;
    const uint32_t n = static_cast<uint32_t>(trace.size());
    size_t burst = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const Action a = trace.action_at(i);
      while (next_step < plan.size() && plan[next_step].from <= i) {
        m.set_capacity(plan[next_step].capacity, plan[next_step].lower_bound);
        ++next_step;
      }
      switch (a) {
        case Action::Oom:  // the request that failed: if it fits here, its block stays (the run goes on holding it)
        case Action::Alloc: {
          const RoleId role = roles_ && a == Action::Alloc ? roles_->event_role[i] : RoleId(Role::Unknown);
          const double f = a == Action::Alloc ? factor_of(role) : 1.0;
          if (f == 0) break;  // dropped: its alloc and its frees vanish (no live entry)
          auto r =
              m.malloc_simulated(f == 1 ? trace.size_at(i) : sim_scaled_request(trace.size_at(i), f), trace[i].stream);
          if (probe && a == Action::Alloc) compare_alloc(*probe, m, i, r.addr);
          out.unplaced += r.unplaced;
          if (!r.addr) {
            if (!out.oom) out.oom = SimOom{i, r.rounded, ctx_.sites.name(ctx_.sites.site_of(trace.stack_at(i)))};
            ++out.ooms;
            if (stop_at_oom) return finish(out, m);
          } else if (a == Action::Alloc) {
            if (auto [slot, added] = live.try_emplace(trace.addr_at(i), *r.addr); !added) *slot = *r.addr;
            tag(m, *r.addr, role);
          } else {
            tag(m, *r.addr, RoleId(Role::Unknown));  // a failed request served here: no block of the trace
          }
          break;
        }
        case Action::FreeRequested:
          if (const uint64_t* sim = live.find(trace.addr_at(i))) {
            untag(m, *sim);
            m.free_requested(*sim);
          }
          break;
        case Action::FreeCompleted:
        case Action::Free:
          if (uint64_t* sim = live.find(trace.addr_at(i))) {
            untag(m, *sim);
            m.free_completed(*sim);
            live.erase_found(sim);
          }
          break;
        default:
          if (probe && a == Action::SegmentMap) map_range(probe->ranges, trace.addr_at(i), trace.size_at(i));
          if (probe && a == Action::SegmentUnmap) unmap_range(probe->ranges, trace.addr_at(i), trace.size_at(i));
          if (frees_segment(a)) {
            while (burst < bursts_.size() && bursts_[burst].last < i) ++burst;
            // A recorded flush the model would not make itself: an explicit empty_cache(), or a
            // retry when the device's size is not known (the model cannot run out then).
            if (burst < bursts_.size() && bursts_[burst].first == i && (!bursts_[burst].retry || mirror_retries_))
              m.empty_cache(bursts_[burst].retry);
          }
          break;
      }
      // Where the recorded run ran out, the device's size is known: a run that holds more once
      // this request is done (it may have flushed its cache for it, as the recorded run did)
      // gives back what it caches; what it cannot is an OOM here.
      if (const CapacityStep& step = plan[next_step - 1];
          a == Action::Oom && !step.lower_bound && m.totals().reserved > step.capacity) {
        m.empty_cache();
        if (m.totals().reserved > step.capacity) {
          if (!out.oom)
            out.oom = SimOom{i, m.totals().reserved, "memory held when the device's size is known", false, true};
          ++out.ooms;
          if (stop_at_oom) return finish(out, m);
        }
      }
      if (!replay_.ooms().empty() && i == replay_.ooms().front().event)
        out.reserved_at_recorded_oom = m.totals().reserved;
      if (m.take_lower_bound_exceeded() && !out.need)
        out.need = SimNeed{i, m.totals().reserved, plan[next_step - 1].capacity};
      if (probe)
        while (probe->segment_events.size() < m.segment_sizes().size()) probe->segment_events.push_back(i);
      observe();
      if (roles_ && i == roles_->peak_event) out.by_role_at_recorded_peak = by_role;
    }
    return finish(out, m);
  }

 private:
  // The alloc at event i: served at `got` by the model, at the trace's address in the recorded run.
  void compare_alloc(Probe& probe, const AllocatorModel& m, uint32_t i, std::optional<uint64_t> got) const {
    const auto& trace = replay_.device().trace;
    const uint64_t addr = trace.addr_at(i);
    Place recorded{false, addr};
    if (auto it = probe.ranges.upper_bound(addr); it != probe.ranges.begin() && std::prev(it)->second > addr)
      recorded = {true, addr - std::prev(it)->first};
    std::optional<Place> simulated;
    if (got) {
      const ModelBlock* b = m.block(*got);
      simulated = b && b->expandable ? Place{true, *got - b->segment} : Place{false, *got};
    }
    ++probe.allocs_compared;
    if (simulated && *simulated == recorded) {
      ++probe.allocs_matching;
      return;
    }
    if (probe.first_alloc) return;
    probe.first_alloc = i;
    probe.first_alloc_what = "the alloc of " + human_bytes(trace.size_at(i)) +
                             (simulated ? " lands at " + place_text(*simulated) : std::string(" fails")) +
                             ", recorded at " + place_text(recorded);
  }

  std::vector<std::pair<uint64_t, uint64_t>> segment_hints() const {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    const auto& trace = replay_.device().trace;
    for (size_t i = 0; i < trace.size(); ++i)
      if (trace.action_at(i) == Action::SegmentAlloc) out.emplace_back(trace.size_at(i), trace.addr_at(i));
    return out;
  }
  // The capacity a plan is known by: at the first OOM, or the constant.
  static std::optional<uint64_t> plan_capacity(const CapacityPlan& plan) {
    uint64_t c = UINT64_MAX;
    for (const CapacityStep& step : plan)
      if (!step.lower_bound) c = std::min(c, step.capacity);
    return c == UINT64_MAX ? std::nullopt : std::optional<uint64_t>(c);
  }
  SimRun& finish(SimRun& out, const AllocatorModel& m) const {
    out.segment_allocs = m.counters().segment_allocs;
    out.segment_frees = m.counters().segment_frees;
    out.retries = m.counters().retries;
    out.fragmentation_at_peak = out.peak_reserved ? double(out.stranded_at_peak) / double(out.peak_reserved) : 0;
    last_segments_ = m.segment_sizes();
    return out;
  }

  // The state alive when the window opens, where the trace says it was: segments, then each
  // live block inside its segment. A block that cannot go there (a trace the replay could not
  // follow) is allocated by the model, never dropped; returns how many were.
  template <class FactorOf, class Tag>
  uint64_t seed(AllocatorModel& m, FlatMap64<uint64_t>& live, const RunSpec& spec, FactorOf factor_of, Tag tag) const {
    ReplayedState start = replay_.state_at_start();
    for (const auto& seg : start.device.segments)
      m.add_segment(seg.address, seg.total_size,
                    PoolKey{seg.stream, seg.pool == snapshot::Pool::Small, seg.pool_id[0], seg.pool_id[1]},
                    seg.expandable);
    uint64_t moved = 0;
    const uint32_t n = replay_.first_window_range();
    for (uint32_t id = 0; id < n; ++id) {
      const LiveRange r = replay_.range(id);
      const ModelState state = r.pending_at_start ? ModelState::Pending : ModelState::Allocated;
      const RoleId role = roles_ ? roles_->start_role[id] : RoleId(Role::Unknown);
      const double f = factor_of(role);
      if (f == 0) continue;  // dropped: never placed, its frees vanish
      // Scaled: its request F times as large, rounded as the allocator rounds it, in its place.
      const snapshot::AllocatorSettings rounding = spec.settings.as_allocator_settings();
      const uint64_t size = f == 1 ? r.size : rules::round_size(sim_scaled_request(r.requested, f), rounding);
      if (m.place(r.addr, size, state)) {
        live.try_emplace(r.addr, r.addr);
        tag(m, r.addr, role);
        continue;
      }
      ++moved;
      auto got = m.malloc_simulated(f == 1 ? r.size : size, stream_at(start.device, r.addr));
      if (!got.addr) continue;  // not even without a limit: an impossible size, counted as moved
      live.try_emplace(r.addr, *got.addr);
      if (r.pending_at_start)
        m.free_requested(*got.addr);
      else
        tag(m, *got.addr, role);
    }
    return moved;
  }
  // The stream of the segment holding addr (segments are in address order), else 0.
  static uint64_t stream_at(const snapshot::Device& d, uint64_t addr) {
    auto it = std::upper_bound(d.segments.begin(), d.segments.end(), addr,
                               [](uint64_t a, const snapshot::Segment& seg) { return a < seg.address; });
    if (it == d.segments.begin()) return 0;
    --it;
    return addr - it->address < it->total_size ? it->stream : 0;
  }

  const Context& ctx_;
  const Replay& replay_;
  const std::vector<FreeBurst>& bursts_;
  bool mirror_retries_;
  const SimRoleView* roles_;

 public:
  mutable std::vector<uint64_t> last_segments_;
};

// The smallest capacity (in 2 MiB steps) on which the run does not fail, by bisection
// between nothing and the peak reserved with no limit (on which it cannot fail).
std::optional<uint64_t> min_capacity(const Runner& runner, const RunSpec& spec) {
  SimRun unlimited = runner.run(spec, constant(std::nullopt));
  if (unlimited.oom) return std::nullopt;
  const uint64_t step = rules::kSmallBuffer;
  uint64_t lo = 0, hi = (unlimited.peak_reserved + step - 1) / step;  // in steps: hi fits, lo does not
  if (hi == 0) return 0;
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (runner.run(spec, constant(mid * step), true).oom)
      lo = mid;
    else
      hi = mid;
  }
  return hi * step;
}

}  // namespace

std::vector<FreeBurst> free_bursts(const snapshot::Snapshot& snap, const snapshot::Trace& trace) {
  std::vector<FreeBurst> out;
  const uint32_t n = static_cast<uint32_t>(trace.size());
  for (uint32_t i = 0; i < n;) {
    if (!frees_segment(trace.action_at(i))) {
      ++i;
      continue;
    }
    FreeBurst b;
    b.first = i;
    for (; i < n && frees_segment(trace.action_at(i)); ++i) {
      b.bytes += trace.size_at(i);
      // torch.cuda.empty_cache() on the stack: the program's own call, never a retry, even
      // when the next request maps memory again.
      b.explicit_call = b.explicit_call || empty_cache_stack(snap, trace.stack_at(i));
    }
    b.last = i - 1;
    // A flush followed by a new segment (the retried cudaMalloc) or by the OOM (the retry failed).
    b.retry = !b.explicit_call && i < n && (maps_segment(trace.action_at(i)) || trace.action_at(i) == Action::Oom);
    out.push_back(b);
  }
  return out;
}

namespace {

// The runs to simulate: the recorded settings first, then one per --set.
std::vector<RunSpec> run_specs(const SimulateOptions& options, const ModelSettings& recorded_settings) {
  std::vector<RunSpec> specs{{"as recorded", recorded_settings}};
  for (const auto& set : options.sets) {
    RunSpec spec{set, recorded_settings};
    // One --set may hold several settings separated by commas, as PYTORCH_CUDA_ALLOC_CONF does.
    // Commas inside brackets belong to a list value (roundup_power2_divisions:[256:1,512:2]).
    auto next_comma = [&](size_t from) {
      int depth = 0;
      for (size_t i = from; i < set.size(); ++i) {
        depth += set[i] == '[' ? 1 : set[i] == ']' ? -1 : 0;
        if (set[i] == ',' && depth <= 0) return i;
      }
      return std::string::npos;
    };
    size_t from = 0;
    while (from <= set.size()) {
      size_t comma = next_comma(from);
      std::string one = set.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
      if (auto problem = apply_setting(spec.settings, one)) throw UsageError("--set " + set + ": " + *problem);
      if (comma == std::string::npos) break;
      from = comma + 1;
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

// The roles of the blocks the runs allocate, and the factor of each edited role; checks the
// edits' role names against the roles there are (built-in and --role names).
SimRoleView sim_role_view(const Context& ctx, const Replay& replay, const SimulateOptions& options, Simulation& sim) {
  RoleTable table(ctx, options.roles);
  const Phases phases(ctx, table.stacks(), replay.device(), &replay);
  const BlockRoles roles(table, replay, phases);
  SimRoleView view;
  view.factor.assign(table.size(), 1.0);
  sim.role_names = table.names();
  std::vector<bool> seen(table.size(), false);
  for (const RoleEdit& e : options.role_edits) {
    auto it = std::find(table.names().begin(), table.names().end(), e.role);
    if (it == table.names().end()) {
      std::string known;
      for (int r = 0; r < kBuiltinRoles; ++r) known += std::string(r ? ", " : "") + to_string(Role(r));
      throw UsageError(e.text + ": not a role (the roles: " + known + ", or a --role NAME)");
    }
    const size_t id = static_cast<size_t>(it - table.names().begin());
    if (seen[id]) throw UsageError(e.text + ": the role '" + e.role + "' is scaled or dropped twice");
    seen[id] = true;
    view.factor[id] = e.factor;
    sim.role_edits.push_back({e, 0, 0, 0, 0, 0});
  }
  const auto& trace = replay.device().trace;
  const uint32_t first = replay.first_window_range(), n = static_cast<uint32_t>(replay.ranges().size());
  if (replay.allocated_peak_at_window_start())
    view.peak_event = kWindowStart;
  else if (replay.peak_allocated())
    view.peak_event = replay.peak_allocated()->event;
  view.event_role.assign(trace.size(), RoleId(Role::Unknown));
  view.start_role.assign(first, RoleId(Role::Unknown));
  std::vector<uint64_t> blocks(table.size(), 0), start_blocks(table.size(), 0);
  for (uint32_t id = 0; id < n; ++id) {
    const RoleId role = roles.of(id);
    ++blocks[role];
    if (id < first) ++start_blocks[role];
    if (id < first)
      view.start_role[id] = role;
    else if (const uint32_t b = replay.begin_of(id); b < trace.size() && trace.action_at(b) == Action::Alloc)
      view.event_role[b] = role;
  }
  for (RoleEditResult& r : sim.role_edits) {
    const size_t id =
        size_t(std::find(table.names().begin(), table.names().end(), r.edit.role) - table.names().begin());
    r.blocks = blocks[id];
    r.start_blocks = start_blocks[id];
  }
  return view;
}

// The fidelity run against the trace; the first divergence is the earliest event where an
// alloc lands elsewhere, a segment differs or an OOM happens in one run only.
Fidelity fidelity(const SimRun& rec, const SimRun& r, const std::vector<std::pair<uint32_t, uint64_t>>& recorded,
                  const std::vector<uint64_t>& got, const Probe& probe) {
  Fidelity f;
  f.segments_recorded = recorded.size();
  f.segments_simulated = got.size();
  while (f.segments_matching < std::min(got.size(), recorded.size()) &&
         got[f.segments_matching] == recorded[f.segments_matching].second)
    ++f.segments_matching;
  f.allocs_compared = probe.allocs_compared;
  f.allocs_matching = probe.allocs_matching;
  f.peak_reserved_equal = r.peak_reserved == rec.peak_reserved;
  f.peak_allocated_equal = r.peak_allocated == rec.peak_allocated;
  f.oom_equal = (!r.oom && !rec.oom) || (r.oom && rec.oom && r.oom->event_index == rec.oom->event_index &&
                                         r.oom->at_window_start == rec.oom->at_window_start);
  auto consider = [&](uint32_t event, std::string what) {
    if (!f.first_divergence_event || event < *f.first_divergence_event) {
      f.first_divergence_event = event;
      f.first_divergence = std::move(what);
    }
  };
  if (probe.first_alloc) consider(*probe.first_alloc, probe.first_alloc_what);
  if (const uint64_t k = f.segments_matching; k < std::max(got.size(), recorded.size())) {
    const std::string nth = "segment " + with_commas(k + 1);
    if (k < got.size() && k < recorded.size())
      consider(std::min(recorded[k].first, probe.segment_events.at(k)),
               nth + " is " + human_bytes(got[k]) + ", recorded " + human_bytes(recorded[k].second));
    else if (k < recorded.size())
      consider(recorded[k].first, nth + " (" + human_bytes(recorded[k].second) + ") is never made");
    else
      consider(probe.segment_events.at(k), nth + " (" + human_bytes(got[k]) + ") was not in the recorded run");
  }
  if (!f.oom_equal) {
    if (r.oom && (!rec.oom || r.oom->event_index < rec.oom->event_index))
      consider(r.oom->event_index, r.oom->at_window_start ? "the start state does not fit"
                                                          : "runs out of memory where the recorded run did not");
    else if (rec.oom)
      consider(rec.oom->event_index, "the recorded OOM does not happen");
  }
  if (!f.first_divergence_event) {
    if (!f.peak_reserved_equal)
      f.first_divergence =
          "peak reserved " + human_bytes(r.peak_reserved) + ", recorded " + human_bytes(rec.peak_reserved);
    else if (!f.peak_allocated_equal)
      f.first_divergence =
          "peak allocated " + human_bytes(r.peak_allocated) + ", recorded " + human_bytes(rec.peak_allocated);
  }
  return f;
}

}  // namespace

Simulation simulate(const Context& ctx, const Replay& replay, const SimulateOptions& options) {
  Simulation sim;
  const auto& d = replay.device();
  const auto& trace = d.trace;
  sim.device = d.index;
  sim.starts_mid_run = replay.window_starts_mid_run();
  sim.start_blocks = replay.first_window_range();
  sim.start_reserved = replay.start_totals().reserved;
  sim.start_allocated = replay.start_totals().allocated;
  for (const auto& seg : replay.state_at_start().device.segments) sim.start_segments += seg.total_size > 0;
  const ModelSettings recorded_settings = ModelSettings::from(ctx.snap.settings);

  const std::vector<RunSpec> specs = run_specs(options, recorded_settings);

  // The recorded run, read from the trace.
  SimRun& rec = sim.recorded;
  rec.label = "recorded";
  rec.settings = recorded_settings;
  if (const auto& p = replay.peak_reserved()) {
    rec.peak_reserved = replay.reserved_peak_at_window_start() ? replay.start_totals().reserved : p->totals.reserved;
    ReplayedState at = replay.reserved_peak_at_window_start() ? replay.state_at_start() : replay.state_after(p->event);
    rec.stranded_at_peak = stranded(at.device);
    rec.fragmentation_at_peak = rec.peak_reserved ? double(rec.stranded_at_peak) / double(rec.peak_reserved) : 0;
  }
  if (const auto& p = replay.peak_allocated())
    rec.peak_allocated =
        replay.allocated_peak_at_window_start() ? replay.start_totals().allocated : p->totals.allocated;
  std::vector<std::pair<uint32_t, uint64_t>> recorded_segments;  // (event, size)
  for (uint32_t i = 0; i < trace.size(); ++i) {
    Action a = trace.action_at(i);
    if (maps_segment(a)) {
      ++rec.segment_allocs;
      recorded_segments.emplace_back(i, trace.size_at(i));
    }
    if (frees_segment(a)) ++rec.segment_frees;
  }
  const std::vector<FreeBurst> bursts = free_bursts(ctx.snap, trace);
  for (const auto& b : bursts)
    (b.retry ? rec.retries : b.explicit_call ? sim.explicit_empty_cache : sim.other_flushes) += 1;
  // PyTorch counts a retry at every OOM, also when the flush before it freed nothing (no
  // segment_free in the trace then).
  for (uint32_t i = 0; i < trace.size(); ++i)
    if (trace.action_at(i) == Action::Oom && (i == 0 || !frees_segment(trace.action_at(i - 1)))) ++rec.retries;
  rec.ooms = replay.ooms().size();
  if (!replay.ooms().empty()) {
    sim.ends_at_oom = true;
    for (uint32_t i = replay.ooms().back().event + 1; i < trace.size() && sim.ends_at_oom; ++i)
      sim.ends_at_oom = trace.action_at(i) != Action::Alloc;
  }
  if (!replay.ooms().empty()) {
    uint32_t i = replay.ooms().front().event;
    rec.oom = SimOom{i, trace.size_at(i), ctx.sites.name(ctx.sites.site_of(trace.stack_at(i)))};
    // The device as the allocator saw it: what it held plus what cudaMemGetInfo said was free.
    rec.capacity = replay.ooms().front().totals.reserved + trace[i].device_free();
    sim.capacity_source = "at the OOM: what PyTorch held plus what was free; before it, at least what the run held";
  }
  if (options.capacity) {
    if (*options.capacity < rules::kSmallBuffer)
      throw UsageError("--capacity " + std::to_string(*options.capacity) + " B: smaller than one 2 MiB segment");
    sim.capacity_source = "--capacity" + (options.capacity_note.empty() ? "" : " " + options.capacity_note);
  }
  const bool known = options.capacity || rec.capacity;
  if (!known) sim.capacity_source = "unknown (no OOM in the trace): no limit";
  // --capacity applies to every run; else the device as the recorded run saw it.
  const CapacityPlan plan = options.capacity ? constant(options.capacity) : recorded_plan(replay);

  // What-if by role: the roles of every block, a run with the recorded settings and the edits,
  // and the edits in every --set run.
  std::optional<SimRoleView> role_view;
  std::vector<RunSpec> all_specs = specs;
  if (!options.role_edits.empty()) {
    role_view = sim_role_view(ctx, replay, options, sim);
    std::string label;
    for (const RoleEdit& e : options.role_edits) label += (label.empty() ? "" : " ") + e.text;
    RunSpec edited{label, recorded_settings, true};
    for (size_t k = 1; k < all_specs.size(); ++k) all_specs[k].role_edits = true;
    all_specs.insert(all_specs.begin() + 1, edited);
  }
  Runner runner(ctx, replay, bursts, !known, role_view ? &*role_view : nullptr);
  // Fidelity: the recorded settings on the recorded device (with --capacity, a run of its own).
  Probe probe;
  for (const auto& seg : replay.state_at_start().device.segments)
    if (seg.expandable) map_range(probe.ranges, seg.address, seg.total_size);
  std::optional<SimRun> faithful;
  if (options.capacity) {
    Runner recorded_device(ctx, replay, bursts, !rec.capacity);
    faithful = recorded_device.run(specs.front(), recorded_plan(replay), false, &probe);
    sim.fidelity = fidelity(rec, *faithful, recorded_segments, recorded_device.last_segments_, probe);
  }
  for (const RunSpec& spec : all_specs) {
    const bool first = &spec == &all_specs.front();
    // A run with role edits is compared with the recorded layout too: scaling by 1 changes nothing.
    Probe edited_probe;
    Probe* p = first && !faithful ? &probe : spec.role_edits ? &edited_probe : nullptr;
    if (spec.role_edits) {
      edited_probe.ranges.clear();
      for (const auto& seg : replay.state_at_start().device.segments)
        if (seg.expandable) map_range(edited_probe.ranges, seg.address, seg.total_size);
    }
    SimRun r = runner.run(spec, plan, false, p);
    if (first && !faithful) sim.fidelity = fidelity(rec, r, recorded_segments, runner.last_segments_, probe);
    if (spec.role_edits) r.layout = fidelity(rec, r, recorded_segments, runner.last_segments_, edited_probe);
    if (options.min_capacity) r.min_capacity = min_capacity(runner, spec);
    sim.gc_ignored = sim.gc_ignored || spec.settings.garbage_collection_threshold > 0;
    sim.runs.push_back(std::move(r));
  }
  if (role_view && sim.runs.size() > 1)
    for (size_t k = 0; k < sim.role_edits.size(); ++k) {
      const auto& names = sim.role_names;
      const size_t id = size_t(std::find(names.begin(), names.end(), sim.role_edits[k].edit.role) - names.begin());
      const auto& before = sim.runs[0].peak_allocated_by_role;
      const auto& after = sim.runs[1].peak_allocated_by_role;
      sim.role_edits[k].peak_before = id < before.size() ? before[id] : 0;
      sim.role_edits[k].peak_after = id < after.size() ? after[id] : 0;
      const auto& at = sim.runs[1].by_role_at_recorded_peak;
      sim.role_edits[k].at_recorded_peak_after = id < at.size() ? at[id] : 0;
    }
  if (!replay.consistent())
    sim.fidelity.replay_divergence_event = replay.first_mismatch()->event;
  else if (replay.layout_check().first_unfollowed_event)
    sim.fidelity.replay_divergence_event = replay.layout_check().first_unfollowed_event;
  return sim;
}

}  // namespace memsnap::analysis
