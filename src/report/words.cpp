// Findings, OOM causes, fixes and iteration verdicts in words, with the fixes the
// seed documents and PyTorch's docs give.
#include "words.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "memsnap/analysis/allocator_rules.hpp"
#include "memsnap/analysis/annotation_ranges.hpp"
#include "memsnap/util/units.hpp"
#include "text_util.hpp"

namespace memsnap::report::detail {

using namespace analysis;

namespace {

std::string pct(uint64_t part, uint64_t whole) {
  return percent_of(part, whole);
}

std::string pct(double r) {
  return std::to_string(int(std::lround(r * 100))) + "%";
}

std::string plural(uint64_t n, const char* one, const char* many) {
  return with_commas(n) + " " + (n == 1 ? one : many);
}

std::string per_iter(double b) {
  return human_bytes(uint64_t(std::llround(std::max(0.0, b)))) + " per iteration";
}

std::string pool_name(const PoolAccount& p) {
  std::string s = std::string("the ") + snapshot::to_string(p.pool) + " pool";
  if (p.is_private())
    s = std::string("private pool (") + std::to_string(p.pool_id[0]) + ", " + std::to_string(p.pool_id[1]) + ") " +
        snapshot::to_string(p.pool);
  return s + " on stream " + stream_name(p.stream);
}

std::string site_list(const std::vector<SiteBytes>& s, size_t n, uint64_t base) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < n; ++i)
    out += (i ? ", " : "") + s[i].site + " " + human_bytes(s[i].live_bytes) + " (" + pct(s[i].live_bytes, base) + ")";
  return out;
}

constexpr const char* kFreeEarlier =
    "free the pinning tensors earlier: `del x` as soon as a tensor is no longer needed (don't hold onto tensors "
    "you don't need), or keep temporaries inside a function so they go out of scope";

Words leak_words(FindingKind kind, const DeviceAnalysis& d, uint64_t growth) {
  LeakPattern want = kind == FindingKind::LeakAutogradHistory ? LeakPattern::AutogradHistory
                     : kind == FindingKind::LeakTensorList    ? LeakPattern::TensorList
                                                              : LeakPattern::Unclassified;
  std::string tiny, largest;
  double sum = 0;
  size_t tiny_n = 0;
  for (const auto& l : d.leaks) {
    if (l.pattern != want) continue;
    sum += l.growth_bytes_per_iteration;
    if (want == LeakPattern::AutogradHistory && l.tiny) {
      if (tiny_n++ < 3) tiny += (tiny.empty() ? "" : " and ") + l.site;
    } else if (largest.empty()) {
      largest = l.site;
    }
  }
  if (largest.empty()) largest = tiny;
  // One growth figure: the iterations line's trend, when memory grows overall.
  std::string head = growth > 0 ? "Memory grows by " + per_iter(double(growth)) + " over " +
                                      plural(d.iterations.count, "iteration", "iterations")
                                : "Across " + plural(d.iterations.count, "iteration", "iterations");
  std::string kept = " These sites keep " + per_iter(sum) + ".";
  Words w;
  switch (want) {
    case LeakPattern::AutogradHistory:
      w.message = head + ": tiny tensors from " + tiny +
                  " are kept every iteration together with the forward "
                  "activations of their graph" +
                  (largest.empty() || largest == tiny ? "" : " (largest from " + largest + ")") + "." + kept +
                  " This is accumulating autograd history across the training loop (e.g. `total_loss += loss`).";
      w.advice =
          "Accumulate a Python number instead: `total_loss += loss.item()` or `float(loss)` (or "
          "`loss.detach()`), so each step's graph can be freed.";
      break;
    case LeakPattern::TensorList:
      w.message = head + ": tensors allocated at " + largest +
                  " are kept alive from every iteration, as a list or "
                  "other container that grows would keep them." +
                  kept;
      w.advice =
          "Keep Python numbers (`.item()`), or `.detach().cpu()` copies, instead of GPU tensors; `del` "
          "references you no longer need.";
      break;
    case LeakPattern::Unclassified:
      w.message = head + ": allocations at " + largest +
                  " survive from iteration after iteration; memsnap cannot "
                  "tell from the trace which reference keeps them (see `leaks` for the evidence)." +
                  kept;
      w.advice =
          "Find what holds these tensors across steps (lists, caches, attributes on `self`, accumulated "
          "losses) and `del` them or keep `.item()` values instead.";
      break;
  }
  return w;
}

// ---- finding_words, one group of kinds at a time ------------------------------------------

