// The seed documents' two model-building anti-patterns (see antipatterns.hpp).
#include "memsnap/analysis/antipatterns.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string_view>
#include <vector>

namespace memsnap::analysis {

namespace {

using snapshot::Action;
using snapshot::FrameId;
using snapshot::StackId;

// Whether a stack constructs a parameter: torch/nn/parameter.py:__new__, or a
// torch.nn module's __init__ / reset_parameters (each frame's answer worked out once, by
// Sites: thousands of stacks may share one 1 MiB file name, issue 38).
class ParameterStacks {
 public:
  explicit ParameterStacks(const Context& ctx) : ctx_(ctx), memo_(ctx.snap.stacks.size(), kUnknown) {
    for (uint32_t f = 0; f < ctx.snap.frames.size() && !any_; ++f) any_ = ctx.sites.frame_info(FrameId{f}).parameter;
  }
  /// Whether any frame of the snapshot constructs a parameter: without one, no stack does, and
  /// the passes over the trace that look for parameters have nothing to find.
  bool any() const { return any_; }
  bool operator()(StackId s) {
    if (!any_ || s.v >= memo_.size()) return false;
    int8_t& known = memo_[s.v];  // by stack id: a hash lookup per event cost 1% of a load
    if (known == kUnknown) {
      known = 0;
      for (FrameId f : ctx_.snap.stacks[s])
        if (ctx_.sites.frame_info(f).parameter) {
          known = 1;
          break;
        }
    }
    return known == 1;
  }

