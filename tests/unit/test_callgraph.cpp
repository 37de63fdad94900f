// Stack profiles, flame trees and the call graph with its dominator tree, on hand-built
// snapshots whose answers are worked out by hand, and their invariants on every fixture.
#include <doctest/doctest.h>

#include <map>
#include <sstream>

#include "memsnap/analysis/accounting.hpp"
#include "memsnap/analysis/callgraph.hpp"
#include "memsnap/analysis/stacks.hpp"
#include "memsnap/report/callgraph.hpp"
#include "memsnap/report/flame.hpp"
#include "memsnap/snapshot/load.hpp"
#include "support/testdata.hpp"

using namespace memsnap;
using analysis::StackState;
using snapshot::BlockState;

namespace {

// A device of one segment whose blocks have the stacks given root first, as
// "file.py:LINE:function" (native frames: "??:0:name").
struct Hand {
  snapshot::Snapshot snap;
  snapshot::Device dev;
  uint64_t addr = 0x7f0000000000;

  snapshot::FrameId frame(const std::string& text) {
    size_t c1 = text.find(':'), c2 = text.find(':', c1 + 1);
    snapshot::Frame f;
    f.filename = snap.strings.intern(text.substr(0, c1));
    f.line = std::stoll(text.substr(c1 + 1, c2 - c1 - 1));
    f.name = snap.strings.intern(text.substr(c2 + 1));
    return snap.frames.intern(f);
  }
  void block(const std::vector<std::string>& root_first, uint64_t size,
             BlockState state = BlockState::ActiveAllocated) {
    std::vector<snapshot::FrameId> inner_first;
    for (auto it = root_first.rbegin(); it != root_first.rend(); ++it) inner_first.push_back(frame(*it));
    snapshot::Block b;
    b.address = addr;
    b.size = size;
    b.requested_size = size;
    b.state = state;
    b.stack = snap.stacks.intern(inner_first);
    dev.blocks.push_back(b);
    addr += size;
  }
  const snapshot::Device& done() {
    snapshot::Segment s;
    s.address = 0x7f0000000000;
    s.total_size = addr - s.address;
    s.block_count = static_cast<uint32_t>(dev.blocks.size());
    dev.segments = {s};
    snap.devices = {dev};
    return snap.devices[0];
  }
};

// "function:line", or "function" for a frame without a line; appended piece by piece: GCC 12
// warns falsely on operator+ of a C string and a temporary (-Wstringop-overflow, seen once the
// tests' precompiled header changed what inlines: the family of GCC bug 105329).
std::string label(const auto& f) {
  std::string s(f.function);
  if (f.line) {
    s += ':';
    s += std::to_string(*f.line);
  }
  return s;
}

// Vertices by "function:line" (every test frame's function and line name it uniquely).
std::map<std::string, const analysis::CallVertex*> by_name(const analysis::CallGraph& g) {
  std::map<std::string, const analysis::CallVertex*> out;
  out["<root>"] = &g.vertices[0];
  for (size_t i = 1; i < g.vertices.size(); ++i) {
    const auto& f = g.frames[g.vertices[i].frame];
    out[label(f)] = &g.vertices[i];
  }
  return out;
}

std::string name_of(const analysis::CallGraph& g, uint32_t v) {
  if (v == analysis::kNoVertex) return "none";
  if (v == 0) return "<root>";
  const auto& f = g.frames[g.vertices[v].frame];
  return label(f);
}

const analysis::CallEdge* edge(const analysis::CallGraph& g, const std::string& from, const std::string& to) {
  for (const auto& e : g.edges)
    if (name_of(g, e.from) == from && name_of(g, e.to) == to) return &e;
  return nullptr;
}

void check_invariants(const analysis::CallGraph& g) {
  uint64_t self = 0;
  for (const auto& v : g.vertices) {
    CHECK(v.total_bytes >= v.retained_bytes);
    CHECK(v.retained_bytes >= v.self_bytes);
    self += v.self_bytes;
  }
  CHECK(self == g.bytes);
  CHECK(g.vertices[0].retained_bytes == g.bytes);
  CHECK(g.vertices[0].total_bytes == g.bytes);
}

}  // namespace