// An OOM: its cause with the evidence and the first fix, or allocation resumed
// inside the handler.
Words oom_words(const Finding& f, const DeviceAnalysis& d) {
  Words w;
  const OomReport& r = d.ooms.explained[f.index];
  std::string when = r.from_trace ? "at event " + with_commas(*r.event_index) : "(dumped state)";
  if (f.kind == FindingKind::OomRetryInExcept) {
    w.message = "After the OOM " + when + ", allocation resumed at " + r.site +
                " while the failed step's tensors were still alive.";
    w.advice = fix_words(OomFix::RetryOutsideExcept, r);
    return w;
  }
  w.message = "Out of memory " + when + " allocating " + human_bytes(r.requested_bytes) +
              (r.from_trace ? " from " + r.site : std::string()) + ": " + cause_evidence(r.cause(), r, d.leaks);
  if (!r.fixes.empty()) w.advice = fix_words(r.fixes.front(), r);
  return w;
}

// Growth across iterations that no leak pattern claims: sites that grow with the
// input, or growth no single site explains.
Words growth_words(const Finding& f, const DeviceAnalysis& d) {
  Words w;
  if (f.kind == FindingKind::GrowthUnattributed) {
    w.message = "Allocated memory at the start of each iteration grows by " + per_iter(double(f.bytes)) + " over " +
                plural(d.iterations.count, "iteration", "iterations") +
                ", but no single site retains allocations from iteration after iteration.";
    w.advice = "Compare two snapshots a few steps apart with `memsnap diff` to see which sites grow.";
    return w;
  }
  std::string what;
  for (size_t i = 0; i < d.growing.size() && i < 3; ++i) {
    const auto& g = d.growing[i];
    what += std::string(i ? "; " : "") + g.site + " from " + human_bytes(g.first_bytes) + " (iteration " +
            std::to_string(g.first_iteration) + ") to " + human_bytes(g.last_bytes) + " (iteration " +
            std::to_string(g.last_iteration) + ")";
  }
  w.message = "Allocations grow iteration after iteration: " + what +
              ". Memory that grows with the input, such as the sequence length, raises the peak every step until "
              "it does not fit.";
  w.advice =
      "Bound the input's length (truncate, or bucket inputs by length); for RNNs, truncated "
      "backpropagation through time (detach the hidden state every k steps).";
  return w;
}

// One forward pass that keeps its activations and no backward to free them.
Words one_pass_words(const Finding& f, const DeviceAnalysis& d) {
  Words w;
  const Structure& s = *d.structure;
  w.message = "One forward pass keeps the activations of every one of its " + with_commas(s.repeats) +
              " repeated blocks" + (s.loop_site.empty() ? std::string() : " (" + s.loop_site + ")") + ": " +
              human_bytes(f.bytes) +
              " is still allocated at the dump and no backward pass follows to free it. "
              "With autograd on, each layer's output is saved for a backward that never runs.";
  if (s.kept_autocast_cache_bytes)
    w.message += " Another " + human_bytes(s.kept_autocast_cache_bytes) +
                 " kept is autocast's cache (at::autocast::cached_cast: the weights cast to fp16 once per "
                 "autocast region): expected with torch.autocast, and torch.no_grad() does not free it.";
  w.advice =
      "Evaluate under `torch.no_grad()` or `torch.inference_mode()`: each activation is then freed as "
      "soon as the next layer has used it.";
  return w;
}

// ---- churn

Words retry_words(const Churn& c) {
  Words w;
  if (c.retries == 1)
    w.message =
        "cudaMalloc failed once and the allocator emptied its cache and retried: " + human_bytes(c.retry_freed_bytes) +
        " in " + plural(c.retry_segments, "cached segment", "cached segments") +
        " went back to CUDA, followed at once by a new segment for the request that failed.";
  else
    w.message = "cudaMalloc failed " + plural(c.retries, "time", "times") +
                " and each time the allocator emptied its cache and retried: " + human_bytes(c.retry_freed_bytes) +
                " in " + plural(c.retry_segments, "cached segment", "cached segments") +
                " went back to CUDA (the largest flush " + human_bytes(c.retry_largest_burst_bytes) +
                "), each flush followed at once by a new segment for the request that failed.";
  if (!c.retry_sites.empty()) {
    const RetrySite& r = c.retry_sites.front();
    if (c.retries == 1)
      w.message += " The " + human_bytes(r.largest_request_bytes) + " request came from " + r.site + ".";
    else
      w.message += " The most from " + r.site + ": " + plural(r.retries, "retry", "retries") + ", requests up to " +
                   human_bytes(r.largest_request_bytes) + ".";
  }
  w.message += c.retries == 1 ? " A flush synchronises the device and frees memory the job needs again: it ran at "
                                "the edge of memory."
                              : " Every flush synchronises the device and frees memory the job needs again: it runs at "
                                "the edge of memory.";
  w.advice =
      "Leave headroom: a smaller batch or sequence, or free tensors earlier (`del x` as soon as it is no longer "
      "needed); PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True lets the cache grow without flushing it.";
  return w;
}

