// Iterations only with evidence, structure otherwise, and the leaks and growth they feed:
// snapgen truth (train, leak, forward, inference), hand-built traces for each rule, and
// the real snapshots, whose every claim is checked against the file itself.
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include "memsnap/analysis/allocator_rules.hpp"
#include "memsnap/analysis/analyze.hpp"
#include "memsnap/analysis/iterations.hpp"
#include "memsnap/analysis/replay.hpp"
#include "memsnap/snapshot/load.hpp"
#include "support/analyze_json.hpp"
#include "support/testdata.hpp"

using namespace memsnap;
using analysis::FindingKind;
using analysis::IterationMethod;
using analysis::NoIterations;

namespace {

struct Analyzed {
  snapshot::Loaded loaded;
  analysis::DeviceAnalysis device;
};

Analyzed analyze_file(const std::filesystem::path& p, int device = 0, std::string marker = "") {
  Analyzed a{snapshot::load_snapshot(p.string()), {}};
  analysis::Context ctx(a.loaded.snapshot);
  analysis::AnalyzeOptions o;
  o.device = device;
  o.iterations.marker = std::move(marker);
  a.device = std::move(analysis::analyze(ctx, o).devices.at(0));
  return a;
}

bool has_finding(const analysis::DeviceAnalysis& d, FindingKind k) {
  for (const auto& f : d.findings)
    if (f.kind == k) return true;
  return false;
}

/// A trace written by hand: stacks given outermost frame first as "file.py:LINE:function",
/// blocks bump-allocated in one 1 GiB segment; the dump is what is still live at the end.
class TraceBuilder {
 public:
  snapshot::StackId stack(std::vector<std::string> outermost_first) {
    std::vector<snapshot::FrameId> frames;
    for (auto it = outermost_first.rbegin(); it != outermost_first.rend(); ++it) {
      size_t c1 = it->find(':'), c2 = it->rfind(':');
      snapshot::Frame f;
      f.filename = snap.strings.intern(it->substr(0, c1));
      f.line = std::stoll(it->substr(c1 + 1, c2 - c1 - 1));
      f.name = snap.strings.intern(it->substr(c2 + 1));
      frames.push_back(snap.frames.intern(f));
    }
    return snap.stacks.intern(frames);
  }
  uint64_t alloc(uint64_t size, snapshot::StackId st) {
    uint64_t rounded = analysis::rules::round_size(size);
    uint64_t addr = next_;
    next_ += rounded;
    live_[addr] = {rounded, size, st};
    event(snapshot::Action::Alloc, addr, size, st);
    return addr;
  }
  void free(uint64_t addr) {
    auto it = live_.find(addr);
    REQUIRE(it != live_.end());
    event(snapshot::Action::FreeRequested, addr, it->second.requested, it->second.stack);
    event(snapshot::Action::FreeCompleted, addr, it->second.requested, it->second.stack);
    live_.erase(it);
  }
  /// Builds the device: a segment_alloc first, the live blocks at the dump.
  snapshot::Snapshot& finish() {
    snapshot::Device d;
    snapshot::TraceEvent seg;
    seg.action = snapshot::Action::SegmentAlloc, seg.addr = kBase, seg.size = kSize;
    d.trace.push_back(seg);
    for (const auto& e : events_) d.trace.push_back(e);
    snapshot::Segment s;
    s.address = kBase, s.total_size = kSize, s.pool = snapshot::Pool::Large;
    uint64_t cursor = kBase;
    for (const auto& [addr, b] : live_) {
      if (addr > cursor) d.blocks.push_back({cursor, addr - cursor, 0, {}, snapshot::BlockState::Inactive});
      d.blocks.push_back({addr, b.size, b.requested, b.stack, snapshot::BlockState::ActiveAllocated});
      cursor = addr + b.size;
    }
    if (cursor < kBase + kSize)
      d.blocks.push_back({cursor, kBase + kSize - cursor, 0, {}, snapshot::BlockState::Inactive});
    s.block_count = static_cast<uint32_t>(d.blocks.size());
    d.segments = {s};
    snap.devices = {d};
    return snap;
  }
  snapshot::Snapshot snap;