TEST_CASE("dominators of a diamond and of recursion, worked out by hand") {
  // Stacks (root first) and bytes:
  //   S1 main > a > alloc          10   two callers reach one allocator: a diamond
  //   S2 main > b > alloc          20
  //   S3 main > a                   5   a allocates itself too
  //   S4 main > f > f > f > leaf    7   f recurses (one frame, three times on the stack)
  //   S5 main > g > h > g > h > x   3   g and h recurse mutually
  // Call graph: root>main; main>{a,b,f,g}; a>alloc; b>alloc; f>f; f>leaf; g>h; h>g; h>x.
  // Dominator tree: root>main; main>{a,b,alloc,f,g}; f>leaf; g>h; h>x. alloc is under
  // main, not under a or b: removing a alone leaves S2's path to it.
  Hand h;
  h.block({"m.py:1:main", "m.py:2:a", "m.py:3:alloc"}, 10);
  h.block({"m.py:1:main", "m.py:4:b", "m.py:3:alloc"}, 20);
  h.block({"m.py:1:main", "m.py:2:a"}, 5);
  h.block({"m.py:1:main", "m.py:5:f", "m.py:5:f", "m.py:5:f", "m.py:6:leaf"}, 7);
  h.block({"m.py:1:main", "m.py:7:g", "m.py:8:h", "m.py:7:g", "m.py:8:h", "m.py:9:x"}, 3);
  const auto& dev = h.done();
  auto profile = analysis::stack_profile(h.snap, dev);
  CHECK(profile.bytes == 45);
  CHECK(profile.stacks.size() == 5);
  auto g = analysis::build_call_graph(profile);
  check_invariants(g);
  auto v = by_name(g);
  REQUIRE(v.size() == 10);

  struct Want {
    const char* name;
    uint64_t self, total, retained;
    const char* dominator;
  };
  const Want want[] = {
      {"<root>", 0, 45, 45, "none"}, {"main:1", 0, 45, 45, "<root>"},   {"a:2", 5, 15, 5, "main:1"},
      {"b:4", 0, 20, 0, "main:1"},   {"alloc:3", 30, 30, 30, "main:1"}, {"f:5", 0, 7, 7, "main:1"},
      {"leaf:6", 7, 7, 7, "f:5"},    {"g:7", 0, 3, 3, "main:1"},        {"h:8", 0, 3, 3, "g:7"},
      {"x:9", 3, 3, 3, "h:8"},
  };
  for (const Want& w : want) {
    CAPTURE(w.name);
    REQUIRE(v.count(w.name));
    const auto* vx = v[w.name];
    CHECK(vx->self_bytes == w.self);
    CHECK(vx->total_bytes == w.total);  // f and g/h: each stack once, though they recur in it
    CHECK(vx->retained_bytes == w.retained);
    CHECK(name_of(g, vx->dominator) == w.dominator);
  }
  CHECK(v["alloc:3"]->callers == 2);
  CHECK(v["f:5"]->callers == 1);  // main; its call to itself is not another caller
  CHECK(v["g:7"]->callers == 2);  // main and h

  // Edges: bytes and blocks once per stack, even where recursion repeats them.
  struct WantEdge {
    const char* from;
    const char* to;
    uint64_t bytes, blocks;
  };
  const WantEdge edges[] = {{"<root>", "main:1", 45, 5}, {"main:1", "a:2", 15, 2}, {"a:2", "alloc:3", 10, 1},
                            {"b:4", "alloc:3", 20, 1},   {"f:5", "f:5", 7, 1},     {"f:5", "leaf:6", 7, 1},
                            {"g:7", "h:8", 3, 1},        {"h:8", "g:7", 3, 1},     {"h:8", "x:9", 3, 1}};
  CHECK(g.edges.size() == 12);
  for (const WantEdge& w : edges) {
    CAPTURE(w.from);
    CAPTURE(w.to);
    const auto* e = edge(g, w.from, w.to);
    REQUIRE(e);
    CHECK(e->bytes == w.bytes);
    CHECK(e->blocks == w.blocks);
  }

  // The dominator tree's children of main, most retained first.
  auto children = g.dominator_children();
  std::vector<std::string> names;
  for (uint32_t c : children[v["main:1"] - &g.vertices[0]]) names.push_back(name_of(g, c));
  CHECK(names == std::vector<std::string>{"alloc:3", "f:5", "a:2", "g:7", "b:4"});
}