 private:
  static constexpr int8_t kUnknown = -1;
  const Context& ctx_;
  std::vector<int8_t> memo_;
  bool any_ = false;
};

// The loop's line that builds the module: the innermost user frame outside every
// __init__; `ctor` gets the innermost user __init__ below it.
std::optional<FrameId> build_site(const Context& ctx, StackId s, std::optional<FrameId>& ctor) {
  for (FrameId f : ctx.snap.stacks[s]) {
    const Sites::FrameInfo& fi = ctx.sites.frame_info(f);
    if (fi.kind != FrameKind::User) continue;
    if (ctx.snap.strings[ctx.snap.frames[f].name] == "__init__") {
      if (!ctor) ctor = f;
      continue;
    }
    return f;
  }
  return std::nullopt;
}

}  // namespace

bool shows_training(const Context& ctx, const snapshot::Device& device) {
  auto training_frame = [&](FrameId f) {
    const Sites::FrameInfo& fi = ctx.sites.frame_info(f);
    return fi.kind == FrameKind::User && fi.train;
  };
  // No stack of the snapshot shows training (a trace without stacks, an inference run): the
  // device's events need not be looked at.
  bool any = false;
  for (uint32_t s = 0; s < ctx.snap.stacks.size() && !any; ++s)
    any = ctx.sites.traits(StackId{s}).backward || ctx.sites.traits(StackId{s}).optimizer;
  for (uint32_t f = 0; f < ctx.snap.frames.size() && !any; ++f) any = training_frame(FrameId{f});
  if (!any) return false;
  std::vector<bool> seen(ctx.snap.stacks.size(), false);
  auto check = [&](StackId s) {
    if (s.v >= seen.size() || seen[s.v]) return false;
    seen[s.v] = true;
    const StackTraits& t = ctx.sites.traits(s);
    if (t.backward || t.optimizer) return true;
    for (FrameId f : ctx.snap.stacks[s])
      if (training_frame(f)) return true;
    return false;
  };
  const snapshot::Trace& tr = device.trace;
  for (size_t i = 0; i < tr.size(); ++i)
    if (check(tr.stack_at(i))) return true;
  for (const auto& b : device.blocks)
    if (check(b.stack)) return true;
  return false;
}

std::optional<BigLayer> find_big_layer(const Context& ctx, const snapshot::Device& device, uint64_t peak_allocated,
                                       std::optional<uint64_t> capacity, const AntiPatternThresholds& t) {
  ParameterStacks is_param(ctx);
  if (!is_param.any()) return std::nullopt;
  const snapshot::Trace& tr = device.trace;
  const auto actions = tr.actions();
  std::optional<uint32_t> best;
  uint64_t all_params = 0;
  bool backward = false, adam = false, optimizer = false;
  std::vector<bool> looked(ctx.snap.stacks.size(), false);
  for (size_t i = 0; i < actions.size(); ++i) {
    if (actions[i] != Action::Alloc) continue;
    StackId s = tr.stack_at(i);
    if (s.v < looked.size() && !looked[s.v]) {
      looked[s.v] = true;
      const StackTraits& tt = ctx.sites.traits(s);
      backward = backward || tt.backward;
      if (tt.optimizer) {
        optimizer = true;
        for (FrameId f : ctx.snap.stacks[s])
          if (ctx.sites.frame_info(f).adam) adam = true;
      }
    }
    if (!is_param(s)) continue;
    all_params += tr.size_at(i);
    if (!best || tr.size_at(i) > tr.size_at(*best)) best = uint32_t(i);
  }
  if (!best) return std::nullopt;
  BigLayer b;
  b.event = *best;
  b.weight_bytes = tr.size_at(*best);
  b.multiple = 1 + (backward ? 1 : 0) + (adam ? 2 : optimizer ? 1 : 0);
  b.footprint_bytes = b.weight_bytes * b.multiple;
  b.other_parameters_bytes = all_params - b.weight_bytes;
  b.site = ctx.sites.site(tr.stack_at(*best));
  if (b.weight_bytes < t.big_layer_min_bytes) return std::nullopt;
  // the share of the peak, or of the device when its size is known and the peak is not
  b.base_bytes = peak_allocated;
  if (b.base_bytes == 0 && capacity) {
    b.base_bytes = *capacity;
    b.of_device = true;
  }
  if (b.base_bytes == 0 || double(b.footprint_bytes) < t.big_layer_share * double(b.base_bytes)) return std::nullopt;
  // one layer, not the model: the other parameters together are smaller than it
  if (b.other_parameters_bytes >= b.weight_bytes) return std::nullopt;
  return b;
}

std::optional<ModelPerStep> find_model_per_step(const Context& ctx, const snapshot::Device& device,
                                                const AntiPatternThresholds& t) {
  ParameterStacks is_param(ctx);
  if (!is_param.any()) return std::nullopt;
  const snapshot::Trace& tr = device.trace;
  const auto actions = tr.actions();
  struct Site {
    std::optional<FrameId> ctor;
    std::vector<uint64_t> builds;  // bytes of each run
    bool open = false;
  };
  std::map<uint32_t, Site> sites;  // by the build site's frame
  std::vector<uint32_t> open;      // the sites whose run is open, each once
  // frame -> the last event whose stack holds it
  std::vector<size_t> in_stack(ctx.snap.frames.size(), SIZE_MAX);
  for (size_t i = 0; i < actions.size(); ++i) {
    if (actions[i] != Action::Alloc) continue;
    StackId s = tr.stack_at(i);
    std::optional<FrameId> ctor, where;
    const bool param = is_param(s);
    if (param) where = build_site(ctx, s, ctor);
    // a run of one site's parameter allocations ends at an allocation that is neither
    // a parameter nor made under the site (a buffer its __init__ registers is); only the open
    // runs are looked at (all sites for each allocation was quadratic in the trace)
    if (!param && !open.empty()) {
      for (FrameId f : ctx.snap.stacks[s]) in_stack[f.v] = i;
      std::erase_if(open, [&](uint32_t frame) {
        if (in_stack[frame] == i) return false;
        sites[frame].open = false;
        return true;
      });
    }
    if (!where) continue;
    Site& st = sites[where->v];
    if (!st.ctor) st.ctor = ctor;
    if (!st.open) {
      st.builds.push_back(0);
      st.open = true;
      open.push_back(where->v);
    }
    st.builds.back() += tr.size_at(i);
  }
  std::optional<ModelPerStep> best;
  for (auto& [frame, st] : sites) {
    if (st.builds.size() < t.model_min_builds) continue;
    if (best && st.builds.size() <= best->builds) continue;
    ModelPerStep m;
    m.site = ctx.sites.frame_string(FrameId{frame});
    if (st.ctor) m.constructor = ctx.sites.frame_string(*st.ctor);
    m.builds = st.builds.size();
    for (uint64_t b : st.builds) m.total_bytes += b;
    std::vector<uint64_t> sorted = st.builds;
    std::nth_element(sorted.begin(), sorted.begin() + long(sorted.size() / 2), sorted.end());
    m.bytes_per_build = sorted[sorted.size() / 2];
    for (const auto& b : device.blocks) {
      if (b.state != snapshot::BlockState::ActiveAllocated || !is_param(b.stack)) continue;
      std::optional<FrameId> c;
      std::optional<FrameId> w = build_site(ctx, b.stack, c);
      if (w && w->v == frame) m.still_allocated_bytes += b.requested_size;
    }
    best = std::move(m);
  }
  return best;
}

}  // namespace memsnap::analysis
