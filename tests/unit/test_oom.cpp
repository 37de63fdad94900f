// OOM-cause analysis against snapgen truth, a real OOM file, and a hand-built retry-in-except trace.
#include <doctest/doctest.h>

#include "memsnap/analysis/allocator_rules.hpp"
#include "memsnap/analysis/oom.hpp"
#include "memsnap/util/units.hpp"
#include "memsnap/snapshot/load.hpp"
#include "support/testdata.hpp"

using namespace memsnap;

namespace {

std::vector<analysis::OomReport> ooms_of(const snapshot::Snapshot& s, int device, analysis::OomOptions opt = {}) {
  const auto& d = *s.device(device);
  analysis::Replay replay(s, d);
  analysis::Sites sites(s);
  auto trace = analysis::analyze_trace(s, d, replay, sites);
  return analysis::analyze_ooms(s, d, replay, sites, trace, opt);
}

}  // namespace

TEST_CASE("fragmentation and capacity OOMs dumped at the OOM: every figure exact") {
  for (const char* name : {"frag", "capacity"}) {
    CAPTURE(name);
    auto l = snapshot::load_snapshot(test::testdata(std::string("snapgen/") + name + ".pickle").string());
    auto t = test::read_json_file(test::testdata(std::string("snapgen/") + name + ".truth.json"))["oom"];
    auto ooms = ooms_of(l.snapshot, t["device"].get<int>());
    REQUIRE(ooms.size() == 1);
    const auto& o = ooms[0];
    CHECK(o.from_trace);
    CHECK(o.requested_bytes == t["requested_rounded"].get<uint64_t>());
    CHECK(o.segment_request_bytes == t["segment_request"].get<uint64_t>());
    CHECK(o.device_free_bytes == t["device_free"].get<uint64_t>());
    CHECK(o.reserved_bytes == t["reserved"].get<uint64_t>());
    CHECK(o.allocated_bytes == t["allocated"].get<uint64_t>());
    CHECK(o.free_cached_bytes == t["free_cached"].get<uint64_t>());
    CHECK(o.largest_free_block_any_bytes == t["largest_free_block"].get<uint64_t>());
    CHECK(o.largest_free_block_bytes <= o.largest_free_block_any_bytes);  // the request's pool and stream only
    CHECK(o.cause == t["cause"].get<std::string>());
    CHECK(o.approximate_within_bytes == 0);
    CHECK(o.message.find("Tried to allocate " + torch_format_size(o.segment_request_bytes)) != std::string::npos);
    CHECK(o.message.find(torch_format_size(o.reserved_bytes - o.allocated_bytes) + " is reserved by PyTorch but unallocated") !=
          std::string::npos);
    CHECK_FALSE(o.advice.empty());
    CHECK_FALSE(o.top_sites.empty());
  }
}

TEST_CASE("frees after the OOM: replay finds the OOM-time state, within the stated bound") {
  auto l = snapshot::load_snapshot(test::testdata("snapgen/frag_after_oom.pickle").string());
  auto t = test::read_json_file(test::testdata("snapgen/frag_after_oom.truth.json"));
  auto o = ooms_of(l.snapshot, 0).at(0);
  // the dumped state differs from the OOM-time state...
  CHECK(t["per_device"][0]["allocated"].get<uint64_t>() != t["oom"]["allocated"].get<uint64_t>());
  // ...what the file determines is exact
  CHECK(o.requested_bytes == t["oom"]["requested_rounded"].get<uint64_t>());
  CHECK(o.segment_request_bytes == t["oom"]["segment_request"].get<uint64_t>());
  CHECK(o.device_free_bytes == t["oom"]["device_free"].get<uint64_t>());
  CHECK(o.reserved_bytes == t["oom"]["reserved"].get<uint64_t>());
  CHECK(o.cause == t["oom"]["cause"].get<std::string>());
  // ...what depends on the rounding of blocks freed after the OOM is within the bound
  auto near = [&](uint64_t got, uint64_t want) {
    return (got > want ? got - want : want - got) <= o.approximate_within_bytes;
  };
  CHECK(o.approximate_within_bytes > 0);
  CHECK(near(o.allocated_bytes, t["oom"]["allocated"].get<uint64_t>()));
  CHECK(near(o.free_cached_bytes, t["oom"]["free_cached"].get<uint64_t>()));
  CHECK(near(o.largest_free_block_any_bytes, t["oom"]["largest_free_block"].get<uint64_t>()));
}

TEST_CASE("no OOM event: nothing reported, unless the dumped state is asked to stand in") {
  auto l = snapshot::load_snapshot(test::testdata("snapgen/train.pickle").string());
  CHECK(ooms_of(l.snapshot, 0).empty());
  analysis::OomOptions opt;
  opt.assumed_request = 20ull << 20;
  auto o = ooms_of(l.snapshot, 0, opt);
  REQUIRE(o.size() == 1);
  CHECK_FALSE(o[0].from_trace);
  CHECK(o[0].requested_bytes == 20ull << 20);
  auto t = test::read_json_file(test::testdata("snapgen/train.truth.json"))["per_device"][0];
  CHECK(o[0].reserved_bytes == t["reserved"].get<uint64_t>());
  CHECK(o[0].allocated_bytes == t["allocated"].get<uint64_t>());
}