TEST_CASE("--by-function merges the lines of a function; the flame tree keeps every path") {
  Hand h;
  h.block({"m.py:1:main", "m.py:10:step", "m.py:3:alloc"}, 100);
  h.block({"m.py:1:main", "m.py:11:step", "m.py:3:alloc"}, 50);
  h.block({"m.py:1:main", "m.py:11:step"}, 6);
  const auto& dev = h.done();
  analysis::StackOptions o;
  o.by_function = true;
  auto g = analysis::build_call_graph(analysis::stack_profile(h.snap, dev, o));
  check_invariants(g);
  REQUIRE(g.frames.size() == 3);
  auto v = by_name(g);
  CHECK(v["step"]->total_bytes == 156);
  CHECK(v["step"]->self_bytes == 6);
  CHECK(v["step"]->retained_bytes == 156);  // one vertex now: every path passes through it
  CHECK(name_of(g, v["alloc"]->dominator) == "step");

  // By line, the prefix tree: root > main > {step:10 > alloc, step:11 > alloc}, heaviest first.
  auto t = analysis::flame_tree(analysis::stack_profile(h.snap, dev));
  REQUIRE(t.nodes.size() == 6);
  CHECK(t.nodes[0].bytes == 156);
  CHECK(t.subtree_size[0] == 6);
  CHECK(t.frames[t.nodes[2].frame].line == 10);  // 100 bytes before 56
  CHECK(t.nodes[2].bytes == 100);
  CHECK(t.nodes[4].bytes == 56);
  CHECK(t.nodes[4].self_bytes == 6);
  CHECK(t.nodes[5].parent == 4);
  CHECK(t.max_depth == 3);
  for (size_t i = 1; i < t.nodes.size(); ++i) CHECK(t.nodes[i].depth == t.nodes[t.nodes[i].parent].depth + 1);
}

TEST_CASE("the noise filter, C++ frames, missing stacks and the three states") {
  Hand h;
  // Innermost first in the file: allocator (C++), a noise frame, torch, user code.
  h.block({"train.py:9:main", "/site-packages/torch/nn/functional.py:5:linear", "ceval.c:0:_PyEval_EvalFrameDefault",
           "??:0:at::native::empty_cuda(c10::ArrayRef<long>)"},
          512);
  // Captured in C++ only (the autograd thread): its C++ frames stay.
  h.block({"??:0:torch::autograd::Engine::thread_main()", "??:0:at::native::empty_cuda(c10::ArrayRef<long>)"}, 1024);
  h.block({}, 2048);                                                  // no stack
  h.block({"train.py:9:main"}, 4096, BlockState::ActivePendingFree);  // pending free
  h.block({}, 8192, BlockState::Inactive);                            // cached free
  const auto& dev = h.done();

  auto texts = [&](const analysis::StackProfile& p) {
    std::map<std::string, uint64_t> out;
    for (const auto& s : p.stacks) {
      std::string line;
      for (uint32_t f : s.frames) {
        if (!line.empty()) line += ';';
        line += p.frames[f].function;
      }
      out[line] += s.bytes;
    }
    return out;
  };
  auto allocated = analysis::stack_profile(h.snap, dev);
  CHECK(texts(allocated) ==
        std::map<std::string, uint64_t>{
            {"main;linear", 512},
            {"torch::autograd::Engine::thread_main();at::native::empty_cuda(c10::ArrayRef<long>)", 1024},
            {"<no stack recorded>", 2048}});
  analysis::StackOptions cpp;
  cpp.cpp = true;
  CHECK(texts(analysis::stack_profile(h.snap, dev, cpp))
            .count("main;linear;at::native::empty_cuda(c10::ArrayRef<long>)"));

  analysis::Context ctx(h.snap);
  auto summary = analysis::account(ctx, dev);
  CHECK(allocated.bytes == summary.allocated_bytes);
  for (auto state : {StackState::Allocated, StackState::Active, StackState::All}) {
    analysis::StackOptions o;
    o.state = state;
    auto p = analysis::stack_profile(h.snap, dev, o);
    CHECK(p.bytes == analysis::expected_profile_bytes(dev, state));
  }
  analysis::StackOptions all;
  all.state = StackState::All;
  auto everything = texts(analysis::stack_profile(h.snap, dev, all));
  CHECK(everything["<cached free>"] == 8192);
  CHECK(everything["main"] == 4096);
  CHECK(analysis::expected_profile_bytes(dev, StackState::All) == summary.reserved_bytes);
}

TEST_CASE("several devices: a <device N> root frame each, none for a device with nothing counted") {
  Hand h;
  h.block({"m.py:1:main"}, 512);
  h.block({"m.py:2:other"}, 1024, BlockState::Inactive);
  snapshot::Device d0 = h.done();
  snapshot::Device d1 = d0;
  d1.index = 1;
  analysis::StackProfileBuilder b(h.snap, {});
  b.add(d0, true);
  b.add(d1, true);
  snapshot::Device empty;
  empty.index = 2;
  b.add(empty, true);
  auto p = b.take();
  CHECK(p.bytes == 1024);
  REQUIRE(p.stacks.size() == 2);
  CHECK(p.frames[p.stacks[0].frames[0]].function == "<device 0>");
  CHECK(p.frames[p.stacks[1].frames[0]].function == "<device 1>");
  CHECK(p.frames.size() == 3);  // main and two device frames: none for device 2
  check_invariants(analysis::build_call_graph(p));
}