 private:
  static constexpr uint64_t kBase = 0x7f0000000000, kSize = 1ull << 30;
  struct Live {
    uint64_t size, requested;
    snapshot::StackId stack;
  };
  void event(snapshot::Action a, uint64_t addr, uint64_t size, snapshot::StackId st) {
    snapshot::TraceEvent e;
    e.action = a, e.addr = addr, e.size = size, e.stack = st;
    e.time_us = 1'700'000'000'000'000 + int64_t(events_.size()) * 10;
    events_.push_back(e);
  }
  uint64_t next_ = kBase;
  std::map<uint64_t, Live> live_;
  std::vector<snapshot::TraceEvent> events_;
};

analysis::DeviceAnalysis analyze_snapshot(const snapshot::Snapshot& s) {
  analysis::Context ctx(s);
  return std::move(analysis::analyze(ctx, {}).devices.at(0));
}

const std::string kModule = "/env/lib/python3.11/site-packages/torch/nn/modules/module.py:1750:_call_impl";
const std::string kLinear = "/env/lib/python3.11/site-packages/torch/nn/modules/linear.py:125:forward";

}  // namespace

TEST_CASE("leak scenario: the truth's leak site, its growth per iteration, the autograd pattern") {
  for (const char* name : {"leak", "expandable_leak"}) {
    CAPTURE(name);
    auto a = analyze_file(test::testdata(std::string("snapgen/") + name + ".pickle"));
    auto truth = test::read_json_file(test::testdata(std::string("snapgen/") + name + ".truth.json"));
    const auto& it = a.device.iterations;
    REQUIRE(it.found());
    CHECK(it.method == IterationMethod::TrainingLoop);
    CHECK(it.count == truth["iterations"].get<uint64_t>());
    double per_step = truth["leak"]["bytes_per_step_per_device"].get<double>();
    CHECK(std::fabs(it.growth_bytes_per_iteration - per_step) <= 0.03 * per_step);
    double total = 0;
    bool found = false;
    for (const auto& l : a.device.leaks) {
      total += l.growth_bytes_per_iteration;
      CHECK(l.iterations_judged == it.count - 1);  // one count: the iterations line's
      if (l.site == truth["leak"]["site"].get<std::string>()) {
        found = true;
        CHECK(l.pattern == analysis::LeakPattern::AutogradHistory);
        CHECK(l.growth_allocations_per_iteration == doctest::Approx(1.0));
        CHECK(l.iterations_retained >= it.count - 2);
        REQUIRE_FALSE(l.stack.empty());
        CHECK(l.stack.front() == l.site);
      }
    }
    CHECK(found);
    CHECK(std::fabs(total - per_step) <= 0.03 * per_step);
    // One growth figure: the finding's headline is the iterations' trend.
    REQUIRE(has_finding(a.device, FindingKind::LeakAutogradHistory));
    for (const auto& f : a.device.findings)
      if (f.kind == FindingKind::LeakAutogradHistory) CHECK(f.bytes == uint64_t(it.growth_bytes_per_iteration));
  }
}

TEST_CASE("steady training loops: iterations as the truth counts them, no leak") {
  for (const char* name : {"train", "streams2", "legacy", "frag", "expandable"}) {
    CAPTURE(name);
    auto a = analyze_file(test::testdata(std::string("snapgen/") + name + ".pickle"));
    auto truth = test::read_json_file(test::testdata(std::string("snapgen/") + name + ".truth.json"));
    CHECK(a.device.trace.consistent);
    REQUIRE(a.device.iterations.found());
    CHECK(a.device.iterations.method == IterationMethod::TrainingLoop);
    CHECK(a.device.iterations.count == truth["iterations"].get<uint64_t>());
    CHECK(a.device.leaks.empty());
    CHECK_FALSE(a.device.structure.has_value());
  }
}

TEST_CASE("a forward pass that keeps its activations: structure, no iterations, the no_grad finding") {
  auto a = analyze_file(test::testdata("snapgen/forward.pickle"));
  auto truth = test::read_json_file(test::testdata("snapgen/forward.truth.json"));
  CHECK(truth["iterations"].get<uint64_t>() == 0);
  CHECK(a.device.iterations.count == 0);
  CHECK(a.device.leaks.empty());
  CHECK(a.device.growing.empty());
  REQUIRE(a.device.structure);
  CHECK(a.device.structure->keeps_activations);
  CHECK_FALSE(a.device.structure->backward_seen);
  CHECK(a.device.structure->repeats >= 2);
  REQUIRE(has_finding(a.device, FindingKind::ActivationsKeptWithoutBackward));
  CHECK_FALSE(has_finding(a.device, FindingKind::GrowthUnattributed));
  auto j = test::analyze_json(a.loaded.snapshot)["devices"][0];
  CHECK(j["iterations"]["count"] == 0);
  CHECK(j["structure"]["kind"] == "layers");
  bool advice = false;
  for (const auto& f : j["findings"])
    if (f["kind"] == "activations_kept_without_backward")
      advice = f["advice"].get<std::string>().find("torch.no_grad()") != std::string::npos;
  CHECK(advice);
}

