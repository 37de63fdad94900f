// analyze(): which analyses run, in which order, on which state.
#include "memsnap/analysis/analyze.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <future>
#include <system_error>
#include <thread>

#include "memsnap/analysis/annotation_ranges.hpp"
#include "memsnap/analysis/events.hpp"
#include "memsnap/analysis/simulate.hpp"
#include "memsnap/util/cores.hpp"
#include "memsnap/util/error.hpp"
#include "memsnap/util/units.hpp"

namespace memsnap::analysis {

namespace {

// The first explained OOM, when the advice is an allocator setting: the recorded requests
// under that setting (memsnap simulate), in one line of the OOM section.
void what_if(const Context& ctx, const Replay& replay, OomResult& ooms) {
  if (ooms.explained.empty() || !ooms.explained.front().from_trace) return;
  OomReport& r = ooms.explained.front();
  std::string setting;
  for (OomFix f : r.fixes)
    if (f == OomFix::ExpandableSegments) {
      setting = "expandable_segments:True";
      break;
    }
  if (setting.empty() || !r.event_index) return;
  SimulateOptions options;
  options.sets = {setting};
  Simulation sim = simulate(ctx, replay, options);
  if (sim.runs.size() < 2) return;
  const SimRun& run = sim.runs[1];
  OomReport::WhatIf w;
  w.setting = setting;
  // It fits when the run reaches past this request holding no more than the device had then.
  w.capacity_bytes = run.capacity;
  w.reserved_at_oom_bytes = run.reserved_at_recorded_oom;
  w.fits = (!run.oom || run.oom->event_index > *r.event_index) && run.reserved_at_recorded_oom &&
           (!run.capacity || *run.reserved_at_recorded_oom <= *run.capacity);
  if (run.oom) w.oom_event = run.oom->event_index;
  w.peak_reserved_bytes = run.peak_reserved;
  r.what_if = w;
}

// The record_function range open at the peak, each OOM and --at: with --phases annotations the
// user's innermost range is the phase (Mosaic's annotation stages); else torch.compile's ranges
// alone are named (its compilation and autotuning are not the program's forward). A repeat
// inside one of them is torch.compile benchmarking kernels, not a loop of the program.
void name_ranges(const Context& ctx, const snapshot::Device& d, const AnalyzeOptions& o, DeviceAnalysis& out) {
  const AnnotationRanges ranges(ctx.snap, d);
  DeviceRoles& dr = out.roles;
  if (ranges.empty()) {
    if (o.phases_from_ranges)
      dr.problems.push_back("--phases annotations: device " + std::to_string(d.index) +
                            " has no record_function ranges in the file: its phases are memsnap's own");
    return;
  }
  dr.phases_from_ranges = o.phases_from_ranges;
  auto range_at = [&](uint32_t event) -> std::optional<std::string> {
    auto r = o.phases_from_ranges ? ranges.at(event) : ranges.compile_at(event);
    if (!r) return std::nullopt;
    return std::string(r->substr(0, 200));
  };
  if (dr.peak && out.peaks.allocated && !out.peaks.allocated->at_window_start)
    dr.peak->range = range_at(out.peaks.allocated->event_index);
  for (size_t k = 0; k < out.ooms.explained.size() && k < dr.ooms.size(); ++k)
    if (const OomReport& r = out.ooms.explained[k]; r.from_trace && r.event_index)
      dr.ooms[k].range = range_at(*r.event_index);
  if (out.at) dr.dump.range = range_at(out.at->event_index);
  if (out.structure) {  // from its first repetition to past its middle (its last may end just after the range)
    const uint32_t first_event = out.structure->first_event,
                   middle = first_event + (out.structure->last_event - first_event) / 2;
    auto first = ranges.compile_at(first_event), mid = ranges.compile_at(middle);
    if (first && mid && *first == *mid) out.structure->compile_range = std::string(first->substr(0, 200));
  }
}

// Bytes by role at the dump (or --at), the peak and each explained OOM. Each state's roles add
// up to its allocated bytes: a difference (none is known) goes to `unknown` and is reported.
void assign_roles(const Context& ctx, const snapshot::Device& d, const Replay* replay, const AnalyzeOptions& o,
                  DeviceAnalysis& out, std::vector<std::string>& problems) {
  RoleTable table(ctx, o.roles);  // one per device: its caches are not shared between threads
  DeviceRoles& dr = out.roles;
  dr.names = table.names();
  auto check = [&](RoleState& s, uint64_t allocated, const char* what) {
    uint64_t total = s.by_role.total();
    if (total == allocated) return;
    problems.push_back("device " + std::to_string(d.index) + ": roles at " + what + " add up to " +
                       std::to_string(total) + " bytes, not the " + std::to_string(allocated) + " allocated");
    if (total < allocated) s.by_role.bytes[size_t(Role::Unknown)] += allocated - total;
  };
  if (replay) {
    Phases phases(ctx, table.stacks(), d, replay);
    BlockRoles roles(table, *replay, phases);
    dr.kept_after_backward = kept_after_backward(ctx, d, *replay, phases, roles);
    dr.from_trace = true;
    dr.phases_from_annotations = phases.from_annotations();
    dr.never_zeroed = gradients_never_zeroed(ctx, table.stacks(), d, *replay, phases);
    uint32_t last = static_cast<uint32_t>(d.trace.size() - 1);
    dr.dump = roles.at(out.at ? out.at->event_index : last);
    dr.dump.phase.reset();
    if (out.at) dr.dump.phase = phases.state_phase(out.at->event_index);
    if (const auto& p = out.peaks.allocated) {
      dr.peak = p->at_window_start ? roles.at_start() : roles.at(p->event_index);
      check(*dr.peak, p->allocated_bytes, "the peak");
    }
    if (out.structure)  // of the bytes a one-pass repeat keeps: autocast's cached casts
      for (uint32_t id = 0; id < replay->ranges().size(); ++id) {
        uint32_t b = replay->begin_of(id);
        if (b != kWindowStart && b >= out.structure->first_event && replay->freed_of(id) == kNever &&
            roles.of(id) == RoleId(Role::AutocastCache))
          out.structure->kept_autocast_cache_bytes += replay->size_of(id);
      }
    for (const auto& r : out.ooms.explained) {
      dr.ooms.push_back(r.from_trace && r.event_index ? roles.at(*r.event_index) : roles.at(last));
      if (!r.from_trace) dr.ooms.back().phase.reset();
      check(dr.ooms.back(), r.allocated_bytes, "the OOM");
    }
  } else {
    dr.dump = roles_of_state(table, out.state());
    for (size_t k = 0; k < out.ooms.explained.size(); ++k) dr.ooms.push_back(dr.dump);
  }
  check(dr.dump, out.accounting.allocated_bytes, "the dump");
  dr.dump_where = named_roles_where(ctx, table, out.state());
  if (replay) name_ranges(ctx, d, o, out);
  if (!ctx.snap.stacks.has_frames()) {  // no stack anywhere: nothing says what phase anything ran in
    if (dr.peak) dr.peak->phase.reset();
    for (auto& s : dr.ooms) s.phase.reset();
    dr.dump.phase.reset();
  }
}

// What fills memory at each explained OOM decides the fix in place of "reduce what is live":
// activations -> checkpointing, weights + gradients + optimizer state -> sharding, weights
// alone outside a training phase -> load sharded, a KV cache -> the engine's setting. Only
// when one kind holds at least half of the allocated bytes; else the general fix stands.
void fix_by_role(DeviceAnalysis& out) {
  for (size_t k = 0; k < out.ooms.explained.size() && k < out.roles.ooms.size(); ++k) {
    OomReport& r = out.ooms.explained[k];
    const RoleState& s = out.roles.ooms[k];
    auto reduce = std::find(r.fixes.begin(), r.fixes.end(), OomFix::ReduceLive);
    if (reduce == r.fixes.end() || s.by_role.bytes.size() < size_t(kBuiltinRoles)) continue;
    auto at = [&](Role role) { return s.by_role.bytes[size_t(role)]; };
    const uint64_t total = s.by_role.total();
    const uint64_t params = at(Role::Parameter);
    const uint64_t model = params + at(Role::Gradient) + at(Role::OptimizerState);
    const uint64_t acts = at(Role::Activation) + at(Role::Temporary);
    const uint64_t kv = at(Role::KvCache);
    const bool training_phase = s.phase && (*s.phase == Phase::Forward || *s.phase == Phase::Backward ||
                                            *s.phase == Phase::OptimizerStep || *s.phase == Phase::ZeroGrad);
    auto half = [&](uint64_t b) { return total > 0 && 2 * b >= total; };
    OomFix fix = OomFix::ReduceLive;
    uint64_t bytes = 0;
    if (half(kv) && kv >= model && kv >= acts) {
      fix = OomFix::KvCacheSetting, bytes = kv;
    } else if (half(params) && !training_phase && 10 * (model - params + acts) < total) {
      fix = OomFix::LoadWeightsSharded, bytes = params;
    } else if (half(model) && model >= acts) {
      fix = OomFix::ShardModelState, bytes = model;
    } else if (half(acts)) {
      fix = OomFix::CheckpointActivations, bytes = acts;
    }
    if (fix == OomFix::ReduceLive) continue;
    *reduce = fix;
    r.role_fix_bytes = bytes;
  }
}

}  // namespace

namespace {

TraceSummary summarize_trace(const snapshot::Device& d) {
  TraceSummary t;
  t.entries = d.trace.size();
  for (const auto& e : d.trace)
    if (e.has_time()) {
      t.first_time_us = e.time_us;
      break;
    }
  for (size_t i = d.trace.size(); i-- > 0;)
    if (d.trace[i].has_time()) {
      t.last_time_us = d.trace[i].time_us;
      break;
    }
  return t;
}

// What shows that the ring buffer dropped events before the trace's first one.
// A trace of one entry after earlier allocations is taken for the one-entry buffer
// PyTorch 2.0 keeps by default: a window of one event cannot show what came before.
DroppedEvents dropped_events(const snapshot::AllocatorSettings& s, const TraceSummary& t) {
  if (t.entries == 0) return DroppedEvents::NotShown;
  if (s.trace_alloc_overflowed.value_or(false)) return DroppedEvents::Overflowed;
  if (s.trace_alloc_max_entries && *s.trace_alloc_max_entries > 0 &&
      t.entries >= static_cast<uint64_t>(*s.trace_alloc_max_entries))
    return DroppedEvents::Full;
  if (t.entries == 1 && t.window_starts_mid_run) return DroppedEvents::OneEntry;
  return DroppedEvents::NotShown;
}

// The event --at / --at-time names on one device.
std::optional<uint32_t> resolve_at(const AnalyzeOptions& o, const snapshot::Device& d) {
  const auto& tr = d.trace;
  if (o.at) {
    if (std::string why = event_index_problem(d, *o.at); !why.empty())
      throw UsageError("--at " + std::to_string(*o.at) + ": " + why +
                       (tr.empty() ? " (--device N describes one device)" : ""));  // others may have one
    return static_cast<uint32_t>(*o.at);
  }
  if (o.at_time) {
    std::optional<uint32_t> last;
    for (uint32_t i = 0; i < tr.size(); ++i)
      if (tr[i].has_time() && tr[i].time_us <= *o.at_time) last = i;
    if (!last) throw UsageError("--at-time " + std::to_string(*o.at_time) + ": " + event_time_problem(d, *o.at_time));
    return last;
  }
  return std::nullopt;
}

}  // namespace

const char* to_string(DroppedEvents d) {
  switch (d) {
    case DroppedEvents::NotShown: return "not_shown";
    case DroppedEvents::Overflowed: return "overflowed";
    case DroppedEvents::Full: return "full";
    case DroppedEvents::OneEntry: return "one_entry";
  }
  return "?";
}

// f() on another thread, or an empty future when no thread can be had (the caller then
// does the work itself). The future's destructor waits for the thread.
template <class F>
auto beside(F f) -> std::future<decltype(f())> {
  try {
    return std::async(std::launch::async, std::move(f));
  } catch (const std::system_error&) {
    return {};
  }
}

// Churn, the model-building anti-patterns, whether the file shows training, and
// whether memory was tight: what the findings' rules and words need beyond the
// replay's figures.
static void judge_habits(const Context& ctx, const snapshot::Device& d, const AnalyzeOptions& o, DeviceAnalysis& out) {
  out.churn = find_churn(ctx, d);
  out.capacity_bytes = o.oom.capacity;
  for (const auto& r : out.ooms.explained)
    if (!out.capacity_bytes && r.capacity_bytes) out.capacity_bytes = r.capacity_bytes;
  uint64_t peak_reserved = out.peaks.reserved ? out.peaks.reserved->bytes : 0;
  peak_reserved = std::max(peak_reserved, out.accounting.reserved_bytes);
  out.memory_pressure =
      out.ooms.total > 0 || out.churn.retries > 0 ||
      (out.capacity_bytes && double(peak_reserved) >= o.thresholds.pressure_share * double(*out.capacity_bytes));
  out.training = shows_training(ctx, d);
  for (const auto& other : ctx.snap.devices) {
    if (out.training) break;
    if (other.index == d.index) continue;
    for (snapshot::Action a : other.trace.actions())
      if (a == snapshot::Action::Oom) {
        out.training = true;  // another device ran out first: this one's step never finished
        break;
      }
  }
  out.big_layer =
      find_big_layer(ctx, d, out.peaks.allocated ? out.peaks.allocated->allocated_bytes : 0, out.capacity_bytes);
  out.model_per_step = find_model_per_step(ctx, d);
}

struct Analyzer {
  // `spare_core`: a core no other device's analysis uses, for the iteration search's
  // trace-only half (TracePeriods) while this thread replays.
  static DeviceAnalysis device(const Context& ctx, const snapshot::Device& d, const AnalyzeOptions& o,
                               bool spare_core) {
    DeviceAnalysis out;
    out.device = d.index;
    out.dumped_ = &d;
    // unused: nothing reserved and no allocator event (a lone `snapshot` marker is none)
    out.unused = d.segments.empty() && std::all_of(d.trace.actions().begin(), d.trace.actions().end(),
                                                   [](auto a) { return a == snapshot::Action::Snapshot; });
    out.trace = summarize_trace(d);
    out.trace.window_starts_mid_run = !d.segments.empty();  // without a trace, anything dumped predates it
    std::optional<uint32_t> at = resolve_at(o, d);
    std::optional<Replay> replay;
    std::future<TracePeriods> periods;
    if (!d.trace.empty() && (o.trace || at || o.timeline || o.page)) {
      if (spare_core && (o.trace || o.timeline))
        periods = beside([&] { return TracePeriods(ctx.snap, d, o.iterations); });
      util::AllCoresBusy busy(periods.valid());  // both cores are busy
      replay.emplace(ctx, d);
      out.trace.consistent = replay->consistent();
      out.trace.first_mismatch = replay->first_mismatch();
      out.trace.window_starts_mid_run = replay->window_starts_mid_run();
      out.trace.estimated_blocks = replay->estimated_blocks();
      out.trace.layout = replay->layout_check();
    }
    out.trace.dropped = dropped_events(ctx.snap.settings, out.trace);
    if (at) {
      ReplayedState st = replay->state_after(*at);
      const auto& e = d.trace[*at];
      out.at = AtPoint{*at, e.has_time() ? std::optional<int64_t>(e.time_us) : std::nullopt, st.estimated_blocks};
      out.replayed_ = std::make_shared<const snapshot::Device>(std::move(st.device));
    }
    out.accounting = account(ctx, out.state());
    out.segment_order = segments_worst_first(out.state(), out.accounting);
    if (o.fits) out.fits = would_fit(out.state(), ctx.snap.settings, *o.fits);
    if (o.trace && !replay && o.top_sites)
      out.dump_sites = sites_by_bytes(ctx, out.state(), o.top_sites, &out.dump_other_sites);
    if (o.trace || o.timeline) {
      if (replay) {
        out.peaks = find_peaks(ctx, *replay, o.top_sites);
        IterationResult it = periods.valid() ? find_iterations(ctx, d, *replay, o.iterations, periods.get())
                                             : find_iterations(ctx, d, *replay, o.iterations);
        out.iterations = std::move(it.iterations);
        out.structure = std::move(it.structure);
      }
    }
    if (o.trace) {
      if (replay) {
        LeakResult lr = find_leaks(ctx, d, *replay, out.iterations);
        out.leaks = std::move(lr.leaks);
        out.growing = std::move(lr.growing);
      }
      // The OOM analysis compares with the dump, whatever state --at describes.
      std::optional<Accounting> dumped_accounting;
      if (out.at) dumped_accounting = account(ctx, d);
      out.ooms = analyze_ooms(ctx, d, dumped_accounting ? *dumped_accounting : out.accounting,
                              replay ? &*replay : nullptr, out.leaks, o.oom);
      if (replay) what_if(ctx, *replay, out.ooms);
    }
    if (o.timeline && replay)
      out.timeline = build_timeline(ctx, *replay, out.peaks.allocated, out.iterations, *o.timeline);
    if (o.trace) judge_habits(ctx, d, o, out);
    if (o.trace) assign_roles(ctx, d, replay ? &*replay : nullptr, o, out, out.roles.problems);
    if (o.trace) fix_by_role(out);
    out.findings = raise_findings(ctx, out, o.thresholds);
    if (o.page) out.page = build_page(ctx, d, replay ? &*replay : nullptr, out.timeline, out.iterations, *o.page);
    return out;
  }
};

namespace {

// Devices are independent (the context is read-only), so each one's analysis
// runs on its own core; results keep the snapshot's device order.
std::vector<DeviceAnalysis> analyze_devices(const Context& ctx, const std::vector<const snapshot::Device*>& chosen,
                                            const AnalyzeOptions& o) {
  std::vector<DeviceAnalysis> out(chosen.size());
  unsigned workers = o.threads ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  const bool spare_core = workers > chosen.size();
  workers = static_cast<unsigned>(std::min<size_t>(workers, chosen.size()));
  if (workers <= 1) {
    for (size_t k = 0; k < chosen.size(); ++k) out[k] = Analyzer::device(ctx, *chosen[k], o, spare_core);
    return out;
  }
  util::AllCoresBusy busy;  // every core has a device
  std::atomic<size_t> next{0};
  std::vector<std::exception_ptr> errors(chosen.size());
  auto work = [&] {
    for (size_t k; (k = next.fetch_add(1)) < chosen.size();) {
      try {
        out[k] = Analyzer::device(ctx, *chosen[k], o, false);
      } catch (...) {
        errors[k] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned w = 1; w < workers; ++w) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);  // the first device's error, as a serial run would report
  return out;
}

}  // namespace

AnalyzeResult analyze(const Context& ctx, const AnalyzeOptions& o) {
  const auto& snap = ctx.snap;
  if (o.device && !snap.device(*o.device))
    throw UsageError("--device " + std::to_string(*o.device) + ": the snapshot has no such device");
  AnalyzeResult result;
  for (const auto& d : snap.devices)
    for (const auto& e : d.trace)
      if (e.has_time()) {
        if (!result.time_origin_us || e.time_us < *result.time_origin_us) result.time_origin_us = e.time_us;
        break;
      }
  std::vector<const snapshot::Device*> chosen;
  for (const auto& d : snap.devices)
    if (!o.device || d.index == *o.device) chosen.push_back(&d);
  // --at without --device: the devices whose trace holds that event (others are named on stderr)
  if (!o.device && chosen.size() > 1 && (o.at || o.at_time))
    chosen =
        devices_with_event(chosen, o.at ? "--at " + std::to_string(*o.at) : "--at-time " + std::to_string(*o.at_time),
                           o.at, o.at ? std::nullopt : o.at_time, result.warnings);
  if (const auto& m = o.oom.message; m && m->device && !snap.device(*m->device))
    result.warnings.push_back("--oom-message: it is about GPU " + std::to_string(*m->device) +
                              ", which is not a device of this snapshot: no OOM is checked against it");
  result.devices = analyze_devices(ctx, chosen, o);
  for (size_t k = 0; k < chosen.size(); ++k) {
    const auto& d = *chosen[k];
    for (const auto& p : result.devices[k].roles.problems) result.warnings.push_back(p);
    for (const auto& c : result.devices[k].accounting.clamped)
      result.warnings.push_back("device " + std::to_string(d.index) + ": block at " + hex(c.address) + " requests " +
                                with_commas(c.stated_requested) + " bytes, more than its size " + with_commas(c.size) +
                                ": counted as " + with_commas(c.size));
  }
  return result;
}

}  // namespace memsnap::analysis