Words empty_cache_words(const Churn& c) {
  Words w;
  const EmptyCacheSite& top = c.empty_cache_sites.front();
  w.message = "torch.cuda.empty_cache() is called at " + top.site + ": " + plural(top.calls, "call", "calls") +
              " returned " + human_bytes(top.returned_bytes) + " (" + plural(top.segments, "segment", "segments") +
              ") to CUDA";
  if (c.empty_cache_sites.size() > 1)
    w.message += "; " + plural(c.empty_cache_calls, "call", "calls") + " in all from " +
                 plural(c.empty_cache_sites.size(), "site", "sites") + " returned " +
                 human_bytes(c.empty_cache_returned_bytes);
  if (c.empty_cache_calls == 1) {
    // One call in the trace is no evidence of a loop: say what it cost, and when it is right.
    w.message += ", and after it the allocator asked CUDA again for " + human_bytes(c.reallocated_bytes) + " (" +
                 plural(c.reallocations, "new segment", "new segments") +
                 "): the call synchronised the device, and the memory was allocated again.";
    w.advice =
        "If this call runs inside a loop (every step, every model), remove it: PyTorch's cache reuses freed "
        "memory without it. Once, after a phase whose memory another process needs, it is right.";
    return w;
  }
  w.message += ", and after the first call the allocator asked CUDA again for " + human_bytes(c.reallocated_bytes) +
               " (" + plural(c.reallocations, "new segment", "new segments") +
               "). Each call synchronises the device and the memory is allocated again: it costs time and "
               "saves nothing.";
  w.advice =
      "Remove the empty_cache() call from the loop: PyTorch's cache reuses freed memory without it. Call it "
      "once, after a phase whose memory another process needs.";
  return w;
}

// ---- how the model is built

Words big_layer_words(const BigLayer& b) {
  Words w;
  std::string parts = b.multiple >= 4   ? "weight + gradient + Adam's two state tensors"
                      : b.multiple == 3 ? "weight + gradient + optimizer state"
                      : b.multiple == 2 ? "weight + gradient"
                                        : "weight";
  w.message = "One parameter, constructed at " + b.site + ", holds " + human_bytes(b.weight_bytes) + "; " + parts +
              " = " + std::to_string(b.multiple) + "x = " + human_bytes(b.footprint_bytes) + ", " +
              pct(b.footprint_bytes, b.base_bytes) + " of " + (b.of_device ? "the device (" : "the peak (") +
              human_bytes(b.base_bytes) + "). All other parameters built in the trace hold " +
              human_bytes(b.other_parameters_bytes) + ".";
  w.advice =
      "nn.Linear(m, n) uses O(nm) memory and training needs at least twice that for the gradient: make the "
      "layer smaller (fewer features, a low-rank factorisation or bottleneck), shard it (FSDP, tensor "
      "parallel), or use a lighter optimizer state (SGD, 8-bit Adam, Adafactor).";
  return w;
}

Words model_per_step_words(const ModelPerStep& m) {
  Words w;
  w.message = "A module is built anew " + plural(m.builds, "time", "times") + " at " + m.site +
              (m.constructor.empty() ? std::string() : " (constructor " + m.constructor + ")") + ": each build " +
              "allocates " + human_bytes(m.bytes_per_build) + " of parameters, " + human_bytes(m.total_bytes) +
              " in all, " + human_bytes(m.still_allocated_bytes) + " of it still allocated at the dump.";
  w.advice =
      "Build the module once, before the loop (in the parent's __init__, not in forward or the step), and "
      "reuse it; if a fresh module each step is intended, drop the old one (`del`) before building the next.";
  return w;
}

// ---- the allocator's state at the dump

// Without a known device size (an OOM's or --capacity), "near its capacity" cannot be said.
std::string no_pressure_words(bool capacity_known) {
  return capacity_known ? "None needed while the job fits: it neither ran out of memory nor came near its device's "
                          "capacity, so this cached memory cost it nothing."
                        : "None needed while the job fits: it did not run out of memory and the allocator never "
                          "had to flush its cache. How close it came is unknown without the device's size: "
                          "--capacity SIZE judges the headroom.";
}