TEST_CASE("inference under no_grad: each whole pass is an iteration") {
  auto a = analyze_file(test::testdata("snapgen/inference.pickle"));
  auto truth = test::read_json_file(test::testdata("snapgen/inference.truth.json"));
  REQUIRE(a.device.iterations.found());
  CHECK(a.device.iterations.method == IterationMethod::InferenceLoop);
  CHECK(a.device.iterations.count == truth["iterations"].get<uint64_t>());
  CHECK(a.device.leaks.empty());
  CHECK_FALSE(has_finding(a.device, FindingKind::ActivationsKeptWithoutBackward));
}

TEST_CASE("a wrapped ring buffer: mid-run window, iterations found, too few to judge leaks") {
  auto a = analyze_file(test::testdata("snapgen/ring.pickle"));
  CHECK(a.device.trace.window_starts_mid_run);
  CHECK(a.device.trace.consistent);
  CHECK(a.device.iterations.found());
  CHECK(a.device.iterations.count < 5);
  CHECK(a.device.leaks.empty());
}

TEST_CASE("the peak equals an independent replay by requested sizes") {
  // train.pickle's trace starts with an empty allocator and every block it frees
  // was split to its rounded size, so a plain running sum reproduces allocated.
  auto a = analyze_file(test::testdata("snapgen/train.pickle"));
  const auto& d = a.loaded.snapshot.devices[0];
  std::map<uint64_t, uint64_t> live;
  uint64_t cur = 0, best = 0;
  uint32_t best_at = 0;
  for (uint32_t i = 0; i < d.trace.size(); ++i) {
    const auto& e = d.trace[i];
    if (e.action == snapshot::Action::Alloc) {
      live[e.addr] = analysis::rules::round_size(e.size);
      cur += live[e.addr];
    } else if (e.action == snapshot::Action::FreeRequested && live.count(e.addr)) {
      cur -= live[e.addr];
      live.erase(e.addr);
    }
    if (cur > best) best = cur, best_at = i;
  }
  REQUIRE(a.device.peaks.allocated);
  const auto& p = *a.device.peaks.allocated;
  CHECK(p.allocated_bytes == best);
  CHECK(p.event_index == best_at);
  uint64_t sum = 0;
  for (const auto& s : p.top_sites) sum += s.live_bytes;
  CHECK(sum <= best);
  CHECK(p.top_sites.front().live_bytes >= p.top_sites.back().live_bytes);
  REQUIRE(a.device.peaks.reserved);
  CHECK(a.device.peaks.reserved->bytes >= p.reserved_bytes);
}

TEST_CASE("--iteration-marker: a site delimits iterations") {
  auto truth = test::read_json_file(test::testdata("snapgen/leak.truth.json"));
  auto a = analyze_file(test::testdata("snapgen/leak.pickle"), 0, "train.py:110");
  CHECK(a.device.iterations.found());
  CHECK(a.device.iterations.method == IterationMethod::Marker);
  CHECK(a.device.iterations.count == truth["iterations"].get<uint64_t>());
  bool leak_site = false;
  for (const auto& l : a.device.leaks) leak_site = leak_site || l.site == truth["leak"]["site"].get<std::string>();
  CHECK(leak_site);
  auto b = analyze_file(test::testdata("snapgen/leak.pickle"), 0, "no_such_function");
  CHECK_FALSE(b.device.iterations.found());
  CHECK(b.device.iterations.reason == NoIterations::MarkerNotFound);
  CHECK(b.device.leaks.empty());
}

