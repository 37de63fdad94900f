// Two anti-patterns of the seed documents, read from the trace's allocation stacks.
//
// Layer too large ("nn.Linear(m, n) uses O(nm) memory ... you will need at least
// twice the size of the weights, since you also need to store the gradients"): one
// parameter whose weight, gradient and optimizer state together take a large share
// of the peak (or of the device). A parameter is an allocation whose stack runs
// through torch/nn/parameter.py:__new__ or a torch.nn module's __init__ /
// reset_parameters. Its multiple: weight 1, + gradient when backward ran, + 2 for
// Adam's exp_avg and exp_avg_sq when torch/optim/adam*.py allocated (1 for another
// optimizer's state).
//
// Model created inside the loop ("creating neural nets in a subclass"): parameter
// construction from one call site that recurs iteration after iteration. The call
// site is the innermost user frame outside every __init__ (the line in the loop
// that builds the module); the constructor frame is the user __init__ under it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "memsnap/analysis/sites.hpp"
#include "memsnap/snapshot/model.hpp"

namespace memsnap::analysis {

struct BigLayer {
  std::string site;  // where the parameter was constructed (user frame)
  uint32_t event = 0;
  uint64_t weight_bytes = 0;
  uint32_t multiple = 1;  // weight + gradient + optimizer state, in weights
  uint64_t footprint_bytes = 0;
  uint64_t base_bytes = 0;              // what the share is of: the peak allocated (or the device)
  bool of_device = false;               // base_bytes is the device's capacity
  uint64_t other_parameters_bytes = 0;  // every other parameter constructed in the trace
};

struct ModelPerStep {
  std::string site;              // the loop's line that builds the module
  std::string constructor;       // the user __init__ it runs ("" when the module is torch's own)
  uint64_t builds = 0;           // separate constructions (runs of parameter allocations)
  uint64_t bytes_per_build = 0;  // median
  uint64_t total_bytes = 0;
  uint64_t still_allocated_bytes = 0;  // of those parameters, live at the dump
};

struct AntiPatternThresholds {
  double big_layer_share = 0.25;               // footprint / peak allocated (or capacity)
  uint64_t big_layer_min_bytes = 32ull << 20;  // the weight itself
  uint64_t model_min_builds = 3;
};

/// `peak_allocated`: the trace's allocated peak; `capacity`: the device's, when known.
std::optional<BigLayer> find_big_layer(const Context& ctx, const snapshot::Device& device, uint64_t peak_allocated,
                                       std::optional<uint64_t> capacity, const AntiPatternThresholds& t = {});
std::optional<ModelPerStep> find_model_per_step(const Context& ctx, const snapshot::Device& device,
                                                const AntiPatternThresholds& t = {});

/// Whether the trace or the dump shows training: backward or optimizer frames, or a
/// user caller whose function name contains "train".
bool shows_training(const Context& ctx, const snapshot::Device& device);

}  // namespace memsnap::analysis
