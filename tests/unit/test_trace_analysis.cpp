// Peak, iterations and leaks against snapgen truth, and no false alarms on steady loops or real files.
#include <doctest/doctest.h>

#include <cmath>

#include "memsnap/analysis/allocator_rules.hpp"
#include "memsnap/analysis/trace_analysis.hpp"
#include "memsnap/snapshot/load.hpp"
#include "support/testdata.hpp"

using namespace memsnap;

namespace {

struct Analyzed {
  snapshot::Loaded loaded;
  std::unique_ptr<analysis::Replay> replay;
  std::unique_ptr<analysis::Sites> sites;
  analysis::TraceAnalysis trace;
};

Analyzed analyze_file(const std::filesystem::path& p, int device = 0, analysis::TraceOptions opt = {}) {
  Analyzed a{snapshot::load_snapshot(p.string()), nullptr, nullptr, {}};
  const auto& d = *a.loaded.snapshot.device(device);
  a.replay = std::make_unique<analysis::Replay>(a.loaded.snapshot, d);
  a.sites = std::make_unique<analysis::Sites>(a.loaded.snapshot);
  a.trace = analysis::analyze_trace(a.loaded.snapshot, d, *a.replay, *a.sites, opt);
  return a;
}

}  // namespace

TEST_CASE("leak scenario: the truth's leak site, its growth per iteration, the autograd pattern") {
  for (const char* name : {"leak", "expandable_leak"}) {
    CAPTURE(name);
    auto a = analyze_file(test::testdata(std::string("snapgen/") + name + ".pickle"));
    auto truth = test::read_json_file(test::testdata(std::string("snapgen/") + name + ".truth.json"));
    const auto& it = a.trace.iterations;
    REQUIRE(it.found);
    CHECK(it.count == truth["steps"].get<uint64_t>());
    double per_step = truth["leak"]["bytes_per_step_per_device"].get<double>();
    CHECK(std::fabs(it.growth_bytes_per_iteration - per_step) <= 0.03 * per_step);
    // The leaking sites account for exactly what each step keeps.
    double total = 0;
    bool found = false;
    for (const auto& l : a.trace.leaks) {
      total += l.growth_bytes_per_iteration;
      if (l.site == truth["leak"]["site"].get<std::string>()) {
        found = true;
        CHECK(l.pattern == "autograd_history");
        CHECK(l.growth_allocations_per_iteration == doctest::Approx(1.0));
        CHECK(l.iterations_retained >= truth["steps"].get<uint64_t>() - 2);
        REQUIRE_FALSE(l.stack.empty());
        CHECK(l.stack.front() == l.site);  // the leak line allocates directly
      }
    }
    CHECK(found);
    CHECK(std::fabs(total - per_step) <= 0.03 * per_step);
    bool finding = false;
    for (const auto& f : a.trace.findings) finding = finding || f.kind == "leak_autograd_history";
    CHECK(finding);
  }
}

TEST_CASE("steady loops report iterations and no leak") {
  for (const char* name : {"train", "streams2", "legacy", "frag"}) {
    CAPTURE(name);
    auto a = analyze_file(test::testdata(std::string("snapgen/") + name + ".pickle"));
    auto truth = test::read_json_file(test::testdata(std::string("snapgen/") + name + ".truth.json"));
    CHECK(a.trace.consistent);
    REQUIRE(a.trace.iterations.found);
    CHECK(a.trace.iterations.count == truth["steps"].get<uint64_t>());
    CHECK(a.trace.leaks.empty());
    for (const auto& f : a.trace.findings) CHECK(f.severity != analysis::Severity::Critical);
  }
}

TEST_CASE("a wrapped ring buffer: mid-run window, iterations found, too few to judge leaks") {
  auto a = analyze_file(test::testdata("snapgen/ring.pickle"));
  CHECK(a.trace.window_starts_mid_run);
  CHECK(a.trace.consistent);
  CHECK(a.trace.iterations.found);
  CHECK(a.trace.leaks.empty());
  CHECK(a.trace.iterations.evidence.find("too few to judge leaks") != std::string::npos);
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
  REQUIRE(a.trace.peak);
  CHECK(a.trace.peak->allocated_bytes == best);
  CHECK(a.trace.peak->event_index == best_at);
  uint64_t sum = 0;
  for (const auto& s : a.trace.peak->top_sites) sum += s.live_bytes;
  CHECK(sum <= best);
  CHECK(a.trace.peak->top_sites.front().live_bytes >= a.trace.peak->top_sites.back().live_bytes);
}

TEST_CASE("--iteration-marker: a site delimits iterations") {
  auto truth = test::read_json_file(test::testdata("snapgen/leak.truth.json"));
  analysis::TraceOptions opt;
  opt.iteration_marker = "train.py:110";  // the simulated step's first allocation
  auto a = analyze_file(test::testdata("snapgen/leak.pickle"), 0, opt);
  CHECK(a.trace.iterations.found);
  CHECK(a.trace.iterations.method == "marker train.py:110");
  CHECK(a.trace.iterations.count == truth["steps"].get<uint64_t>());
  bool leak_site = false;
  for (const auto& l : a.trace.leaks) leak_site = leak_site || l.site == truth["leak"]["site"].get<std::string>();
  CHECK(leak_site);
  opt.iteration_marker = "no_such_function";
  auto b = analyze_file(test::testdata("snapgen/leak.pickle"), 0, opt);
  CHECK_FALSE(b.trace.iterations.found);
  CHECK(b.trace.leaks.empty());
}

TEST_CASE("no leak is reported on any real snapshot (false alarms are bugs too)") {
  test::each_realdata([&](const std::filesystem::path& path) {
    auto l = snapshot::load_snapshot(path.string());
    analysis::Sites sites(l.snapshot);
    for (const auto& d : l.snapshot.devices) {
      analysis::Replay r(l.snapshot, d);
      auto t = analysis::analyze_trace(l.snapshot, d, r, sites);
      CHECK(t.consistent);
      CHECK(t.leaks.empty());
    }
  });
}

TEST_CASE("allocations that grow with the input are named, steady ones are not") {
  // Six iterations, each: a 1 MiB activation at site A (steady) and a buffer at
  // site B whose size grows by a quarter each time (sequence length), both freed.
  snapshot::Snapshot s;
  auto stack_at = [&](int line) {
    std::vector<snapshot::FrameId> f{s.frames.intern({s.strings.intern("/w/train.py"), s.strings.intern("step"), line})};
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
  analysis::Replay r(s, s.devices[0]);
  analysis::Sites sites(s);
  analysis::TraceOptions opt;
  opt.iteration_marker = "train.py:10";
  auto t = analysis::analyze_trace(s, s.devices[0], r, sites, opt);
  REQUIRE(t.iterations.found);
  CHECK(t.iterations.count == 6);
  REQUIRE(t.growing.size() == 1);
  CHECK(t.growing[0].site == "train.py:20:step");
  CHECK(t.growing[0].first_bytes == 4ull << 20);
  CHECK(t.growing[0].iterations == 6);
  CHECK(t.leaks.empty());
  bool finding = false;
  for (const auto& f : t.findings) finding = finding || f.kind == "growing_with_input";
  CHECK(finding);
}
