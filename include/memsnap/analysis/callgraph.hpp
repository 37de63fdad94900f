// The call graph of live memory, and who is responsible for it: dominators (Boost.Graph).
//
// Vertices are the distinct frames of a stack profile (stacks.hpp) plus a synthetic
// root; every profile stack root→f1→…→fk adds the edges root→f1, f1→f2, …, each
// edge weighted once per stack by the stack's bytes and blocks. Per vertex:
//   self      bytes of the stacks whose innermost frame it is;
//   total     bytes of the stacks through it, each stack counted once even when the
//             frame recurses (appears in it more than once);
//   retained  bytes of the stacks whose innermost frame it dominates: every path
//             from the root to those frames passes through it, so removing this
//             call removes that memory. With the dominator tree (Lengauer-Tarjan,
//             boost::lengauer_tarjan_dominator_tree from the root) it is the sum of
//             `self` over the vertex's dominator subtree.
// Invariants, exact: Σ self = retained(root) = total(root) = the profile's bytes,
// and total ≥ retained ≥ self for every vertex (a stack that ends under a dominated
// frame passes through its dominator; a vertex dominates itself).
#pragma once

#include <cstdint>
#include <vector>

#include "memsnap/analysis/stacks.hpp"

namespace memsnap::analysis {

inline constexpr uint32_t kNoVertex = 0xFFFFFFFFu;

struct CallVertex {
  uint32_t frame = kNoVertex;  // index into CallGraph::frames; kNoVertex for the root
  uint64_t self_bytes = 0, self_blocks = 0;
  uint64_t total_bytes = 0, total_blocks = 0;
  uint64_t retained_bytes = 0, retained_blocks = 0;
  uint32_t dominator = kNoVertex;  // immediate dominator (kNoVertex for the root)
  uint32_t callers = 0;            // distinct callers, not counting itself (recursion)
};

struct CallEdge {
  uint32_t from = 0, to = 0;  // vertices, caller -> callee
  uint64_t bytes = 0, blocks = 0;
};

struct CallGraph {
  StackOptions options;
  std::vector<ProfileFrame> frames;
  std::vector<CallVertex> vertices;  // vertices[0] is the root; then one per frame, in frame order
  std::vector<CallEdge> edges;       // sorted by (from, to)
  uint64_t bytes = 0, blocks = 0;    // the profile's, = the root's total and retained

  /// For each vertex, those it immediately dominates: most retained first, then most total, then lower index.
  std::vector<std::vector<uint32_t>> dominator_children() const;
};

/// Builds the graph and its dominator tree from a profile. O((V + E) log(V + E) + Σ stack lengths).
CallGraph build_call_graph(const StackProfile& profile);

}  // namespace memsnap::analysis