Words stranded_words(const Accounting& a, bool expandable, bool pressure, bool capacity_known) {
  Words w;
  w.message = human_bytes(a.stranded_bytes) + " (" + pct(a.stranded_bytes, a.reserved_bytes) +
              " of reserved memory) is stranded: free blocks in " +
              plural(a.stranding_segments, "segment", "segments") +
              " that still hold allocated blocks, so neither the allocator nor torch.cuda.empty_cache() can "
              "return it to CUDA";
  if (expandable) w.message += " (partial pages next to allocated blocks)";
  w.message += ".";
  if (!a.pinning_sites.empty()) {
    const PinningSite& top = a.pinning_sites.front();
    w.message += " It is pinned by " + plural(a.pinning_blocks, "allocated block", "allocated blocks") +
                 "; the most from " + top.site + ": " + plural(top.blocks, "block", "blocks") + " of " +
                 human_bytes(top.live_bytes) + " strand " + human_bytes(top.stranded_bytes) + ".";
  }
  w.advice = !pressure    ? no_pressure_words(capacity_known)
             : expandable ? "Expandable segments are on, so whole free pages already go back to CUDA; " +
                                std::string(kFreeEarlier) + "."
                          : "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (segments then grow and shrink "
                            "page by page instead of being cached split); or " +
                                std::string(kFreeEarlier) + ".";
  return w;
}

Words fragmented_pool_words(const PoolAccount& p, bool expandable, const snapshot::AllocatorSettings& settings,
                            bool pressure, bool capacity_known) {
  Words w;
  char frag[16];
  std::snprintf(frag, sizeof frag, "%.2f", p.fragmentation);
  w.message = pool_name(p) + " strands " + human_bytes(p.stranded_bytes) +
              " of free memory next to allocated "
              "blocks, but the largest stranded piece is " +
              human_bytes(p.largest_stranded_block_bytes) + " (fragmentation " + frag +
              "): a request above that size on this stream needs new memory from CUDA "
              "even though the cache holds more bytes in total.";
  if (!pressure)
    w.advice = no_pressure_words(capacity_known);
  else if (expandable)
    w.advice =
        "Expandable segments are on, so the holes lie between allocated blocks: allocate long-lived "
        "tensors before short-lived ones so they do not interleave, and " +
        std::string(kFreeEarlier) + ".";
  else if (settings.max_split_size)
    w.advice = "max_split_size is already " + human_bytes(*settings.max_split_size) +
               "; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True avoids this fragmentation altogether.";
  else
    w.advice =
        "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, which avoids this fragmentation altogether; "
        "before PyTorch 2.1, max_split_size_mb:N (blocks of N MiB or more are then never split, so they "
        "stay whole for large requests).";
  return w;
}

// " (6 whole segments)", or " (6 whole segments, 58.2 GiB, and free pages of 19.8 GiB
// in 1 segment that still holds allocated blocks)".
std::string releasable_where(const Accounting& a) {
  std::string whole = a.releasable_segments ? plural(a.releasable_segments, "whole segment", "whole segments") : "";
  if (!a.releasable_partial_bytes) return whole.empty() ? "" : " (" + whole + ")";
  std::string partial = "free pages of " + human_bytes(a.releasable_partial_bytes) + " in " +
                        plural(a.releasable_partial_segments, "segment that still holds allocated blocks",
                               "segments that still hold allocated blocks");
  if (whole.empty()) return " (" + partial + ")";
  return " (" + whole + ", " + human_bytes(a.releasable_whole_bytes) + ", and " + partial + ")";
}

Words releasable_words(const Accounting& a) {
  Words w;
  w.message = human_bytes(a.releasable_bytes) + " (" + pct(a.releasable_bytes, a.reserved_bytes) +
              " of reserved memory) is cached but holds no allocated block" + releasable_where(a) +
              ". PyTorch reuses it without a new cudaMalloc, so it is not a leak, but nvidia-smi and other "
              "processes see it as used.";
  w.advice =
      "If another process needs the GPU, call torch.cuda.empty_cache() after the phase that needed the "
      "memory; it returns " +
      human_bytes(a.empty_cache_bytes()) + " to CUDA" +
      (a.empty_cache_pending_bytes
           ? " (these bytes and " + human_bytes(a.empty_cache_pending_bytes) + " of pending frees it waits for first)"
           : std::string()) +
      ".";
  return w;
}

Words pending_free_words(const Accounting& a) {
  Words w;
  w.message = human_bytes(a.pending_free_bytes) + " (" + pct(a.pending_free_bytes, a.reserved_bytes) +
              " of reserved memory) was freed by the program but awaits other streams (record_stream), so it "
              "cannot be reused yet.";
  w.advice =
      "It becomes free when the other streams' work completes; synchronize (torch.cuda.synchronize() or "
      "a stream wait) before the next large allocation, and prefer a stream wait over record_stream for "
      "large tensors.";
  return w;
}

// ---- the file itself

Words trace_words(const DeviceAnalysis& d) {
  Words w;
  w.message = "The trace does not replay cleanly to the dumped state: event " +
              with_commas(d.trace.first_mismatch->event) + ": " + d.trace.first_mismatch->what + ".";
  w.advice =
      "Figures derived from the trace (peak, timeline, leaks) may be off around that event; the dumped "
      "state itself is unaffected.";
  return w;
}

}  // namespace

