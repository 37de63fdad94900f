// OOM-cause analysis: rebuild the state at each oom event, test each cause, rank them, advise.
//
// The snapshot is often dumped after the exception unwound and freed the failed
// step's tensors, so the dumped segments can look healthy. The replay rebuilds
// the state at the oom event itself. Causes, most direct first:
//   fragmentation     enough bytes were cached free, but no block on the request's
//                     stream and pool was large enough (the allocator had already
//                     released every unsplit cached segment before failing);
//   segment_rounding  the rounded request would have fit in the device's free
//                     memory, but the segment the allocator must create is larger
//                     (ranked below capacity when live tensors hold 80% or more of
//                     reserved plus device-free memory: then the device is full);
//   leak              live memory grew across iterations up to the OOM;
//   external          (with --capacity) memory outside this allocator: capacity
//                     minus device free minus reserved;
//   capacity          live tensors fill the device.
#include "memsnap/analysis/oom.hpp"

#include <algorithm>
#include <cmath>

#include "memsnap/analysis/allocator_rules.hpp"
#include "memsnap/analysis/fits.hpp"
#include "memsnap/analysis/fragmentation.hpp"
#include "memsnap/analysis/summary.hpp"
#include "memsnap/util/units.hpp"

namespace memsnap::analysis {

using snapshot::Action;
using snapshot::BlockState;
using snapshot::Pool;

namespace {

std::string pct_of(uint64_t part, uint64_t whole) {
  if (whole == 0) return "0%";
  return std::to_string(int(std::lround(100.0 * double(part) / double(whole)))) + "%";
}

// The state at the OOM, in the terms of the request: the allocator's own decision
// (would_fit: best fit on the same stream and pool, max_split_size rules), and the
// live blocks that pin the free memory of that pool and stream (the fragmentation
// analysis' attribution, run on that pool's segments only).
void measure(const snapshot::Snapshot& snap, const snapshot::Device& d, Sites& sites, OomReport& r) {
  auto totals = summarize(d);
  r.reserved_bytes = totals.reserved_bytes;
  r.allocated_bytes = totals.allocated_bytes;
  r.active_bytes = totals.active_bytes;
  r.free_cached_bytes = r.reserved_bytes - r.active_bytes;
  r.largest_free_block_any_bytes = totals.largest_free_block_bytes;
  FitsAnswer fit = would_fit(d, snap.settings, {r.requested_bytes, r.stream});
  r.free_cached_same_pool_bytes = fit.free_bytes;
  r.largest_free_block_bytes = fit.largest_free_block_bytes;
  r.cached_block_could_serve = fit.served_from_cache;
  snapshot::Device pool;
  pool.index = d.index;
  for (const auto& s : d.segments) {
    if (s.pool != fit.pool || s.stream != r.stream || s.pool_id[0] != 0 || s.pool_id[1] != 0) continue;
    snapshot::Segment copy = s;
    copy.first_block = static_cast<uint32_t>(pool.blocks.size());
    for (const auto& b : d.blocks_of(s)) pool.blocks.push_back(b);
    pool.segments.push_back(copy);
  }
  for (const auto& p : analyze_fragmentation(snap, pool, sites).pinning_sites) {
    if (r.pinning_sites.size() == 5) break;
    r.pinning_sites.push_back({p.site, p.stack, p.stranded_bytes, p.blocks});
  }
}

std::string names(const std::vector<SiteBytes>& s, size_t n) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < n; ++i) out += (i ? ", " : "") + s[i].site + " (" + human_bytes(s[i].live_bytes) + ")";
  return out;
}

