// The call graph of a stack profile with Boost.Graph, and retained bytes from its dominator tree.
#include "memsnap/analysis/callgraph.hpp"

#include <pthread.h>

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dominator_tree.hpp>
#include <exception>
#include <map>
#include <new>

namespace memsnap::analysis {

namespace {

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;

// Runs `f` on a thread with a stack of `bytes`, rethrowing what it throws.
template <class F>
void on_stack_of(size_t bytes, F& f) {
  struct Call {
    F* f;
    std::exception_ptr error;
    static void* run(void* p) {
      auto* c = static_cast<Call*>(p);
      try {
        (*c->f)();
      } catch (...) {
        c->error = std::current_exception();
      }
      return nullptr;
    }
  } call{&f, nullptr};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, bytes);
  pthread_t thread;
  int rc = pthread_create(&thread, &attr, &Call::run, &call);
  pthread_attr_destroy(&attr);
  if (rc != 0) throw std::bad_alloc();
  pthread_join(thread, nullptr);
  if (call.error) std::rethrow_exception(call.error);
}

// Immediate dominators from the root (vertex 0); kNoVertex for the root and for
// vertices the root does not reach.
//
// Boost's Lengauer-Tarjan evaluates its forest with a recursive path compression
// whose depth can reach the number of vertices (a recursion that returns to the
// outermost frame of a deep stack does it). memsnap never recurses as deep as its
// input on the caller's stack, so the algorithm runs on a thread whose stack holds
// that depth: a level takes about 30 bytes optimised and more under AddressSanitizer,
// whose frames carry redzones and whose size depends on what inlines (512 bytes a level
// overflowed in CI's -O1 -g1 build), and the pages are only committed as they are touched.
#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kStackPerLevel = 4096;
#else
constexpr size_t kStackPerLevel = 512;
#endif

std::vector<uint32_t> immediate_dominators(const Graph& g) {
  const size_t n = boost::num_vertices(g);
  std::vector<Vertex> idom(n, boost::graph_traits<Graph>::null_vertex());
  auto idom_map = boost::make_iterator_property_map(idom.begin(), boost::get(boost::vertex_index, g));
  auto run = [&] { boost::lengauer_tarjan_dominator_tree(g, boost::vertex(0, g), idom_map); };
  on_stack_of((size_t{8} << 20) + n * kStackPerLevel, run);
  std::vector<uint32_t> out(n, kNoVertex);
  for (size_t v = 1; v < n; ++v)
    if (idom[v] != boost::graph_traits<Graph>::null_vertex()) out[v] = static_cast<uint32_t>(idom[v]);
  return out;
}

}  // namespace

CallGraph build_call_graph(const StackProfile& profile) {
  CallGraph cg;
  cg.options = profile.options;
  cg.frames = profile.frames;
  cg.bytes = profile.bytes;
  cg.blocks = profile.blocks;
  const size_t n = profile.frames.size() + 1;
  cg.vertices.resize(n);
  for (size_t f = 0; f < profile.frames.size(); ++f) cg.vertices[f + 1].frame = static_cast<uint32_t>(f);

  // Edges, each counted once per stack (a recursive stack repeats edges); so are
  // vertices for `total`. A stamp per edge and per vertex remembers the last stack
  // that counted it.
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> edge_ids;
  std::vector<uint32_t> edge_stamp, vertex_stamp(n, kNoVertex);
  for (uint32_t si = 0; si < profile.stacks.size(); ++si) {
    const ProfileStack& s = profile.stacks[si];
    uint32_t from = 0;
    auto visit = [&](uint32_t v) {
      if (vertex_stamp[v] != si) {
        vertex_stamp[v] = si;
        cg.vertices[v].total_bytes += s.bytes;
        cg.vertices[v].total_blocks += s.blocks;
      }
    };
    visit(0);
    for (uint32_t f : s.frames) {
      uint32_t to = f + 1;
      auto [it, inserted] = edge_ids.try_emplace({from, to}, uint32_t(cg.edges.size()));
      if (inserted) {
        cg.edges.push_back(CallEdge{from, to, 0, 0});
        edge_stamp.push_back(kNoVertex);
      }
      if (edge_stamp[it->second] != si) {
        edge_stamp[it->second] = si;
        cg.edges[it->second].bytes += s.bytes;
        cg.edges[it->second].blocks += s.blocks;
      }
      visit(to);
      from = to;
    }
    cg.vertices[from].self_bytes += s.bytes;
    cg.vertices[from].self_blocks += s.blocks;
  }

  // Sorted by (from, to) and renumbered, so the order does not depend on the stacks' order.
  std::sort(cg.edges.begin(), cg.edges.end(),
            [](const CallEdge& a, const CallEdge& b) { return std::tie(a.from, a.to) < std::tie(b.from, b.to); });
  Graph g(n);
  for (const CallEdge& e : cg.edges) {
    boost::add_edge(e.from, e.to, g);
    if (e.from != e.to) cg.vertices[e.to].callers += 1;
  }

  std::vector<uint32_t> idom = immediate_dominators(g);
  for (size_t v = 0; v < n; ++v) {
    cg.vertices[v].dominator = idom[v];
    cg.vertices[v].retained_bytes = cg.vertices[v].self_bytes;
    cg.vertices[v].retained_blocks = cg.vertices[v].self_blocks;
  }
  // Retained = Σ self over the dominator subtree: add each vertex into its dominator,
  // children before parents (reverse pre-order of the dominator tree; no recursion).
  auto children = cg.dominator_children();
  std::vector<uint32_t> order, todo{0};
  order.reserve(n);
  while (!todo.empty()) {
    uint32_t v = todo.back();
    todo.pop_back();
    order.push_back(v);
    todo.insert(todo.end(), children[v].begin(), children[v].end());
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const CallVertex& v = cg.vertices[*it];
    if (v.dominator == kNoVertex) continue;
    cg.vertices[v.dominator].retained_bytes += v.retained_bytes;
    cg.vertices[v.dominator].retained_blocks += v.retained_blocks;
  }
  return cg;
}

std::vector<std::vector<uint32_t>> CallGraph::dominator_children() const {
  std::vector<std::vector<uint32_t>> children(vertices.size());
  for (uint32_t v = 0; v < vertices.size(); ++v)
    if (vertices[v].dominator != kNoVertex) children[vertices[v].dominator].push_back(v);
  for (auto& c : children)
    std::sort(c.begin(), c.end(), [&](uint32_t a, uint32_t b) {
      const CallVertex &x = vertices[a], &y = vertices[b];
      if (x.retained_bytes != y.retained_bytes) return x.retained_bytes > y.retained_bytes;
      if (x.total_bytes != y.total_bytes) return x.total_bytes > y.total_bytes;
      return a < b;
    });
  return children;
}

}  // namespace memsnap::analysis