TEST_CASE("a differential profile matches stacks of two files by their frames' text") {
  Hand a, b;
  a.block({"m.py:1:main", "m.py:2:grow"}, 100);
  a.block({"m.py:1:main", "m.py:3:shrink"}, 300);
  b.block({"m.py:1:main", "m.py:3:shrink"}, 100);  // interned in another order, other ids
  b.block({"m.py:1:main", "m.py:2:grow"}, 250);
  b.block({"m.py:1:main", "m.py:4:new"}, 50);
  auto pa = analysis::stack_profile(a.snap, a.done()), pb = analysis::stack_profile(b.snap, b.done());
  auto d = analysis::diff_profiles(pa, pb);
  CHECK(d.before == 400);
  CHECK(d.after == 400);
  REQUIRE(d.stacks.size() == 3);
  std::ostringstream folded;
  report::write_folded(folded, d);
  CHECK(folded.str() ==
        "main (m.py:1);grow (m.py:2) 100 250\n"
        "main (m.py:1);new (m.py:4) 0 50\n"
        "main (m.py:1);shrink (m.py:3) 300 100\n");
  auto t = analysis::flame_tree(d);
  CHECK(t.differential);
  CHECK(t.nodes[0].width == 250 + 300 + 50);  // Σ max(before, after) per stack
  CHECK(t.nodes[0].before == 400);
  CHECK(t.nodes[0].bytes == 400);
}

TEST_CASE("folded stacks: root first, sorted, one line per stack, hostile names made safe") {
  Hand h;
  h.block({"m.py:1:main", "m.py:2:b"}, 7);
  h.block({"m.py:1:main", "m.py:2:a"}, 5);
  h.block({"m.py:1:main", "x.py:3:evil;\x1b[31mname 42"}, 3);
  auto p = analysis::stack_profile(h.snap, h.done());
  std::ostringstream out;
  report::write_folded(out, p);
  CHECK(out.str() ==
        "main (m.py:1);a (m.py:2) 5\n"
        "main (m.py:1);b (m.py:2) 7\n"
        "main (m.py:1);evil\\x3b\\x1b[31mname 42 (x.py:3) 3\n");
}

TEST_CASE("a stack deeper than any recursion limit: no recursion over input depth") {
  // 200,000 distinct frames in one stack, and a second stack through half of them:
  // the prefix tree, the graph and its dominator tree are all that deep.
  Hand h;
  std::vector<std::string> deep;
  for (int i = 0; i < 200000; ++i) deep.push_back("d.py:" + std::to_string(i + 1) + ":f");
  h.block(deep, 512);
  deep.resize(100000);
  h.block(deep, 1024);
  // Recursion back to the outermost frame: a cycle as long as the stack, which makes
  // Lengauer-Tarjan's path compression (recursive in Boost) walk the whole chain.
  deep.push_back("d.py:1:f");
  deep.push_back("d.py:0:leaf");
  h.block(deep, 2048);
  const auto& dev = h.done();
  auto p = analysis::stack_profile(h.snap, dev);
  auto g = analysis::build_call_graph(p);
  check_invariants(g);
  // Frames are numbered innermost first: each is dominated by its caller, the next one.
  CHECK(g.vertices[1].dominator == 2);
  CHECK(g.vertices[1].retained_bytes == 512);
  CHECK(g.vertices[100001].retained_bytes == 1536);
  CHECK(g.vertices[200000].retained_bytes == 1536 + 2048);  // d.py:1, the outermost, also reaches the leaf
  auto t = analysis::flame_tree(p);
  CHECK(t.max_depth == 200000);
  CHECK(t.subtree_size[0] == 200003);
}

TEST_CASE("on every fixture: folded bytes are the state's own totals, and total >= retained >= self") {
  for (const auto& row : test::snapgen_manifest()) {
    CAPTURE(row.file);
    auto l = snapshot::load_snapshot(test::testdata("snapgen/" + row.file).string());
    analysis::Context ctx(l.snapshot);
    for (const auto& d : l.snapshot.devices) {
      auto totals = analysis::account(ctx, d);
      for (auto state : {StackState::Allocated, StackState::Active, StackState::All}) {
        for (bool cpp : {false, true}) {
          analysis::StackOptions o;
          o.state = state;
          o.cpp = cpp;
          auto p = analysis::stack_profile(l.snapshot, d, o);
          uint64_t want = state == StackState::Allocated ? totals.allocated_bytes
                          : state == StackState::Active  ? totals.active_bytes
                                                         : totals.active_bytes + totals.external_free_bytes;
          CHECK(p.bytes == want);
          uint64_t sum = 0;
          for (const auto& s : p.stacks) sum += s.bytes;
          CHECK(sum == want);
          auto g = analysis::build_call_graph(p);
          check_invariants(g);
          CHECK(g.vertices[0].retained_bytes == want);
        }
      }
    }
  }
}