void decide(OomReport& r, const TraceAnalysis& trace) {
  const uint64_t rounded = r.requested_bytes;
  std::string where = "stream " + std::to_string(r.stream) + " in the " + snapshot::to_string(r.pool) + " pool";
  // fragmentation
  if (r.free_cached_bytes >= rounded && !r.cached_block_could_serve) {
    std::string ev = human_bytes(r.free_cached_bytes) + " of reserved memory was cached free, more than the " +
                     human_bytes(rounded) + " request, but the largest free block on " + where + " was " +
                     human_bytes(r.largest_free_block_bytes) + ".";
    if (r.free_cached_same_pool_bytes < rounded)
      ev += " Most of the free memory sat in another pool or on another stream (" +
            human_bytes(r.free_cached_same_pool_bytes) + " on " + where + "), where requests cannot reuse it.";
    if (!r.pinning_sites.empty()) ev += " The free blocks are pinned in their segments by live tensors from " +
                                        names(r.pinning_sites, 3) + ".";
    r.causes.push_back({"fragmentation", ev});
    r.advice.push_back(
        "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True so the allocator grows segments instead of caching "
        "split ones (or max_split_size_mb:N to stop large cached blocks from being split).");
    if (!r.pinning_sites.empty())
      r.advice.push_back("Free the tensors that pin the fragmented segments earlier (`del`), e.g. those from " +
                         r.pinning_sites.front().site + ".");
  }
  // segment rounding
  if (r.device_free_bytes && *r.device_free_bytes >= rounded && *r.device_free_bytes < r.segment_request_bytes) {
    r.causes.push_back({"segment_rounding",
                        "The " + human_bytes(rounded) + " request would have fit in the " +
                            human_bytes(*r.device_free_bytes) + " the device had free, but the allocator must create a " +
                            human_bytes(r.segment_request_bytes) + " segment for it" +
                            (rounded < rules::kMinLargeAlloc && rounded > rules::kSmallSize
                                 ? " (every request between 1 MiB and 10 MiB gets a 20 MiB segment)."
                                 : ".")});
    r.advice.push_back(
        "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: pages are mapped as needed instead of whole new "
        "segments; otherwise leave more headroom.");
  }
  // leak
  if (!trace.leaks.empty()) {
    std::string ev = "Live memory grew across iterations up to the OOM: ";
    for (size_t i = 0; i < trace.leaks.size() && i < 3; ++i)
      ev += (i ? ", " : "") + trace.leaks[i].site + " (+" +
            human_bytes(uint64_t(std::llround(trace.leaks[i].growth_bytes_per_iteration))) + " per iteration)";
    r.causes.push_back({"leak", ev + "."});
    r.advice.push_back(
        "Stop keeping tensors across iterations: accumulate `loss.item()` or `float(loss)`, `del` what you no "
        "longer need, run evaluation under `torch.no_grad()`.");
  }
  // external
  if (r.capacity_bytes && r.device_free_bytes) {
    uint64_t used = *r.capacity_bytes > *r.device_free_bytes ? *r.capacity_bytes - *r.device_free_bytes : 0;
    uint64_t outside = used > r.reserved_bytes ? used - r.reserved_bytes : 0;
    if (outside > *r.capacity_bytes / 10 && outside >= rounded / 2) {
      r.causes.push_back({"external",
                          "Of the device's " + human_bytes(*r.capacity_bytes) + ", " + human_bytes(*r.device_free_bytes) +
                              " was free and PyTorch's caching allocator reserved " + human_bytes(r.reserved_bytes) +
                              ": " + human_bytes(outside) + " (" + pct_of(outside, *r.capacity_bytes) +
                              ") is held outside it (the CUDA context, NCCL and cuBLAS workspaces, other "
                              "libraries or other processes)."});
      r.advice.push_back(
          "Look for other processes on the GPU (nvidia-smi), and memory allocated outside PyTorch's caching "
          "allocator (NCCL buffers: NCCL_BUFFSIZE; cuBLAS workspaces: CUBLAS_WORKSPACE_CONFIG).");
    }
  }
  // capacity
  if (r.causes.empty() || r.free_cached_bytes < rounded) {
    uint64_t base = r.capacity_bytes ? *r.capacity_bytes : r.reserved_bytes;
    std::string of = r.capacity_bytes ? "of the device" : "of reserved memory";
    std::string ev = "Live tensors hold " + human_bytes(r.allocated_bytes) + " (" + pct_of(r.allocated_bytes, base) +
                     " " + of + "); only " + human_bytes(r.free_cached_bytes) + " was cached free";
    if (r.device_free_bytes) ev += " and the device had " + human_bytes(*r.device_free_bytes) + " free";
    ev += ". Largest holders: ";
    for (size_t i = 0; i < r.top_sites.size() && i < 3; ++i)
      ev += (i ? ", " : "") + r.top_sites[i].site + " " + human_bytes(r.top_sites[i].live_bytes) + " (" +
            pct_of(r.top_sites[i].live_bytes, base) + ")";
    r.causes.push_back({"capacity", ev + "."});
    r.advice.push_back(
        "Reduce what is live at once: a smaller batch or sequence, activation checkpointing "
        "(torch.utils.checkpoint), mixed precision (torch.autocast, bf16), or sharding/offloading the largest "
        "holders.");
  }
  // When live tensors fill nearly all the memory this process can use, the device
  // is at capacity even if a smaller segment would have squeezed this request in.
  uint64_t usable = r.reserved_bytes + r.device_free_bytes.value_or(0);
  auto cap = std::find_if(r.causes.begin(), r.causes.end(), [](const OomCause& c) { return c.cause == "capacity"; });
  if (cap != r.causes.end() && r.causes.front().cause == "segment_rounding" && r.allocated_bytes * 10 >= usable * 8)
    std::rotate(r.causes.begin(), cap, cap + 1);
  r.cause = r.causes.front().cause;
  if (r.retry_in_except)
    r.advice.push_back(
        "Allocations resumed right after the OOM while the failed step's tensors were still alive: if your OOM "
        "handler retries inside the `except` clause, the exception keeps that step's tensors alive. Set a flag in "
        "`except` and retry after it.");
}