std::string cause_evidence(OomCause cause, const OomReport& r, const std::vector<Leak>& leaks) {
  const uint64_t rounded = r.requested_bytes;
  std::string where = "stream " + stream_name(r.stream) + " in the " + snapshot::to_string(r.pool) + " pool";
  switch (cause) {
    case OomCause::Fragmentation: {
      std::string ev = human_bytes(r.free_cached_bytes) + " of reserved memory was cached free, more than the " +
                       human_bytes(rounded) + " request, but the largest free block on " + where + " was " +
                       human_bytes(r.largest_free_block_bytes) + ".";
      if (r.free_cached_same_pool_bytes < rounded)
        ev += " Most of the free memory sat in another pool or on another stream (" +
              human_bytes(r.free_cached_same_pool_bytes) + " on " + where + "), where requests cannot reuse it.";
      if (!r.pinning_sites.empty()) {
        ev += " The free blocks are pinned in their segments by live tensors from ";
        for (size_t i = 0; i < r.pinning_sites.size() && i < 3; ++i)
          ev += (i ? ", " : "") + r.pinning_sites[i].site + " (" + human_bytes(r.pinning_sites[i].live_bytes) +
                " live, stranding " + human_bytes(r.pinning_sites[i].stranded_bytes) + ")";
        ev += ".";
      }
      return ev;
    }
    case OomCause::SegmentRounding: {
      std::string what = r.expandable ? human_bytes(r.map_bytes) + " of new pages for it (expandable segments map " +
                                            (r.pool == snapshot::Pool::Small ? "2 MiB" : "20 MiB") + " pages in the " +
                                            snapshot::to_string(r.pool) + " pool)"
                                      : "a " + human_bytes(r.segment_request_bytes) + " segment for it" +
                                            (rounded < rules::kMinLargeAlloc && rounded > rules::kSmallSize
                                                 ? " (every request between 1 MiB and 10 MiB gets a 20 MiB segment)"
                                                 : "");
      return "The " + human_bytes(rounded) + " request would have fit in the " + human_bytes(*r.device_free_bytes) +
             " the device had free, but the allocator must map " + what + ".";
    }
    case OomCause::Leak: {
      std::string ev = "Live memory grew across iterations up to the OOM: ";
      for (size_t i = 0; i < leaks.size() && i < 3; ++i)
        ev += (i ? ", " : "") + leaks[i].site + " (+" + per_iter(leaks[i].growth_bytes_per_iteration) + ")";
      return ev + ".";
    }
    case OomCause::External: {
      uint64_t used = *r.capacity_bytes > *r.device_free_bytes ? *r.capacity_bytes - *r.device_free_bytes : 0;
      uint64_t outside = used > r.reserved_bytes ? used - r.reserved_bytes : 0;
      return "Of the device's " + human_bytes(*r.capacity_bytes) + ", " + human_bytes(*r.device_free_bytes) +
             " was free and PyTorch's caching allocator reserved " + human_bytes(r.reserved_bytes) + ": " +
             human_bytes(outside) + " (" + pct(outside, *r.capacity_bytes) +
             ") is held outside it (the CUDA context, NCCL and cuBLAS workspaces, other libraries or other processes).";
    }
    case OomCause::Capacity: {
      uint64_t base = r.capacity_bytes ? *r.capacity_bytes : r.reserved_bytes;
      std::string of = r.capacity_bytes ? "of the device" : "of reserved memory";
      std::string ev = "Live tensors hold " + human_bytes(r.allocated_bytes) + " (" + pct(r.allocated_bytes, base) +
                       " " + of + "); only " + human_bytes(r.free_cached_bytes) + " was cached free";
      if (r.device_free_bytes) ev += " and the device had " + human_bytes(*r.device_free_bytes) + " free";
      if (!r.top_sites.empty()) ev += ". Largest holders: " + site_list(r.top_sites, 3, base);
      return ev + ".";
    }
  }
  return "";
}