TEST_CASE("layers inside one forward pass: structure, never iterations") {
  // model(x) runs 12 blocks in a loop inside the model's forward, under no_grad:
  // each block frees what it used, exactly like whole passes would, and only the
  // module call around the loop tells them apart.
  TraceBuilder t;
  auto outer = std::vector<std::string>{"bench.py:249:<module>", "bench.py:117:profile", kModule};
  auto with = [&](std::vector<std::string> inner) {
    auto v = outer;
    v.insert(v.end(), inner.begin(), inner.end());
    return t.stack(v);
  };
  auto emb = with({"model.py:245:forward"});
  auto attn = with({"model.py:253:forward", kModule, "model.py:382:forward", kLinear});
  auto mlp = with({"model.py:253:forward", kModule, "model.py:386:forward", kLinear});
  auto head = with({"model.py:256:forward", kLinear});
  uint64_t x = t.alloc(2 << 20, emb);
  for (int layer = 0; layer < 12; ++layer) {
    uint64_t a = t.alloc(4 << 20, attn);
    uint64_t m = t.alloc(2 << 20, mlp);
    t.free(a);
    t.free(x);
    x = m;
  }
  t.alloc(8 << 20, head);
  auto d = analyze_snapshot(t.finish());
  CHECK(d.iterations.count == 0);
  CHECK(d.iterations.reason == NoIterations::InsideOneCall);
  REQUIRE(d.structure);
  CHECK(d.structure->loop_site == "model.py:253:forward");
  CHECK(d.leaks.empty());
  CHECK_FALSE(has_finding(d, FindingKind::GrowthUnattributed));
}

TEST_CASE("a training step with backward work and the optimizer is an iteration; without the optimizer it is not") {
  for (bool optimizer : {true, false}) {
    CAPTURE(optimizer);
    TraceBuilder t;
    auto fwd = t.stack({"train.py:240:<module>", "train.py:205:main", "train.py:120:train_step", kModule, kLinear});
    auto loss = t.stack({"train.py:240:<module>", "train.py:205:main", "train.py:124:train_step"});
    auto bwd = t.stack({"train.py:240:<module>", "train.py:205:main", "train.py:127:train_step",
                        "/env/lib/python3.11/site-packages/torch/_tensor.py:648:backward",
                        "/env/lib/python3.11/site-packages/torch/autograd/graph.py:825:_engine_run_backward"});
    auto opt = t.stack({"train.py:240:<module>", "train.py:205:main", "train.py:131:train_step",
                        "/env/lib/python3.11/site-packages/torch/optim/adam.py:247:step"});
    auto other = t.stack({"train.py:240:<module>", "train.py:205:main", "train.py:131:train_step"});
    for (int step = 0; step < 8; ++step) {
      uint64_t h1 = t.alloc(1 << 20, fwd), h2 = t.alloc(1 << 20, fwd), l = t.alloc(4, loss);
      uint64_t g = t.alloc(1 << 20, bwd);
      t.free(h2);
      t.free(h1);
      uint64_t tmp = t.alloc(1 << 20, optimizer ? opt : other);
      t.free(tmp);
      t.free(g);
      t.free(l);
    }
    auto d = analyze_snapshot(t.finish());
    if (optimizer) {
      CHECK(d.iterations.method == IterationMethod::TrainingLoop);
      CHECK(d.iterations.count == 8);
      CHECK_FALSE(d.structure.has_value());
    } else {
      CHECK(d.iterations.count == 0);
      CHECK(d.iterations.reason == NoIterations::NoOptimizer);
      CHECK(d.structure.has_value());
    }
  }
}

TEST_CASE("an inference loop: whole passes that start at the same outer frame and run to the end") {
  for (bool epilogue : {false, true}) {
    CAPTURE(epilogue);
    TraceBuilder t;
    auto input = t.stack({"serve.py:90:<module>", "serve.py:40:main", "serve.py:21:generate"});
    auto layer = t.stack({"serve.py:90:<module>", "serve.py:40:main", "serve.py:23:generate", kModule, kLinear});
    auto other = t.stack({"serve.py:90:<module>", "serve.py:44:main"});
    for (int pass = 0; pass < 6; ++pass) {
      uint64_t x = t.alloc(1 << 20, input);
      for (int l = 0; l < 4; ++l) {
        uint64_t y = t.alloc(1 << 20, layer);
        t.free(x);
        x = y;
      }
      t.free(x);
    }
    if (epilogue)  // other work after the loop: the repeats no longer span the trace
      for (int k = 0; k < 20; ++k) t.alloc(512, other);
    auto d = analyze_snapshot(t.finish());
    if (!epilogue) {
      CHECK(d.iterations.method == IterationMethod::InferenceLoop);
      CHECK(d.iterations.count == 6);
    } else {
      CHECK(d.iterations.count == 0);
      CHECK(d.structure.has_value());
    }
  }
}

