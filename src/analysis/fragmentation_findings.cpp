// Fragmentation findings in plain words, each with the fix PyTorch's docs and FAQ give.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "memsnap/analysis/fragmentation.hpp"
#include "memsnap/util/units.hpp"

namespace memsnap::analysis {

namespace {

std::string percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "0%";
  return std::to_string(static_cast<int>(std::lround(100.0 * double(part) / double(whole)))) + "%";
}

std::string plural(uint64_t n, const char* one, const char* many) {
  return with_commas(n) + " " + (n == 1 ? one : many);
}

bool passes(uint64_t bytes, uint64_t reserved, double share, uint64_t min_bytes) {
  return bytes >= min_bytes && double(bytes) >= share * double(reserved);
}

std::string pool_name(const PoolFragmentation& p) {
  std::string s = std::string("the ") + snapshot::to_string(p.pool) + " pool";
  if (p.is_private())
    s = std::string("private pool (") + std::to_string(p.pool_id[0]) + ", " + std::to_string(p.pool_id[1]) + ") " +
        snapshot::to_string(p.pool);
  char stream[32];
  std::snprintf(stream, sizeof stream, p.stream == 0 ? "%llu" : "0x%llx", static_cast<unsigned long long>(p.stream));
  return s + " on stream " + stream;
}

constexpr const char* kFreeEarlier =
    "free the pinning tensors earlier: `del x` as soon as a tensor is no longer needed (don't hold onto tensors "
    "you don't need), or keep temporaries inside a function so they go out of scope";

}  // namespace

std::vector<Finding> fragmentation_findings(const Fragmentation& f, const snapshot::AllocatorSettings& settings,
                                            const FragmentationThresholds& t) {
  std::vector<Finding> out;
  const uint64_t reserved = f.reserved_bytes;
  const bool expandable = f.regime != Regime::Classic || settings.expandable_segments;

  if (passes(f.stranded_bytes, reserved, t.stranded_share, t.stranded_min_bytes)) {
    Finding x;
    x.kind = "stranded_free_memory";
    x.severity = double(f.stranded_bytes) >= t.stranded_share_critical * double(reserved) ? Severity::Critical
                                                                                          : Severity::Warning;
    x.message = human_bytes(f.stranded_bytes) + " (" + percent(f.stranded_bytes, reserved) +
                " of reserved memory) is stranded: free blocks in " +
                plural(f.stranding_segments, "segment", "segments") + " that still hold live blocks, so neither "
                "the allocator nor torch.cuda.empty_cache() can return it to CUDA";
    if (expandable) x.message += " (partial pages next to live blocks)";
    x.message += ".";
    if (!f.pinning_sites.empty()) {
      const PinningSite& top = f.pinning_sites.front();
      x.message += " It is pinned by " + plural(f.pinning_blocks, "live block", "live blocks") + "; the most from " +
                   top.site + ": " + plural(top.blocks, "block", "blocks") + " of " + human_bytes(top.live_bytes) +
                   " strand " + human_bytes(top.stranded_bytes) + ".";
    }
    if (expandable) {
      x.advice = "Expandable segments are on, so whole free pages already go back to CUDA; " + std::string(kFreeEarlier) +
                 ".";
    } else {
      x.advice = "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (segments then grow and shrink page by page "
                 "instead of being cached split); or " + std::string(kFreeEarlier) + ".";
    }
    out.push_back(std::move(x));
  }

  // The worst fragmented pool (by stranded bytes) among those that pass. Free bytes in
  // wholly free segments do not make a pool fragmented in practice: before failing a
  // cudaMalloc the allocator frees them and retries.
  const PoolFragmentation* worst = nullptr;
  for (const auto& p : f.pools)
    if (p.fragmentation >= t.pool_fragmentation &&
        passes(p.stranded_bytes, reserved, t.pool_stranded_share, t.pool_stranded_min_bytes) &&
        (!worst || p.stranded_bytes > worst->stranded_bytes))
      worst = &p;
  if (worst) {
    Finding x;
    x.kind = "fragmented_pool";
    x.severity = Severity::Warning;
    char frag[16];
    std::snprintf(frag, sizeof frag, "%.2f", worst->fragmentation);
    x.message = pool_name(*worst) + " caches " + human_bytes(worst->free_bytes) + " free in " +
                plural(worst->free_blocks, "block", "blocks") + " (" + human_bytes(worst->stranded_bytes) +
                " of it stranded), but the largest is " + human_bytes(worst->largest_free_block_bytes) +
                " (fragmentation " + frag +
                "): a request above that size on this stream needs new memory from CUDA even though the cache holds "
                "more bytes in total.";
    if (expandable) {
      x.advice = "Expandable segments are on, so the holes lie between live blocks: allocate long-lived tensors "
                 "before short-lived ones so they do not interleave, and " + std::string(kFreeEarlier) + ".";
    } else if (settings.max_split_size) {
      x.advice = "max_split_size is already " + human_bytes(*settings.max_split_size) +
                 "; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True avoids this fragmentation altogether.";
    } else {
      x.advice = "Set PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:N (blocks of N MiB or more are then never split, so "
                 "they stay whole for large requests), or expandable_segments:True, which avoids this fragmentation "
                 "altogether.";
    }
    out.push_back(std::move(x));
  }

  if (passes(f.releasable_bytes, reserved, t.releasable_share, t.releasable_min_bytes)) {
    Finding x;
    x.kind = "releasable_cache";
    x.severity = Severity::Info;
    x.message = human_bytes(f.releasable_bytes) + " (" + percent(f.releasable_bytes, reserved) +
                " of reserved memory) is cached but holds no live block" +
                (f.releasable_segments ? " (" + plural(f.releasable_segments, "whole segment", "whole segments") + ")"
                                       : std::string()) +
                ". PyTorch reuses it without a new cudaMalloc, so it is not a leak, but nvidia-smi and other "
                "processes see it as used.";
    x.advice = "If another process needs the GPU, call torch.cuda.empty_cache() after the phase that needed the "
               "memory; it returns exactly these bytes to CUDA.";
    out.push_back(std::move(x));
  }

  if (passes(f.pending_free_bytes, reserved, t.pending_share, t.pending_min_bytes)) {
    Finding x;
    x.kind = "pending_free";
    x.severity = Severity::Info;
    x.message = human_bytes(f.pending_free_bytes) + " (" + percent(f.pending_free_bytes, reserved) +
                " of reserved memory) was freed by the program but is still in use on other streams "
                "(record_stream), so it cannot be reused yet.";
    x.advice = "It becomes free when the other streams' work completes; synchronize (torch.cuda.synchronize() or a "
               "stream wait) before the next large allocation, and prefer a stream wait over record_stream for "
               "large tensors.";
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace memsnap::analysis
