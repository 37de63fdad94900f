// OOM-cause analysis: the state at each oom event, each cause tested, ranked, and the fixes.
#include "memsnap/analysis/oom.hpp"

#include <algorithm>

#include "memsnap/analysis/allocator_rules.hpp"
#include "memsnap/analysis/fits.hpp"

namespace memsnap::analysis {

using snapshot::Action;

const char* to_string(OomCause c) {
  switch (c) {
    case OomCause::Fragmentation: return "fragmentation";
    case OomCause::SegmentRounding: return "segment_rounding";
    case OomCause::Leak: return "leak";
    case OomCause::External: return "external";
    case OomCause::Capacity: return "capacity";
  }
  return "?";
}

namespace {

// The state at the OOM, in the terms of the request: the allocator's own decision
// (would_fit: best fit on the same stream and pool, max_split_size rules), and the
// allocated blocks that pin the free memory of that pool and stream.
void measure(const Context& ctx, const snapshot::Device& d, const Accounting& a, OomReport& r) {
  r.reserved_bytes = a.reserved_bytes;
  r.allocated_bytes = a.allocated_bytes;
  r.active_bytes = a.active_bytes;
  r.free_cached_bytes = a.reserved_bytes - a.active_bytes;
  r.largest_free_block_any_bytes = a.largest_free_block_bytes;
  FitsAnswer fit = would_fit(d, ctx.snap.settings, {r.requested_bytes, r.stream});
  r.pool = fit.pool;
  r.expandable = fit.expandable;
  // PyTorch prints get_allocation_size(rounded) whatever the segments' kind (c10 malloc's alloc_size).
  r.segment_request_bytes = rules::segment_size_for(r.requested_bytes);
  r.map_bytes = fit.expandable ? fit.new_segment_bytes : r.segment_request_bytes;
  r.free_cached_same_pool_bytes = fit.free_bytes;
  r.largest_free_block_bytes = fit.largest_free_block_bytes;
  r.cached_block_could_serve = fit.served_from_cache;
  auto pins = pinning_sites(ctx, d, a, [&](const snapshot::Segment& s) {
    return s.pool == fit.pool && s.stream == r.stream && s.pool_id[0] == 0 && s.pool_id[1] == 0;
  });
  if (pins.size() > 5) pins.resize(5);
  r.pinning_sites = std::move(pins);
  r.top_sites = sites_by_bytes(ctx, d, 10);
}

void decide(const snapshot::AllocatorSettings& settings, bool expandable_regime, const std::vector<Leak>& leaks,
            OomReport& r) {
  const uint64_t rounded = r.requested_bytes;
  const bool expandable_on = settings.expandable_segments || expandable_regime;
  auto fix = [&](OomFix f) {
    if (std::find(r.fixes.begin(), r.fixes.end(), f) == r.fixes.end()) r.fixes.push_back(f);
  };
  if (r.free_cached_bytes >= rounded && !r.cached_block_could_serve) {
    r.causes.push_back(OomCause::Fragmentation);
    if (!expandable_on) fix(OomFix::ExpandableSegments);
    if (!r.pinning_sites.empty()) fix(OomFix::FreePinningTensors);
  }
  if (r.device_free_bytes && *r.device_free_bytes >= rounded && *r.device_free_bytes < r.map_bytes) {
    r.causes.push_back(OomCause::SegmentRounding);
    fix(expandable_on ? OomFix::MoreHeadroom : OomFix::ExpandableSegments);
  }
  if (!leaks.empty()) {
    r.causes.push_back(OomCause::Leak);
    fix(OomFix::StopKeeping);
  }
  if (r.capacity_bytes && r.device_free_bytes) {
    uint64_t used = *r.capacity_bytes > *r.device_free_bytes ? *r.capacity_bytes - *r.device_free_bytes : 0;
    uint64_t outside = used > r.reserved_bytes ? used - r.reserved_bytes : 0;
    if (outside > *r.capacity_bytes / 10 && outside >= rounded / 2) {
      r.causes.push_back(OomCause::External);
      fix(OomFix::ExternalMemory);
    }
  }
  if (r.causes.empty() || r.free_cached_bytes < rounded) {
    r.causes.push_back(OomCause::Capacity);
    fix(OomFix::ReduceLive);
  }
  // When live tensors fill nearly all the memory this process can use, the device
  // is at capacity even if a smaller mapping would have squeezed this request in.
  uint64_t usable = r.reserved_bytes + r.device_free_bytes.value_or(0);
  auto cap = std::find(r.causes.begin(), r.causes.end(), OomCause::Capacity);
  if (cap != r.causes.end() && r.causes.front() == OomCause::SegmentRounding &&
      double(r.allocated_bytes) >= 0.8 * double(usable)) {
    std::rotate(r.causes.begin(), cap, cap + 1);
    auto reduce = std::find(r.fixes.begin(), r.fixes.end(), OomFix::ReduceLive);
    std::rotate(r.fixes.begin(), reduce, reduce + 1);
  }
  if (r.retry_in_except) fix(OomFix::RetryOutsideExcept);
}

OomMessageCheck check_message(const OomMessage& m, const OomReport& r) {
  OomMessageCheck c;
  c.said = m;
  c.request_matches = m.tried.matches(r.segment_request_bytes);
  if (m.allocated) c.allocated_matches = m.allocated->matches(r.allocated_bytes, r.approximate_within_bytes);
  if (m.reserved) c.reserved_matches = m.reserved->matches(r.reserved_bytes);  // segments: exact
  if (m.free && r.from_trace && r.device_free_bytes) c.free_matches = m.free->matches(*r.device_free_bytes);
  if (m.reserved && m.allocated && m.reserved->bytes >= m.allocated->bytes)
    c.message_cause =
        m.reserved->bytes - m.allocated->bytes >= m.tried.bytes ? OomCause::Fragmentation : OomCause::Capacity;
  // Differences of printed figures: what their rounding could make up is none.
  auto beyond_rounding = [](uint64_t a, uint64_t b, uint64_t within) -> uint64_t {
    return a > b && a - b > within ? a - b : 0;
  };
  if (m.capacity && m.free && m.process)
    c.other_processes_bytes = beyond_rounding(m.capacity->bytes, m.free->bytes + m.process->bytes,
                                              m.capacity->within + m.free->within + m.process->within);
  if (m.process && m.reserved)
    c.outside_allocator_bytes =
        beyond_rounding(m.process->bytes, m.reserved->bytes, m.process->within + m.reserved->within);
  return c;
}

// Did allocation resume at the failing site while the failed step's memory was
// still live (allocated stayed at 90% of its level at the OOM or more)?
void detect_retry(const Context& ctx, const Replay& replay, uint32_t oom, uint64_t at_oom, OomReport& r) {
  const auto& ranges = replay.ranges();
  const auto& trace = replay.device().trace;
  // The next allocations in event order, until memory falls below half.
  auto next = std::upper_bound(ranges.begin(), ranges.end(), oom,
                               [](uint32_t e, const LiveRange& x) { return x.begin != kWindowStart && e < x.begin; });
  uint32_t stop = UINT32_MAX;
  for (auto it = next; it != ranges.end(); ++it) {
    if (it->begin == kWindowStart || it->begin <= oom) continue;
    if (it->allocated_before * 2 < at_oom) {
      stop = it->begin;
      break;
    }
    if (ctx.sites.site(it->stack) == r.site && (it->allocated_before + it->size) * 10 >= at_oom * 9) {
      r.retry_in_except = true;
      r.retry_site = r.site;
      return;
    }
  }
  for (const auto& o : replay.ooms()) {
    if (o.event <= oom || o.event >= stop) continue;
    if (o.totals.allocated * 2 < at_oom) break;
    if (ctx.sites.site(trace[o.event].stack) == r.site && o.totals.allocated * 10 >= at_oom * 9) {
      r.retry_in_except = true;
      r.retry_site = r.site;
      return;
    }
  }
}

}  // namespace

OomResult analyze_ooms(const Context& ctx, const snapshot::Device& dumped, const Accounting& dumped_accounting,
                       const Replay* replay, const std::vector<Leak>& leaks, const OomOptions& opt) {
  OomResult out;
  const auto& settings = ctx.snap.settings;
  const OomMessage* msg =
      opt.message && (!opt.message->device || *opt.message->device == dumped.index) ? &*opt.message : nullptr;
  std::optional<uint64_t> capacity = opt.capacity;
  if (!capacity && msg && msg->capacity) capacity = msg->capacity->bytes;
  const bool expandable_regime = dumped_accounting.regime != Regime::Classic;
  if (replay) {
    const auto& trace = dumped.trace;
    out.total = replay->ooms().size();
    for (const auto& o : replay->ooms()) {
      const auto& e = trace[o.event];
      std::optional<int64_t> time = e.has_time() ? std::optional<int64_t>(e.time_us) : std::nullopt;
      if (out.explained.size() == kExplainedOoms) {
        out.more.push_back({o.event, time, e.stream, e.size, e.device_free(), o.totals.allocated, o.totals.reserved,
                            ctx.sites.site(e.stack)});
        continue;
      }
      OomReport r;
      r.event_index = o.event;
      r.time_us = time;
      r.device = dumped.index;
      r.stream = e.stream;
      r.requested_bytes = e.size;
      r.device_free_bytes = e.device_free();
      r.capacity_bytes = capacity;
      r.site = ctx.sites.site(e.stack);
      r.stack = ctx.sites.stack(e.stack);
      ReplayedState st = replay->state_after(o.event);
      Accounting a = account(ctx, st.device);
      measure(ctx, st.device, a, r);
      r.approximate_within_bytes = st.size_uncertainty;
      r.estimated_blocks = st.estimated_blocks;
      detect_retry(ctx, *replay, o.event, o.totals.allocated, r);
      decide(settings, expandable_regime, leaks, r);
      out.explained.push_back(std::move(r));
    }
    if (!replay->ooms().empty() && dumped_accounting.allocated_bytes < replay->ooms().back().totals.allocated &&
        !out.explained.empty() && out.more.empty())
      out.explained.back().freed_after_bytes =
          replay->ooms().back().totals.allocated - dumped_accounting.allocated_bytes;
    // The message is of the error that ended the run: the last OOM.
    if (msg && !out.explained.empty() && out.more.empty())
      out.explained.back().message = check_message(*msg, out.explained.back());
  }
  if (out.total == 0 && (opt.assumed_request || msg)) {
    OomReport r;
    r.from_trace = false;
    r.device = dumped.index;
    r.requested_bytes = rules::round_size(opt.assumed_request ? *opt.assumed_request : msg->tried.bytes, settings);
    r.stream = opt.assumed_stream.value_or(0);
    r.capacity_bytes = capacity;
    if (msg && msg->free) r.device_free_bytes = msg->free->bytes;
    r.site = Sites::kNoStack;
    measure(ctx, dumped, dumped_accounting, r);
    decide(settings, expandable_regime, leaks, r);
    if (msg) r.message = check_message(*msg, r);
    out.explained.push_back(std::move(r));
    out.total = 1;
  }
  return out;
}

}  // namespace memsnap::analysis
