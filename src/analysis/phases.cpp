// The phase of every trace event, from annotations and stacks (see phases.hpp).
#include "memsnap/analysis/phases.hpp"

#include <algorithm>

#include "memsnap/analysis/replay.hpp"

namespace memsnap::analysis {

namespace {

using snapshot::Action;

constexpr uint16_t kDone = 0x8000;
constexpr uint8_t kNone = 7;  // "no phase" in a 3-bit field

bool phases_contains(std::string_view s, std::string_view what) {
  return s.find(what) != std::string_view::npos;
}

// The frames each fact keys on: one table, read once per distinct frame. Besides these, the
// frame classifier of sites.hpp gives kBackward (the autograd engine, *Backward nodes,
// torch/autograd's backward/grad), kAccumulate (AccumulateGrad), kOptimizer (torch/optim,
// Optimizer.step), kParameter (nn/parameter.py's __new__, a torch.nn module's __init__ or
// reset_parameters) and kForward (a `forward` function, torch/nn/modules).
enum class Part : uint8_t { File, Name };
enum class How : uint8_t { Contains, Equals };
struct FrameRule {
  uint16_t fact;
  Part part;
  How how;
  std::string_view text;
};
constexpr FrameRule kFrameRules[] = {
    {StackPhases::kZeroGrad, Part::Name, How::Contains, "zero_grad"},
    {StackPhases::kDataLoading, Part::File, How::Contains, "torch/utils/data/"},
    {StackPhases::kDataLoading, Part::File, How::Contains, "dataloader"},
    {StackPhases::kDataLoading, Part::File, How::Contains, "DataLoader"},
    {StackPhases::kDataLoading, Part::Name, How::Contains, "DataLoaderIter"},
    {StackPhases::kForward, Part::File, How::Contains, "torch/nn/functional.py"},
    {StackPhases::kAutocast, Part::Name, How::Contains, "at::autocast::cached_cast"},
    {StackPhases::kKvCache, Part::Name, How::Contains, "_allocate_kv_cache"},
    {StackPhases::kKvCache, Part::File, How::Contains, "cache_engine"},
    {StackPhases::kCommunication, Part::File, How::Contains, "distributed_c10d"},
    {StackPhases::kCommunication, Part::File, How::Contains, "c10d/"},
    {StackPhases::kCommunication, Part::File, How::Contains, "nccl"},
    {StackPhases::kCommunication, Part::Name, How::Contains, "nccl"},
    {StackPhases::kCommunication, Part::Name, How::Contains, "NCCL"},
    {StackPhases::kCommunication, Part::Name, How::Contains, "c10d::"},
    {StackPhases::kWorkspace, Part::Name, How::Contains, "getNewWorkspace"},
    {StackPhases::kParameter, Part::Name, How::Equals, "load_state_dict"},
    {StackPhases::kParameter, Part::Name, How::Equals, "_load_from_state_dict"},
    {StackPhases::kParameter, Part::Name, How::Contains, "from_pretrained"},
    {StackPhases::kParameter, Part::Name, How::Contains, "init_weight"},
    {StackPhases::kParameter, Part::Name, How::Contains, "load_weight"},
    {StackPhases::kParameter, Part::Name, How::Contains, "load_checkpoint"},
};

// Module.to / .cuda / _apply / .half ... move or copy a module's parameters and buffers.
constexpr std::string_view kModuleMoves[] = {"to", "cuda", "_apply", "half", "bfloat16", "float", "type"};

uint16_t table_facts(std::string_view file, std::string_view name) {
  uint16_t f = 0;
  for (const FrameRule& r : kFrameRules) {
    std::string_view s = r.part == Part::File ? file : name;
    if (r.how == How::Equals ? s == r.text : phases_contains(s, r.text)) f |= r.fact;
  }
  if (phases_contains(file, "torch/nn/modules/module.py"))
    for (std::string_view m : kModuleMoves)
      if (name == m) f |= StackPhases::kParameter;
  return f;
}

}  // namespace

const char* to_string(Phase p) {
  switch (p) {
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::OptimizerStep: return "optimizer_step";
    case Phase::ZeroGrad: return "zero_grad";
    case Phase::DataLoading: return "data_loading";
    case Phase::Other: return "other";
  }
  return "other";
}

const char* phase_words(Phase p) {
  switch (p) {
    case Phase::Forward: return "the forward";
    case Phase::Backward: return "the backward";
    case Phase::OptimizerStep: return "the optimizer step";
    case Phase::ZeroGrad: return "zero_grad";
    case Phase::DataLoading: return "data loading";
    case Phase::Other: return "other code";
  }
  return "other code";
}

std::optional<Phase> annotation_phase(std::string_view name) {
  if (name.starts_with("Optimizer.zero_grad")) return Phase::ZeroGrad;
  if (name.starts_with("Optimizer.step")) return Phase::OptimizerStep;
  if (name.starts_with("enumerate(DataLoader)")) return Phase::DataLoading;
  return std::nullopt;
}

StackPhases::StackPhases(const Context& ctx)
    : ctx_(ctx), stack_facts_(ctx.snap.stacks.size(), 0), frame_facts_(ctx.snap.frames.size(), 0) {}

uint16_t StackPhases::frame_facts(snapshot::FrameId id) const {
  uint16_t& slot = frame_facts_[id.v];
  if (slot & kDone) return slot & ~kDone;
  // A hostile file may share one huge name among many frames: each frame reads 4 KiB of it at most.
  const auto& snap = ctx_.snap;
  const snapshot::Frame& fr = snap.frames[id];
  const Sites::FrameInfo& info = ctx_.sites.frame_info(id);
  uint16_t f = 0;
  if (info.backward || info.accumulate_grad) f |= kBackward;
  if (info.accumulate_grad) f |= kAccumulate;
  if (info.optimizer) f |= kOptimizer;
  if (info.parameter) f |= kParameter;
  if (info.forward || info.module_call) f |= kForward;
  std::string_view file = snap.strings[fr.filename], name = snap.strings[fr.name];
  file = file.substr(0, 4096);
  name = name.substr(0, 4096);
  f |= table_facts(file, name);
  slot = f | kDone;
  return f;
}

uint16_t StackPhases::compute(snapshot::StackId stack) const {
  // Frames innermost first: an optimizer step or zero_grad outside a forward or backward is the
  // closure form (PyTorch Lightning runs training_step inside optimizer.step(closure)), whose
  // allocations are the forward's and the backward's, so the inner phase wins there.
  uint16_t f = 0;
  for (snapshot::FrameId fr : ctx_.snap.stacks[stack]) {
    uint16_t g = frame_facts(fr);
    if (f & (kForward | kBackward)) g &= static_cast<uint16_t>(~(kOptimizer | kZeroGrad));
    f |= g;
  }
  return f;
}

uint16_t StackPhases::facts(snapshot::StackId stack) const {
  uint16_t& slot = stack_facts_[stack.v];
  if (!(slot & kDone)) slot = compute(stack) | kDone;
  return slot & ~kDone;
}

std::optional<Phase> StackPhases::of(snapshot::StackId stack) const {
  uint16_t f = facts(stack);
  if (f & kZeroGrad) return Phase::ZeroGrad;
  if (f & kOptimizer) return Phase::OptimizerStep;
  if (f & kBackward) return Phase::Backward;
  if (f & kDataLoading) return Phase::DataLoading;
  if (f & kParameter) return Phase::Other;  // building or moving a model
  if (f & kForward) return Phase::Forward;
  return std::nullopt;
}

Phases::Phases(const Context& ctx, const StackPhases& stacks, const snapshot::Device& d, const Replay* replay) {
  const auto& trace = d.trace;
  const size_t n = trace.size();
  bytes_.assign(n, kNone);
  // 1. What each event's own stack says.
  for (size_t i = 0; i < n; ++i) {
    Action a = trace.action_at(i);
    if (a != Action::Alloc && a != Action::FreeRequested && a != Action::Free && a != Action::Oom) continue;
    std::optional<Phase> p = stacks.of(trace.stack_at(i));
    if (!p && (a == Action::Alloc || a == Action::Oom)) p = Phase::Other;  // user code between calls
    if (p) bytes_[i] = static_cast<uint8_t>(*p) | 8;
  }
  // 2. A free that carries its block's allocation stack says nothing of where it ran; one whose
  // block predates the window may (its stack is the free's or the allocation's: only a zero_grad
  // frame is taken at its word).
  if (replay) {
    const uint32_t first = replay->first_window_range();
    for (uint32_t id = 0; id < replay->ranges().size(); ++id) {
      uint32_t f = replay->freed_of(id);
      if (f >= n) continue;
      if (id < first) {
        if (!(stacks.facts(trace.stack_at(f)) & StackPhases::kZeroGrad)) bytes_[f] = kNone;
      } else if (trace.stack_at(f) == trace.stack_at(replay->begin_of(id))) {
        bytes_[f] = kNone;
      }
    }
  }
  // 3. Annotations win: record_function ranges of known names, by time.
  struct Edge {
    int64_t time;
    int delta;
    Phase phase;
  };
  std::vector<Edge> edges;
  bool any_for_device = false;
  for (const auto& a : ctx.snap.annotations)
    if (a.device == d.index) any_for_device = true;
  for (const auto& a : ctx.snap.annotations) {
    if (any_for_device && a.device != d.index) continue;
    if (a.time_us == snapshot::TraceEvent::kNoTime) continue;
    std::optional<Phase> p = annotation_phase(ctx.snap.strings[a.name]);
    if (!p) continue;
    std::string_view stage = ctx.snap.strings[a.stage];
    if (stage == "START") edges.push_back({a.time_us, +1, *p});
    if (stage == "END") edges.push_back({a.time_us, -1, *p});
  }
  if (!edges.empty()) {
    std::stable_sort(edges.begin(), edges.end(), [](const Edge& x, const Edge& y) { return x.time < y.time; });
    int open[kPhases] = {};
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) {
      int64_t t = trace[i].time_us;
      if (t == snapshot::TraceEvent::kNoTime) continue;
      // an edge at the event's time counts: START at t covers t; END at t closes before it
      for (; k < edges.size() && edges[k].time <= t; ++k)
        open[int(edges[k].phase)] = std::max(0, open[int(edges[k].phase)] + edges[k].delta);
      for (int p : {int(Phase::ZeroGrad), int(Phase::OptimizerStep), int(Phase::DataLoading)})
        if (open[p] > 0) {
          bytes_[i] = static_cast<uint8_t>(p) | 8;
          from_annotations_ = true;
          break;
        }
    }
  }
  // 4. Silent events take their predecessor's phase; spans are runs of one phase.
  uint8_t cur = static_cast<uint8_t>(Phase::Other);
  for (size_t i = 0; i < n; ++i) {
    if (bytes_[i] & 8)
      cur = bytes_[i] & 7;
    else
      bytes_[i] = cur;
    if (i == 0 || (bytes_[i] & 7) != (bytes_[i - 1] & 7)) span_starts_.push_back(static_cast<uint32_t>(i));
  }
  // 5. The next definite phase, backwards.
  uint8_t next = kNone;
  for (size_t i = n; i-- > 0;) {
    bytes_[i] = static_cast<uint8_t>((bytes_[i] & 15) | next << 4);
    if (bytes_[i] & 8) next = bytes_[i] & 7;
  }
}

Phase Phases::state_phase(uint32_t i) const {
  Phase p = at(i);
  if (p != Phase::Other) return p;
  // the phases on either side of the run of `other` around i (4096 events each way at most)
  std::optional<Phase> before, after;
  for (uint32_t k = i, steps = 0; k-- > 0 && steps < 4096; ++steps)
    if (at(k) != Phase::Other) {
      before = at(k);
      break;
    }
  for (size_t k = size_t(i) + 1, steps = 0; k < bytes_.size() && steps < 4096; ++k, ++steps)
    if (at(static_cast<uint32_t>(k)) != Phase::Other) {
      after = at(static_cast<uint32_t>(k));
      break;
    }
  return before == Phase::Forward && after == Phase::Backward ? Phase::Forward : p;
}

uint32_t Phases::span(uint32_t i) const {
  auto it = std::upper_bound(span_starts_.begin(), span_starts_.end(), i);
  return static_cast<uint32_t>(it - span_starts_.begin()) - 1;
}

}  // namespace memsnap::analysis
