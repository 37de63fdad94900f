// Activations still allocated after the backward that should have freed them.
//
// A forward's activations are what autograd saves for the backward; the backward frees each
// as it is used (retain_graph=False). Blocks made in a forward, with a backward after them,
// that are still allocated at the dump were therefore kept by something other than autograd's
// saved tensors: the graph itself while `outputs` or `loss` is referenced (tensors a custom
// autograd Function keeps on ctx rather than through save_for_backward, as bitsandbytes'
// 4-bit matmul does with its input, go only with the graph), outputs such as logits, or the
// user's own references. Freed at the next step's forward (when the names are rebound), they
// are then on top of that forward's own activations.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "memsnap/analysis/phases.hpp"
#include "memsnap/analysis/sites.hpp"

namespace memsnap::analysis {

class Replay;
class BlockRoles;

struct KeptAfterBackward {
  uint64_t bytes = 0;
  uint32_t blocks = 0;
  uint32_t backward_event = 0;  // the backward's last alloc (frees alone: maybe a graph torn down)
  /// Where they were made: the innermost Python frame outside torch ("file:line:function",
  /// capped), largest first, three at most.
  std::vector<std::pair<std::string, uint64_t>> frames;
  /// The user's line that ran the forward (its site), when one holds most of them.
  std::string site;
  /// The trace shows bitsandbytes' autograd functions (MatMul4Bit keeps its input on ctx).
  bool bitsandbytes = false;
};

/// The activations (by BlockRoles) made in a forward before the last backward of the trace and
/// still allocated at the dump; nullopt when there is no backward or nothing is kept.
std::optional<KeptAfterBackward> kept_after_backward(const Context& ctx, const snapshot::Device& device,
                                                     const Replay& replay, const Phases& phases,
                                                     const BlockRoles& roles);

}  // namespace memsnap::analysis
