// Gradients added into across steps (gradients.hpp says how the trace shows it).
#include "memsnap/analysis/gradients.hpp"

#include <algorithm>
#include <vector>

#include "memsnap/analysis/replay.hpp"

namespace memsnap::analysis {

std::optional<GradientAccumulation> gradients_never_zeroed(const Context& ctx, const StackPhases& stacks,
                                                           const snapshot::Device& device, const Replay& replay,
                                                           const Phases& phases) {
  const auto& trace = device.trace;
  const size_t n = trace.size();
  if (n == 0 || phases.size() != n) return std::nullopt;
  // A zero_grad anywhere (its frame, or its record_function range on any device) ends it.
  for (const auto& a : ctx.snap.annotations)
    if (annotation_phase(ctx.snap.strings[a.name]) == Phase::ZeroGrad) return std::nullopt;
  for (size_t i = 0; i < n; ++i)
    if (phases.at(static_cast<uint32_t>(i)) == Phase::ZeroGrad) return std::nullopt;

  // Per backward span: frees in AccumulateGrad (of a block it did not allocate there, by a
  // stack that is the free's own) against allocs in AccumulateGrad.
  struct Span {
    int64_t frees = 0, allocs = 0;
    int64_t free_bytes = 0, alloc_bytes = 0;
    uint32_t first_free = 0;
  };
  std::vector<std::pair<uint32_t, Span>> spans;  // by span id, in event order
  auto span_for = [&](uint32_t event) -> Span& {
    uint32_t s = phases.span(event);
    if (spans.empty() || spans.back().first != s) spans.push_back({s, Span{}});
    return spans.back().second;
  };
  // Events in order: allocs from the trace, frees from the replay's ranges (sorted below).
  std::vector<std::pair<uint32_t, uint64_t>> frees;  // event, bytes
  for (uint32_t id = 0; id < replay.ranges().size(); ++id) {
    uint32_t f = replay.freed_of(id);
    if (f >= n || phases.at(f) != Phase::Backward) continue;
    snapshot::StackId fs = trace.stack_at(f);
    if (fs == replay.stack_of(id) || !(stacks.facts(fs) & StackPhases::kAccumulate)) continue;
    if (stacks.facts(replay.stack_of(id)) & StackPhases::kAccumulate) continue;  // a clone it made
    frees.push_back({f, replay.requested_of(id)});
  }
  if (frees.empty()) return std::nullopt;
  std::sort(frees.begin(), frees.end());
  size_t k = 0;
  for (uint32_t i = 0; i < n; ++i) {
    for (; k < frees.size() && frees[k].first <= i; ++k) {
      Span& s = span_for(frees[k].first);
      if (s.frees == 0) s.first_free = frees[k].first;
      ++s.frees;
      s.free_bytes += static_cast<int64_t>(frees[k].second);
    }
    if (trace.action_at(i) == snapshot::Action::Alloc && phases.at(i) == Phase::Backward &&
        (stacks.facts(trace.stack_at(i)) & StackPhases::kAccumulate)) {
      Span& s = span_for(i);
      ++s.allocs;
      s.alloc_bytes += static_cast<int64_t>(trace.size_at(i));
    }
  }
  std::optional<GradientAccumulation> best;
  std::vector<uint32_t> accumulating;  // first free of each backward that added into .grad
  for (const auto& [id, s] : spans) {
    (void)id;
    if (s.frees <= s.allocs || s.free_bytes <= s.alloc_bytes) continue;
    accumulating.push_back(s.first_free);
    GradientAccumulation g;
    g.gradients = static_cast<uint32_t>(s.frees - s.allocs);
    g.bytes = static_cast<uint64_t>(s.free_bytes - s.alloc_bytes);
    g.first_event = s.first_free;
    if (!best || g.bytes > best->bytes) best = g;
  }
  if (!best) return std::nullopt;
  // An optimizer step must follow the first accumulating backward (else this may be the
  // micro-batches of one step, or no training at all).
  const uint32_t first = accumulating.front();
  std::optional<uint32_t> step;
  for (uint32_t i = first; i < n; ++i)
    if (phases.at(i) == Phase::OptimizerStep) {
      step = i;
      break;
    }
  if (!step) return std::nullopt;
  best->first_event = first;
  best->across_a_step = accumulating.back() > *step;
  return best;
}

}  // namespace memsnap::analysis