std::string fix_words(OomFix fix, const OomReport& r) {
  switch (fix) {
    case OomFix::ExpandableSegments:
      return "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the allocator then grows segments page by page "
             "instead of caching split ones and creating whole new segments.";
    case OomFix::MaxSplitSize:
      return "Set PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:N so large cached blocks are not split.";
    case OomFix::FreePinningTensors:
      return "Free the tensors that pin the fragmented memory earlier (`del`), e.g. those from " +
             (r.pinning_sites.empty() ? std::string("the pinning sites") : r.pinning_sites.front().site) + ".";
    case OomFix::MoreHeadroom:
      return "Leave more headroom: expandable segments are already on, so the request needs whole free pages.";
    case OomFix::StopKeeping:
      return "Stop keeping tensors across iterations: accumulate `loss.item()` or `float(loss)`, `del` what you no "
             "longer need, run evaluation under `torch.no_grad()`.";
    case OomFix::ExternalMemory:
      return "Look for other processes on the GPU (nvidia-smi), and memory allocated outside PyTorch's caching "
             "allocator (NCCL buffers: NCCL_BUFFSIZE; cuBLAS workspaces: CUBLAS_WORKSPACE_CONFIG).";
    case OomFix::ReduceLive:
      return "Reduce what is live at once: a smaller batch or sequence, activation checkpointing "
             "(torch.utils.checkpoint), mixed precision (torch.autocast, bf16), or sharding/offloading the largest "
             "holders.";
    case OomFix::CheckpointActivations:
      return "Activations hold " + human_bytes(r.role_fix_bytes) + " (" + pct(r.role_fix_bytes, r.allocated_bytes) +
             " of allocated): recompute them in the backward with activation checkpointing "
             "(torch.utils.checkpoint) on the modules that make them, or run a smaller micro-batch (gradient "
             "accumulation keeps the effective batch).";
    case OomFix::ShardModelState:
      return "Weights, gradients and optimizer state hold " + human_bytes(r.role_fix_bytes) + " (" +
             pct(r.role_fix_bytes, r.allocated_bytes) +
             " of allocated), which a smaller batch does not shrink: shard them across GPUs (ZeRO, FSDP), use a "
             "lighter optimizer (Adam keeps two states per parameter: 8-bit Adam, Adafactor or SGD keep less), or "
             "keep the weights in bf16.";
    case OomFix::LoadWeightsSharded:
      return "Weights being loaded hold " + human_bytes(r.role_fix_bytes) + " (" +
             pct(r.role_fix_bytes, r.allocated_bytes) +
             " of allocated) before any step runs: the model does not fit this GPU as it is loaded. Load it sharded "
             "across GPUs (device_map, FSDP), offload part of it to the CPU, or quantize it (8-bit, 4-bit).";
    case OomFix::KvCacheSetting:
      return "The KV cache holds " + human_bytes(r.role_fix_bytes) + " (" + pct(r.role_fix_bytes, r.allocated_bytes) +
             " of allocated): the serving engine sizes it from its memory setting, not from the requests (vLLM: "
             "gpu_memory_utilization, max_model_len; SGLang: mem_fraction_static).";
    case OomFix::RetryOutsideExcept:
      return "Allocations resumed right after the OOM while the failed step's tensors were still alive: if your OOM "
             "handler retries inside the `except` clause, the exception keeps that step's tensors alive. Set a flag "
             "in `except` and retry after it.";
  }
  return "";
}

std::vector<std::string> message_check_words(const analysis::OomMessageCheck& c, const OomReport& r) {
  const analysis::OomMessage& m = c.said;
  auto said = [](const analysis::PrintedSize& s) { return torch_format_size(s.bytes); };
  auto verdict = [](bool same, uint64_t here) {
    return same ? std::string("matches") : "differs: " + human_bytes(here) + " here";
  };
  std::vector<std::string> out;
  std::string head = "Tried to allocate " + said(m.tried);
  if (m.device) head += " on GPU " + std::to_string(*m.device);
  head += c.request_matches ? ": this request"
                            : ": not this request (it needed " + human_bytes(r.segment_request_bytes) + ")";
  out.push_back(head);
  if (c.allocated_matches)
    out.push_back("allocated by PyTorch " + said(*m.allocated) + ": " +
                  verdict(*c.allocated_matches, r.allocated_bytes));
  if (c.reserved_matches)
    out.push_back("reserved by PyTorch " + said(*m.reserved) + ": " + verdict(*c.reserved_matches, r.reserved_bytes));
  if (c.free_matches)
    out.push_back("device free " + said(*m.free) + ": " + verdict(*c.free_matches, r.device_free_bytes.value_or(0)));
  else if (m.free)
    out.push_back("device free " + said(*m.free) + (m.capacity ? " of " + said(*m.capacity) : std::string()) +
                  " (the snapshot does not record it: taken from the message)");
  if (c.other_processes_bytes)
    out.push_back(*c.other_processes_bytes
                      ? "other processes held " + human_bytes(*c.other_processes_bytes) +
                            " (capacity - free - this process's " + said(*m.process) + ")"
                      : "other processes held nothing the message's rounding does not account for");
  if (c.outside_allocator_bytes)
    out.push_back(*c.outside_allocator_bytes
                      ? "this process held " + human_bytes(*c.outside_allocator_bytes) +
                            " outside PyTorch's allocator (CUDA context, NCCL, cuBLAS workspaces, other libraries)"
                      : "this process held nothing outside PyTorch's allocator beyond the message's rounding");
  if (c.state_differs()) {
    out.push_back(r.from_trace
                      ? "the state at this OOM is not the message's: the message is of another OOM than the trace's "
                        "last, or of another run"
                      : "the dumped state is not the state at the error (dumped after the exception freed memory, or "
                        "before the error): the causes above describe the dumped state");
    if (c.message_cause) {
      uint64_t unallocated = m.reserved->bytes - m.allocated->bytes;
      out.push_back(*c.message_cause == analysis::OomCause::Fragmentation
                        ? "by the message's own figures, fragmentation: PyTorch held " +
                              torch_format_size(unallocated) + " reserved but unallocated, enough for the " +
                              said(m.tried) + " it needed, but not in one free block on the request's stream and pool"
                        : "by the message's own figures, capacity: PyTorch held only " +
                              torch_format_size(unallocated) + " reserved but unallocated, less than the " +
                              said(m.tried) + " it needed");
    }
  }
  return out;
}