TEST_CASE("kept past the next block but freed by the one after: memory stays level, so not layers") {
  // A serving loop that double-buffers: each pass frees the previous pass's output.
  // Every pass keeps all its bytes past the next one's start, yet memory never piles
  // up, which a forward pass keeping its layers' activations would do.
  TraceBuilder t;
  auto in = t.stack({"serve.py:90:<module>", "serve.py:40:main", "serve.py:21:generate"});
  auto out = t.stack({"serve.py:90:<module>", "serve.py:40:main", "serve.py:23:generate"});
  uint64_t prev_in = 0, prev_out = 0;
  for (int pass = 0; pass < 12; ++pass) {
    uint64_t a = t.alloc(1 << 20, in), b = t.alloc(2 << 20, out);
    if (pass) t.free(prev_in), t.free(prev_out);
    prev_in = a, prev_out = b;
  }
  auto d = analyze_snapshot(t.finish());
  CHECK(d.iterations.reason != NoIterations::KeepsActivations);
  CHECK(d.iterations.kept_share > 0.5);  // the old rule's trigger is there
  CHECK_FALSE(has_finding(d, FindingKind::ActivationsKeptWithoutBackward));
  if (d.structure) CHECK_FALSE(d.structure->keeps_activations);
  // The same loop with nothing freed does pile up: its blocks keep their activations.
  TraceBuilder g;
  auto in2 = g.stack({"serve.py:90:<module>", "serve.py:40:main", "serve.py:21:generate"});
  auto out2 = g.stack({"serve.py:90:<module>", "serve.py:40:main", "serve.py:23:generate"});
  for (int pass = 0; pass < 12; ++pass) g.alloc(1 << 20, in2), g.alloc(2 << 20, out2);
  auto kept = analyze_snapshot(g.finish());
  CHECK(kept.iterations.reason == NoIterations::KeepsActivations);
  REQUIRE(kept.structure);
  CHECK(kept.structure->keeps_activations);
  CHECK(kept.structure->growth_bytes_per_repeat == double(3 << 20));
}

TEST_CASE("a trace recorded without stacks: no iterations, no structure, no layers finding") {
  // snapgen's train scenario (truth: 12 iterations) with every frame stripped, as
  // context=None records it; and the stacked fixtures stripped in memory.
  auto truth = test::read_json_file(test::testdata("snapgen/nostacks.truth.json"));
  REQUIRE(truth["iterations"].get<uint64_t>() == 12);
  auto a = analyze_file(test::testdata("snapgen/nostacks.pickle"));
  CHECK(a.device.trace.consistent);
  CHECK(a.device.iterations.count == 0);
  CHECK(a.device.iterations.reason == NoIterations::NoStacks);
  CHECK(a.device.iterations.allocations_with_stack == 0);
  CHECK(a.device.iterations.allocations > 0);
  CHECK_FALSE(a.device.structure.has_value());
  CHECK(a.device.leaks.empty());
  // The JSON says the empty leak list is no verdict; the leak fixture's (12 iterations) is one.
  CHECK(test::analyze_json(a.loaded.snapshot)["devices"][0]["leaks_judged"] == false);
  auto leaky = analyze_file(test::testdata("snapgen/leak.pickle"));
  REQUIRE(leaky.device.iterations.count >= analysis::kLeakMinIterations);
  CHECK(test::analyze_json(leaky.loaded.snapshot)["devices"][0]["leaks_judged"] == true);
  for (const char* name : {"train", "forward", "inference", "leak"}) {
    CAPTURE(name);
    auto loaded = snapshot::load_snapshot(test::testdata(std::string("snapgen/") + name + ".pickle").string());
    for (auto& dev : loaded.snapshot.devices) {
      for (auto& b : dev.blocks) b.stack = {};
      dev.trace.remap_stacks([](uint32_t) { return 0u; });
    }
    auto d = analyze_snapshot(loaded.snapshot);
    CHECK(d.iterations.reason == NoIterations::NoStacks);
    CHECK_FALSE(d.structure.has_value());
    CHECK_FALSE(has_finding(d, FindingKind::ActivationsKeptWithoutBackward));
  }
}