std::string rebuild_message(const OomReport& r) {
  std::string cap = r.capacity_bytes ? torch_format_size(*r.capacity_bytes) : "?";
  std::string free = r.device_free_bytes ? torch_format_size(*r.device_free_bytes) : "?";
  std::string in_use = r.capacity_bytes && r.device_free_bytes && *r.capacity_bytes >= *r.device_free_bytes
                           ? torch_format_size(*r.capacity_bytes - *r.device_free_bytes)
                           : "?";
  return "CUDA out of memory. Tried to allocate " + torch_format_size(r.segment_request_bytes) + ". GPU " +
         std::to_string(r.device) + " has a total capacity of " + cap + " of which " + free +
         " is free. Including non-PyTorch memory, this process has " + in_use +
         " memory in use. Of the allocated memory " + torch_format_size(r.allocated_bytes) +
         " is allocated by PyTorch, and " + torch_format_size(r.reserved_bytes - r.allocated_bytes) +
         " is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
         "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
         "Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)";
}

}  // namespace

std::vector<Finding> oom_findings(const std::vector<OomReport>& ooms) {
  std::vector<Finding> out;
  for (const auto& r : ooms) {
    std::string when = r.from_trace ? "at event " + std::to_string(*r.event_index) : "(dumped state)";
    out.push_back({"oom_" + r.cause, Severity::Critical,
                   "Out of memory " + when + " allocating " + human_bytes(r.requested_bytes) +
                       (r.from_trace ? " from " + r.site : std::string()) + ": " + r.causes.front().evidence,
                   r.advice.empty() ? std::string() : r.advice.front()});
    if (r.retry_in_except)
      out.push_back({"oom_retry_in_except", Severity::Warning,
                     "After the OOM " + when + ", allocation resumed at " + r.site +
                         " while the failed step's tensors were still alive.",
                     r.advice.back()});
  }
  return out;
}

std::vector<OomReport> analyze_ooms(const snapshot::Snapshot& snap, const snapshot::Device& d, const Replay& replay,
                                    Sites& sites, const TraceAnalysis& trace, const OomOptions& opt) {
  std::vector<OomReport> out;
  std::vector<uint32_t> events;
  for (uint32_t i = 0; i < d.trace.size(); ++i)
    if (d.trace[i].action == Action::Oom) events.push_back(i);

  auto finish = [&](OomReport& r, const snapshot::Device& state) {
    r.device = d.index;
    r.capacity_bytes = opt.capacity;
    r.pool = rules::pool_for(r.requested_bytes);
    r.segment_request_bytes = rules::segment_size_for(r.requested_bytes);
    measure(snap, state, sites, r);
    r.top_sites = sites_by_bytes(state, sites, 10);
    decide(r, trace);
    r.message = rebuild_message(r);
  };

  for (uint32_t i : events) {
    const auto& e = d.trace[i];
    OomReport r;
    r.event_index = i;
    if (e.has_time()) r.time_us = e.time_us;
    r.stream = e.stream;
    r.requested_bytes = e.size;
    r.device_free_bytes = e.device_free();
    r.site = sites.site(e.stack);
    r.stack = sites.stack(e.stack);
    ReplayState st = replay.state_after(i);
    snapshot::Device state = st.to_device(d.index);
    // Bound on the error from blocks whose size the replay inferred.
    uint64_t slack = snap.settings.max_split_size ? rules::kLargeBuffer : rules::kSmallSize;
    for (const auto& [addr, a] : st.live())
      if (!a.size_exact && a.size > rules::kSmallSize) r.approximate_within_bytes += slack;
    // Did allocation resume at the failing site while the failed step's memory was still live?
    uint64_t at_oom = st.totals().allocated;
    for (uint32_t j = i + 1; j < d.trace.size(); ++j) {
      st.step();
      if (st.totals().allocated * 2 < at_oom) break;
      const auto& n = d.trace[j];
      if ((n.action == Action::Alloc || n.action == Action::Oom) && sites.site(n.stack) == r.site &&
          st.totals().allocated * 10 >= at_oom * 9) {
        r.retry_in_except = true;
        break;
      }
    }
    finish(r, state);
    out.push_back(std::move(r));
  }
  if (events.empty() && opt.assumed_request) {
    OomReport r;
    r.from_trace = false;
    r.requested_bytes = rules::round_size(*opt.assumed_request, snap.settings);
    r.stream = opt.assumed_stream.value_or(0);
    r.site = Sites::kNoStack;
    finish(r, d);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace memsnap::analysis
