// The phase of the training loop each trace event ran in: forward, backward, the
// optimizer step, zero_grad, data loading, or other.
//
// Two sources, the first winning where both speak:
//   annotations  record_function START/END ranges of the snapshot's
//                `external_annotations` ("Optimizer.step#AdamW.step",
//                "Optimizer.zero_grad#AdamW.zero_grad", "enumerate(DataLoader)#..."),
//                matched to events by time;
//   stacks       an alloc's stack (the autograd engine, a *Backward node or
//                torch/autograd frames: backward; torch/optim: the optimizer step;
//                a `zero_grad` frame: zero_grad; torch/utils/data or a DataLoader:
//                data loading; a module's forward, torch.nn's modules or functional:
//                forward). A free speaks only when its stack is not its block's
//                allocation stack (torch records the free's own stack with
//                context="all"); segment events and free completions never do.
// An event that says nothing takes the phase of the event before it, except an
// alloc whose stack names none of the above (user code between calls): its phase
// is `other`. A *span* is a maximal run of events in one phase: "freed in the
// phase it was born in" means in the same span, not merely the same kind of phase.
//
// Cost: one byte an event, one pass forward and one back; stacks are classified
// once per distinct stack (StackPhases), frames once per distinct string.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "memsnap/analysis/sites.hpp"
#include "memsnap/snapshot/model.hpp"

namespace memsnap::analysis {

class Replay;

enum class Phase : uint8_t { Forward, Backward, OptimizerStep, ZeroGrad, DataLoading, Other };
inline constexpr int kPhases = 6;
/// "forward", "backward", "optimizer_step", "zero_grad", "data_loading", "other".
const char* to_string(Phase p);
/// "the forward", "the backward", "the optimizer step", "zero_grad", "data loading", "other code".
const char* phase_words(Phase p);

/// What an annotation's name says about the phase, if anything ("Optimizer.step#...").
std::optional<Phase> annotation_phase(std::string_view name);

/// What one stack says: a phase, or nothing (nullopt). Worked out once per stack id.
class StackPhases {
 public:
  explicit StackPhases(const Context& ctx);
  std::optional<Phase> of(snapshot::StackId stack) const;

  /// What the frames say, for the role table too: one bit per fact below.
  enum Fact : uint16_t {
    kForward = 1,          // module forward, torch/nn/modules, torch/nn/functional.py
    kBackward = 2,         // autograd engine, *Backward nodes, torch/autograd backward/grad
    kOptimizer = 4,        // torch/optim (Optimizer.step)
    kZeroGrad = 8,         // a zero_grad frame
    kDataLoading = 16,     // torch/utils/data, a DataLoader
    kParameter = 32,       // parameter construction, Module.to/.cuda/_apply, load_state_dict
    kAutocast = 64,        // at::autocast::cached_cast
    kKvCache = 128,        // _allocate_kv_cache, a cache_engine
    kCommunication = 256,  // NCCL, c10d
    kAccumulate = 512,     // AccumulateGrad: a parameter's gradient
    kWorkspace = 1024,     // cuBLAS's workspace (getNewWorkspace): made once, kept for the process
  };
  /// The facts of a whole stack (the union over its frames).
  uint16_t facts(snapshot::StackId stack) const;
  /// The facts of one frame.
  uint16_t frame_facts(snapshot::FrameId f) const;

 private:
  uint16_t compute(snapshot::StackId stack) const;
  const Context& ctx_;
  mutable std::vector<uint16_t> stack_facts_;  // per stack id; bit 15: computed
  mutable std::vector<uint16_t> frame_facts_;  // per frame id; bit 15: computed
};

/// The phase at every event of one device's trace.
class Phases {
 public:
  /// `replay`, when given, tells which frees carry their block's allocation stack.
  Phases(const Context& ctx, const StackPhases& stacks, const snapshot::Device& device, const Replay* replay);
  Phases() = default;

  size_t size() const { return bytes_.size(); }
  /// The phase event i ran in.
  Phase at(uint32_t i) const { return Phase(bytes_[i] & 7); }
  /// Whether event i's own stack or an annotation said so (else it took its predecessor's).
  bool definite(uint32_t i) const { return bytes_[i] & 8; }
  /// The phase a report names for the state after event i: at(i), except that user code
  /// between a forward and the backward that follows it (the loss) is the forward's.
  Phase state_phase(uint32_t i) const;
  /// The phase of the first definite event after i (nullopt: none).
  std::optional<Phase> next_definite(uint32_t i) const {
    unsigned v = bytes_[i] >> 4 & 7;
    return v == 7 ? std::nullopt : std::optional<Phase>(Phase(v));
  }
  /// The span event i belongs to (spans are numbered from 0 in order).
  uint32_t span(uint32_t i) const;
  uint32_t spans() const { return static_cast<uint32_t>(span_starts_.size()); }
  /// Whether some annotation gave phases to events of this device.
  bool from_annotations() const { return from_annotations_; }

 private:
  std::vector<uint8_t> bytes_;         // bits 0-2 phase, 3 definite, 4-6 next definite (7: none)
  std::vector<uint32_t> span_starts_;  // first event of each span
  bool from_annotations_ = false;
};

}  // namespace memsnap::analysis