TEST_CASE("allocations that grow with the input are named, steady ones are not") {
  snapshot::Snapshot s;
  auto stack_at = [&](int line) {
    std::vector<snapshot::FrameId> f{
        s.frames.intern({s.strings.intern("/w/train.py"), s.strings.intern("step"), line})};
    return s.stacks.intern(f);
  };
  auto a = stack_at(10), b = stack_at(20);
  snapshot::Device d;
  using A = snapshot::Action;
  const uint64_t base = 0x7f0000000000;
  auto ev = [&](A act, uint64_t addr, uint64_t size, snapshot::StackId st) {
    snapshot::TraceEvent e;
    e.action = act, e.addr = addr, e.size = size, e.stack = st;
    return e;
  };
  d.trace.push_back(ev(A::SegmentAlloc, base, 1ull << 30, {}));
  uint64_t grow = 4ull << 20;
  for (int i = 0; i < 6; ++i, grow += grow / 4) {
    d.trace.push_back(ev(A::Alloc, base, 1ull << 20, a));
    d.trace.push_back(ev(A::Alloc, base + (2ull << 20), grow, b));
    d.trace.push_back(ev(A::FreeRequested, base + (2ull << 20), grow, b));
    d.trace.push_back(ev(A::FreeCompleted, base + (2ull << 20), grow, b));
    d.trace.push_back(ev(A::FreeRequested, base, 1ull << 20, a));
    d.trace.push_back(ev(A::FreeCompleted, base, 1ull << 20, a));
  }
  snapshot::Segment sg;
  sg.address = base, sg.total_size = 1ull << 30, sg.pool = snapshot::Pool::Large, sg.block_count = 1;
  d.segments = {sg};
  d.blocks = {snapshot::Block{base, 1ull << 30, 0, {}, snapshot::BlockState::Inactive}};
  s.devices.push_back(d);
  analysis::Context ctx(s);
  analysis::AnalyzeOptions o;
  o.iterations.marker = "train.py:10";
  auto t = analysis::analyze(ctx, o).devices.at(0);
  REQUIRE(t.iterations.found());
  CHECK(t.iterations.count == 6);
  REQUIRE(t.growing.size() == 1);
  CHECK(t.growing[0].site == "train.py:20:step");
  CHECK(t.growing[0].first_bytes == 4ull << 20);
  CHECK(t.growing[0].iterations == 6);
  CHECK(t.leaks.empty());
  CHECK(has_finding(t, FindingKind::GrowingWithInput));
}

TEST_CASE("real snapshots: no leak anywhere, and every iteration claimed is a whole step of the file" *
          doctest::test_suite("realdata")) {
  test::each_realdata([&](const std::filesystem::path& path) {
    auto l = snapshot::load_snapshot(path.string());
    analysis::Context ctx(l.snapshot);
    auto result = analysis::analyze(ctx, {});
    for (const auto& d : result.devices) {
      CHECK(d.trace.consistent);
      CHECK(d.leaks.empty());
      for (const auto& f : d.findings) {
        CHECK(f.kind != FindingKind::LeakGrowth);
        CHECK(f.kind != FindingKind::GrowthUnattributed);
      }
      if (!d.iterations.found()) continue;
      // Independently of the detector: every complete iteration has allocations whose
      // frames show backward work (the autograd engine or a *Backward node) and events
      // whose frames show the optimizer (torch/optim), read straight off the trace.
      const auto& dev = *l.snapshot.device(d.device);
      const auto& b = d.iterations.boundaries;
      for (size_t k = 0; k + 1 < b.size(); ++k) {
        bool backward = false, optimizer = false;
        for (uint32_t i = b[k]; i < b[k + 1]; ++i) {
          for (auto fid : l.snapshot.stacks[dev.trace[i].stack]) {
            std::string_view name = l.snapshot.strings[l.snapshot.frames[fid].name];
            std::string_view file = l.snapshot.strings[l.snapshot.frames[fid].filename];
            backward = backward || name.find("Backward") != std::string_view::npos ||
                       name.find("autograd::Engine") != std::string_view::npos;
            optimizer = optimizer || file.find("/optim/") != std::string_view::npos;
          }
        }
        CAPTURE(k);
        CHECK(backward);
        CHECK(optimizer);
      }
    }
  });
}