std::string torch_message(const OomReport& r) {
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

Words finding_words(const Finding& f, const DeviceAnalysis& d, const snapshot::AllocatorSettings& settings) {
  const Accounting& a = d.accounting;
  const bool expandable = a.regime != Regime::Classic || settings.expandable_segments;
  switch (f.kind) {
    case FindingKind::OomFragmentation:
    case FindingKind::OomSegmentRounding:
    case FindingKind::OomLeak:
    case FindingKind::OomExternal:
    case FindingKind::OomCapacity:
    case FindingKind::OomRetryInExcept: return oom_words(f, d);
    case FindingKind::LeakAutogradHistory:
    case FindingKind::LeakTensorList:
    case FindingKind::LeakGrowth: return leak_words(f.kind, d, f.bytes);
    case FindingKind::GrowingWithInput:
    case FindingKind::GrowthUnattributed: return growth_words(f, d);
    case FindingKind::ActivationsKeptWithoutBackward: return one_pass_words(f, d);
    case FindingKind::StaleGradientsAtPeak:
    case FindingKind::GradientsNeverZeroed:
    case FindingKind::ActivationsKeptAfterBackward:
    case FindingKind::KvCacheReserved: return role_finding_words(f, d);
    case FindingKind::StrandedFreeMemory:
      return stranded_words(a, expandable, d.memory_pressure, d.capacity_bytes.has_value());
    case FindingKind::FragmentedPool:
      return fragmented_pool_words(a.pools[f.index], expandable, settings, d.memory_pressure,
                                   d.capacity_bytes.has_value());
    case FindingKind::CacheFlushRetry: return retry_words(d.churn);
    case FindingKind::EmptyCacheInLoop: return empty_cache_words(d.churn);
    case FindingKind::BigLayer: return big_layer_words(*d.big_layer);
    case FindingKind::ModelPerStep: return model_per_step_words(*d.model_per_step);
    case FindingKind::ReleasableCache: return releasable_words(a);
    case FindingKind::PendingFree: return pending_free_words(a);
    case FindingKind::TraceInconsistent: return trace_words(d);
  }
  return {};
}

std::string iteration_method(const Iterations& it) {
  switch (it.method) {
    case IterationMethod::Annotation: return "annotation " + it.name;
    case IterationMethod::Marker: return "marker " + it.name;
    case IterationMethod::TrainingLoop: return "repeating allocation sequence";
    case IterationMethod::InferenceLoop: return "repeated passes";
    case IterationMethod::None: return "";
  }
  return "";
}

std::string structure_kind(const Structure& s, const Iterations& it) {
  if (!s.compile_range.empty()) return "torch_compile_autotuning";
  if (it.reason == NoIterations::KeepsActivations || it.reason == NoIterations::InsideOneCall) return "layers";
  if (it.reason == NoIterations::PartialRepeat)
    return s.keeps_activations && !s.backward_seen ? "layers" : "loop_within_step";
  return "repeated_blocks";
}

std::string structure_words(const Structure& s, const Iterations& it) {
  std::string blocks = with_commas(s.repeats) + " repeated blocks of " +
                       plural(s.period_allocations, "allocation", "allocations") +
                       (s.loop_site.empty() ? std::string() : " from " + s.loop_site);
  if (!s.compile_range.empty())
    return "torch.compile autotuning (" + analysis::range_label(s.compile_range) + "), " + blocks +
           ": kernels benchmarked while compiling, not a loop of the program";
  switch (it.reason) {
    case NoIterations::KeepsActivations:
    case NoIterations::InsideOneCall: return "one forward pass, " + blocks + ": layers";
    case NoIterations::PartialRepeat:
      return s.keeps_activations && !s.backward_seen ? "one forward pass, " + blocks + ": layers"
                                                     : "a loop over part of the trace, " + blocks;
    case NoIterations::NoOptimizer: return blocks + " with backward work and no optimizer step";
    default: return blocks + ", followed by other work";
  }
}

std::string iteration_evidence(const Iterations& it) {
  switch (it.reason) {
    case NoIterations::Claimed:
      switch (it.method) {
        case IterationMethod::Annotation: return with_commas(it.annotations) + " optimizer steps annotated in the file";
        case IterationMethod::Marker: return with_commas(it.count) + " iterations start at '" + it.name + "'";
        case IterationMethod::TrainingLoop:
          return with_commas(it.period_allocations) + " allocations per iteration; " + pct(it.match_ratio) +
                 " of allocation stacks repeat one iteration later" +
                 (it.steady_from ? " (from allocation " + with_commas(it.steady_from) + " on)" : std::string()) +
                 "; each iteration has backward work and the optimizer";
        case IterationMethod::InferenceLoop:
          return with_commas(it.period_allocations) + " allocations per pass; " + pct(it.match_ratio) +
                 " of allocation stacks repeat one pass later, each pass frees what it allocates, and the passes "
                 "run to the end of the trace";
        case IterationMethod::None: break;
      }
      return "";
    case NoIterations::NoTrace: return "the device has no trace";
    case NoIterations::TooFewAllocations:
      return "too few allocations in the trace (" + with_commas(it.allocations) + ") to find a repeating step";
    case NoIterations::NoRepeat: return "no allocation stack repeats in the trace";
    case NoIterations::WeakRepeat:
      return "no repeating step: the best candidate period repeats only " + pct(it.match_ratio) +
             " of the allocation stacks (80% needed)";
    case NoIterations::PartialRepeat:
      return "the allocation sequence repeats every " + with_commas(it.period_allocations) +
             " allocations only from allocation " + with_commas(it.steady_from) + " of " + with_commas(it.allocations) +
             " on: a loop within one pass or step, not whole iterations";
    case NoIterations::KeepsActivations:
      return "each repeated block keeps " + pct(it.kept_share) +
             " of the bytes it allocates (activations saved for backward): layers of one pass, not iterations";
    case NoIterations::InsideOneCall:
      return "the repeated blocks all run inside one call of an nn.Module: its layers, not iterations";
    case NoIterations::NoBackwardWork:
      return "the repeated blocks do no backward work and other work follows them: not whole passes of a loop";
    case NoIterations::NoOptimizer:
      return "the repeated blocks do backward work but no optimizer step runs in them: not whole training steps";
    case NoIterations::OneBoundary: return "only one iteration boundary in the trace";
    case NoIterations::FewAnnotations:
      return "the file annotates " + with_commas(it.annotations) +
             " optimizer step(s): too few to delimit whole iterations";
    case NoIterations::NoStacks:
      return "the trace was recorded without stacks (" + with_commas(it.allocations_with_stack) + " of " +
             with_commas(it.allocations) +
             " allocations carry one): the file cannot tell training steps from inference passes or from the "
             "layers of one pass, so no repeat is named either (annotations in the file, or --iteration-marker "
             "with an annotation's name, delimit iterations)";
    case NoIterations::MarkerNotFound:
      return "'" + it.name +
             "' opens fewer than two iterations in the trace (no annotation of that name and fewer "
             "than two allocations at that site or function)";
  }
  return "";
}

std::string dropped_events_words(const analysis::TraceSummary& t, const snapshot::AllocatorSettings& settings) {
  using analysis::DroppedEvents;
  switch (t.dropped) {
    case DroppedEvents::NotShown: return "";
    case DroppedEvents::Overflowed:
      return "the trace's ring buffer overflowed (allocator_settings.trace_alloc_overflowed): older events were "
             "dropped";
    case DroppedEvents::Full:
      return "the trace holds trace_alloc_max_entries (" +
             with_commas(static_cast<uint64_t>(settings.trace_alloc_max_entries.value_or(0))) +
             ") entries: its ring buffer is full and older events were dropped";
    case DroppedEvents::OneEntry:
      // 2.1+ keys (allocator_settings, time_us) mean the default was not the cause
      if (settings.present || t.first_time_us)
        return "the trace is one entry after earlier allocations: recording kept a ring buffer of one entry "
               "(trace_alloc_max_entries=1), so older events are not in the file";
      return "the trace is one entry after earlier allocations: the one-event ring buffer PyTorch 2.0 keeps by default "
             "(_record_memory_history(True), trace_alloc_max_entries=1), so older events are not in the file";
  }
  return "";
}

}  // namespace memsnap::report::detail

namespace memsnap::report {

std::string iteration_evidence(const analysis::Iterations& it) {
  return detail::iteration_evidence(it);
}

std::string dropped_events_words(const analysis::TraceSummary& t, const snapshot::AllocatorSettings& settings) {
  return detail::dropped_events_words(t, settings);
}

}  // namespace memsnap::report
