// Gradients that are added into rather than replaced: a training loop that never zeroes
// them (or zeroes them in place) keeps every parameter's .grad from step to step.
//
// The sign, from the trace alone: autograd's AccumulateGrad, given a parameter whose .grad
// is None, keeps the incoming gradient as the new .grad (no event) or clones it (an alloc
// in AccumulateGrad, then the incoming one freed); given a .grad that exists, it adds the
// incoming gradient into it and frees the incoming one (a free in AccumulateGrad with no
// alloc there). So the frees in AccumulateGrad's frames that outnumber its allocs count the
// parameters whose .grad was already there when the backward ran.
//
// That is a bug unless the job accumulates over micro-batches on purpose; a zero_grad
// anywhere in the window (a zero_grad frame or an Optimizer.zero_grad annotation) or no
// optimizer step after the backward says nothing is wrong, so nothing is raised.
#pragma once

#include <cstdint>
#include <optional>

#include "memsnap/analysis/phases.hpp"
#include "memsnap/snapshot/model.hpp"

namespace memsnap::analysis {

class Replay;

struct GradientAccumulation {
  uint32_t gradients = 0;    // .grad tensors added into (frees in AccumulateGrad beyond its allocs)
  uint64_t bytes = 0;        // their bytes as requested (the incoming gradients, sized as the .grad)
  uint32_t first_event = 0;  // the first such free
  /// An optimizer step ran between two backward passes that both added into .grad: the
  /// gradients outlived a step, so this is not accumulation over micro-batches.
  bool across_a_step = false;
};

/// What the trace shows of gradients carried across steps, or nullopt when it shows none,
/// when a zero_grad ran in the window, or when no optimizer step follows the backward.
std::optional<GradientAccumulation> gradients_never_zeroed(const Context& ctx, const StackPhases& stacks,
                                                           const snapshot::Device& device, const Replay& replay,
                                                           const Phases& phases);

}  // namespace memsnap::analysis
