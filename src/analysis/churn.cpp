// Free bursts and the churn findings' figures (see churn.hpp).
#include "memsnap/analysis/churn.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <string_view>

namespace memsnap::analysis {

using snapshot::Action;

const char* to_string(BurstKind k) {
  switch (k) {
    case BurstKind::EmptyCache: return "empty_cache";
    case BurstKind::Retry: return "retry";
    case BurstKind::Other: return "other";
  }
  return "?";
}

namespace {

bool ends_with(std::string_view s, std::string_view t) {
  return s.size() >= t.size() && s.substr(s.size() - t.size()) == t;
}

bool segment_release(Action a) {
  return a == Action::SegmentFree || a == Action::SegmentUnmap;
}
bool segment_grant(Action a) {
  return a == Action::SegmentAlloc || a == Action::SegmentMap;
}

}  // namespace

bool empty_cache_stack(const snapshot::Snapshot& snap, snapshot::StackId stack) {
  for (snapshot::FrameId f : snap.stacks[stack]) {
    const snapshot::Frame& fr = snap.frames[f];
    std::string_view name = snap.strings[fr.name];
    if (name == "empty_cache") {
      std::string_view file = snap.strings[fr.filename];
      if (file.empty() || ends_with(file, "memory.py")) return true;
    }
    if (name.find("emptyCache") != std::string_view::npos) return true;
  }
  return false;
}

std::vector<ChurnBurst> classify_free_bursts(const snapshot::Snapshot& snap, const snapshot::Trace& trace) {
  std::vector<ChurnBurst> out;
  const auto actions = trace.actions();
  const size_t n = actions.size();
  for (size_t i = 0; i < n;) {
    if (!segment_release(actions[i])) {
      ++i;
      continue;
    }
    ChurnBurst b;
    b.first_event = uint32_t(i);
    b.stack = trace.stack_at(i);
    bool empty_cache = false;
    size_t j = i;
    for (; j < n && segment_release(actions[j]); ++j) {
      ++b.segments;
      b.bytes += trace.size_at(j);
      empty_cache = empty_cache || empty_cache_stack(snap, trace.stack_at(j));
    }
    b.last_event = uint32_t(j - 1);
    if (empty_cache) {
      b.kind = BurstKind::EmptyCache;
    } else if (j < n && segment_grant(actions[j])) {
      // the retried cudaMalloc: the new segment, then the alloc it served
      for (size_t k = j + 1; k < n && k <= j + 3; ++k) {
        if (actions[k] == Action::Alloc) {
          b.kind = BurstKind::Retry;
          b.request_event = uint32_t(k);
          b.request_bytes = trace.size_at(k);
          b.new_segment_bytes = trace.size_at(j);
          break;
        }
        if (!segment_grant(actions[k])) break;
      }
    }
    out.push_back(b);
    i = j;
  }
  return out;
}

Churn find_churn(const Context& ctx, const snapshot::Device& device) {
  Churn c;
  const snapshot::Trace& trace = device.trace;
  std::vector<ChurnBurst> bursts = classify_free_bursts(ctx.snap, trace);
  std::map<std::string, RetrySite> retry;
  std::map<std::string, EmptyCacheSite> calls;
  std::optional<uint32_t> first_call;
  for (const ChurnBurst& b : bursts) {
    if (b.kind == BurstKind::Retry) {
      ++c.retries;
      c.retry_freed_bytes += b.bytes;
      c.retry_segments += b.segments;
      c.retry_largest_burst_bytes = std::max(c.retry_largest_burst_bytes, b.bytes);
      const std::string& site = ctx.sites.site(trace.stack_at(b.request_event));
      RetrySite& r = retry[site];
      r.site = site;
      ++r.retries;
      r.freed_bytes += b.bytes;
      r.largest_request_bytes = std::max(r.largest_request_bytes, b.request_bytes);
    } else if (b.kind == BurstKind::EmptyCache) {
      ++c.empty_cache_calls;
      c.empty_cache_returned_bytes += b.bytes;
      c.empty_cache_segments += b.segments;
      if (!first_call) first_call = b.first_event;
      const std::string& site = ctx.sites.site(b.stack);
      EmptyCacheSite& s = calls[site];
      s.site = site;
      ++s.calls;
      s.returned_bytes += b.bytes;
      s.segments += b.segments;
    }
  }
  if (first_call) {
    const auto actions = trace.actions();
    for (size_t i = *first_call; i < actions.size(); ++i)
      if (segment_grant(actions[i])) {
        ++c.reallocations;
        c.reallocated_bytes += trace.size_at(i);
      }
  }
  for (auto& [_, r] : retry) c.retry_sites.push_back(std::move(r));
  for (auto& [_, s] : calls) c.empty_cache_sites.push_back(std::move(s));
  std::stable_sort(c.retry_sites.begin(), c.retry_sites.end(),
                   [](const RetrySite& a, const RetrySite& b) { return a.retries > b.retries; });
  std::stable_sort(c.empty_cache_sites.begin(), c.empty_cache_sites.end(),
                   [](const EmptyCacheSite& a, const EmptyCacheSite& b) { return a.calls > b.calls; });
  return c;
}

}  // namespace memsnap::analysis