TEST_CASE("allocated_before at any sorted events equals the replay's running totals") {
  // The running totals come from TotalsCursor, which rebuilds the sweep event by event;
  // allocated_before buckets the ranges instead (a forward cursor and a gallop). Every
  // event, repeated ones, the first and the last, on a full and on a wrapped window.
  for (const char* name : {"snapgen/leak.pickle", "snapgen/ring.pickle", "snapgen/frag.pickle"}) {
    CAPTURE(name);
    auto loaded = snapshot::load_snapshot(test::testdata(name).string());
    analysis::Context ctx(loaded.snapshot);
    const auto& d = loaded.snapshot.devices.at(0);
    analysis::Replay replay(ctx, d);
    auto n = static_cast<uint32_t>(d.trace.size());
    REQUIRE(n > 100);
    std::vector<uint64_t> expected(n);  // allocated just before event i
    analysis::TotalsCursor cursor(replay);
    expected[0] = replay.start_totals().allocated;
    for (uint32_t i = 1; i < n; ++i) expected[i] = cursor.after(i - 1).allocated;
    for (uint32_t stride : {1u, 7u, 97u, 1000u}) {
      std::vector<uint32_t> events;
      for (uint32_t i = 0; i < n; i += stride) {
        events.push_back(i);
        if (i % 3 == 0) events.push_back(i);  // a boundary twice
      }
      events.push_back(n - 1);
      std::vector<uint64_t> got = analysis::allocated_before(replay, events);
      REQUIRE(got.size() == events.size());
      size_t bad = 0;
      for (size_t k = 0; k < events.size(); ++k) bad += got[k] != expected[events[k]];
      CHECK_MESSAGE(bad == 0, "stride " << stride);
    }
  }
}

TEST_CASE("the iteration search's trace-only half beside the replay: the same analysis as on one thread") {
  // With a core to spare (one device, two threads), analyze() searches the trace's periods
  // while it replays, and hands them to find_iterations(); with one thread it does both in
  // turn. Everything the analysis reports must be the same.
  // (The other tests run with a core to spare wherever the machine has two.)
  size_t ran = test::each_snapgen_pickle([](const std::filesystem::path& p) {
    auto loaded = snapshot::load_snapshot(p.string());
    analysis::AnalyzeOptions serial, beside;
    serial.threads = 1;
    beside.threads = 2;
    for (const auto& d : loaded.snapshot.devices) {
      serial.device = beside.device = d.index;
      CHECK(test::analyze_json(loaded.snapshot, serial) == test::analyze_json(loaded.snapshot, beside));
    }
  });
  CHECK(ran >= 20);
}

TEST_CASE("periods searched on one device are refused for another") {
  auto loaded = snapshot::load_snapshot(test::testdata("snapgen/devices2.pickle").string());
  REQUIRE(loaded.snapshot.devices.size() == 2);
  analysis::Context ctx(loaded.snapshot);
  const auto& d0 = loaded.snapshot.devices[0];
  const auto& d1 = loaded.snapshot.devices[1];
  REQUIRE_FALSE(d1.trace.empty());
  analysis::Replay replay(ctx, d1);
  analysis::TracePeriods periods(ctx.snap, d0, {});
  CHECK_THROWS_AS(analysis::find_iterations(ctx, d1, replay, {}, std::move(periods)), std::logic_error);
  // Made for d1, they give what the search alone gives (its three training steps, the first
  // unlike the others: --steps 3 in MANIFEST.tsv).
  auto alone = analysis::find_iterations(ctx, d1, replay, {});
  auto given = analysis::find_iterations(ctx, d1, replay, {}, analysis::TracePeriods(ctx.snap, d1, {}));
  CHECK(alone.iterations.reason == NoIterations::Claimed);
  CHECK(alone.iterations.count == 3);
  CHECK(alone.iterations.match_ratio > 0.8);
  CHECK(given.iterations.reason == alone.iterations.reason);
  CHECK(given.iterations.count == alone.iterations.count);
  CHECK(given.iterations.match_ratio == alone.iterations.match_ratio);
  CHECK(given.iterations.allocations == alone.iterations.allocations);
}