TEST_CASE("--capacity exposes memory held outside the allocator") {
  auto l = snapshot::load_snapshot(test::testdata("snapgen/capacity.pickle").string());
  auto t = test::read_json_file(test::testdata("snapgen/capacity.truth.json"));
  analysis::OomOptions opt;
  opt.capacity = t["capacity_bytes"][0].get<uint64_t>();  // the simulated device: nothing outside
  auto o = ooms_of(l.snapshot, 0, opt).at(0);
  for (const auto& c : o.causes) CHECK(c.cause != "external");
  opt.capacity = *opt.capacity * 3;  // a device three times larger: two thirds held elsewhere
  auto big = ooms_of(l.snapshot, 0, opt).at(0);
  bool external = false;
  for (const auto& c : big.causes) external = external || c.cause == "external";
  CHECK(external);
  CHECK(big.message.find("total capacity of " + torch_format_size(*opt.capacity)) != std::string::npos);
}

TEST_CASE("the real OOM snapshot: request, device free and reserved at the event") {
  auto path = test::realdata() / "Nesta-gitU__discrete_diffusion__memory_snapshot.json";
  if (!std::filesystem::exists(path)) {
    MESSAGE("SKIPPED: " << path << " is absent");
    return;
  }
  auto l = snapshot::load_snapshot(path.string());
  const auto& d = l.snapshot.devices[0];
  auto ooms = ooms_of(l.snapshot, 0);
  REQUIRE(ooms.size() == 1);
  // Independently: the oom entry itself, and reserved = the dumped segments minus
  // every segment event after it undone by hand.
  uint32_t at = 0;
  for (uint32_t i = 0; i < d.trace.size(); ++i)
    if (d.trace[i].action == snapshot::Action::Oom) at = i;
  int64_t reserved = 0;
  for (const auto& s : d.segments) reserved += int64_t(s.total_size);
  for (uint32_t i = at + 1; i < d.trace.size(); ++i) {
    const auto& e = d.trace[i];
    if (e.action == snapshot::Action::SegmentAlloc) reserved -= int64_t(e.size);
    if (e.action == snapshot::Action::SegmentFree) reserved += int64_t(e.size);
  }
  CHECK(ooms[0].event_index == at);
  CHECK(ooms[0].requested_bytes == d.trace[at].size);
  CHECK(ooms[0].device_free_bytes == d.trace[at].device_free());
  CHECK(ooms[0].segment_request_bytes == analysis::rules::segment_size_for(d.trace[at].size));
  CHECK(int64_t(ooms[0].reserved_bytes) == reserved);
  CHECK(ooms[0].cause == "capacity");  // 384 MiB asked, 252 MiB free on the device, 17 MiB cached
}

TEST_CASE("a retry at the failing site right after the OOM is called out") {
  // segment, a live 8 MiB tensor, an OOM at site S, then S allocates again at once.
  snapshot::Snapshot s;
  auto frame = s.frames.intern({s.strings.intern("/work/train.py"), s.strings.intern("step"), 42});
  std::vector<snapshot::FrameId> fr{frame};
  auto stack = s.stacks.intern(fr);
  snapshot::Device d;
  using A = snapshot::Action;
  auto ev = [&](A a, uint64_t addr, uint64_t size) {
    snapshot::TraceEvent e;
    e.action = a, e.addr = addr, e.size = size, e.stack = stack;
    return e;
  };
  const uint64_t base = 0x7f0000000000, seg = 20ull << 20, t = 8ull << 20;
  d.trace = {ev(A::SegmentAlloc, base, seg), ev(A::Alloc, base, t), ev(A::Oom, 100ull << 20, 64ull << 20),
             ev(A::Alloc, base + t, t)};
  snapshot::Segment sg;
  sg.address = base, sg.total_size = seg, sg.pool = snapshot::Pool::Large, sg.block_count = 3;
  d.segments = {sg};
  d.blocks = {snapshot::Block{base, t, t, stack, snapshot::BlockState::ActiveAllocated},
              snapshot::Block{base + t, t, t, stack, snapshot::BlockState::ActiveAllocated},
              snapshot::Block{base + 2 * t, seg - 2 * t, 0, {}, snapshot::BlockState::Inactive}};
  s.devices.push_back(d);
  auto o = ooms_of(s, 0).at(0);
  CHECK(o.retry_in_except);
  CHECK(o.device_free_bytes == 100ull << 20);
  bool said = false;
  for (const auto& a : o.advice) said = said || a.find("except") != std::string::npos;
  CHECK(said);
  auto f = analysis::oom_findings({o});
  CHECK(f.size() == 2);
}
