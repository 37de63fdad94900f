// Rendering of `memsnap callgraph`: a dominator tree as text, Graphviz DOT, and JSON.
#pragma once

#include <ostream>

#include "memsnap/analysis/callgraph.hpp"
#include "memsnap/report/flame.hpp"

namespace memsnap::report {

struct CallgraphView {
  const analysis::CallGraph* graph = nullptr;
  const ProfileSource* source = nullptr;
  double min_share = 0.01;  // frames below this share of the root's bytes are pruned (text and DOT)
};

/// The dominator tree top-down, like pprof's tree: each frame once, under the
/// closest frame every path to it passes through, children by retained bytes;
/// columns retained, share, total, self; pruned at min_share; `width` columns.
void write_callgraph_text(std::ostream& out, const CallgraphView& view, int width = 80);
/// Graphviz DOT (boost::write_graphviz): frames with total ≥ min_share, labelled
/// with their figures; edges as thick as their bytes, those below min_share left
/// out; a frame whose every caller was left out hangs from its nearest drawn
/// dominator by a dashed edge.
void write_callgraph_dot(std::ostream& out, const CallgraphView& view);
/// Every vertex (self, total, retained, dominator) and edge, unpruned.
void write_callgraph_json(std::ostream& out, const CallgraphView& view);

}  // namespace memsnap::report
