// OOM-cause analysis against snapgen truth, a real OOM file, and a hand-built retry-in-except trace.
#include <doctest/doctest.h>

#include <algorithm>

#include "memsnap/analysis/allocator_rules.hpp"
#include "memsnap/analysis/analyze.hpp"
#include "memsnap/snapshot/load.hpp"
#include "memsnap/util/units.hpp"
#include "support/analyze_json.hpp"
#include "support/testdata.hpp"

using namespace memsnap;

namespace {

std::vector<analysis::OomReport> ooms_of(const snapshot::Snapshot& s, int device, analysis::OomOptions opt = {}) {
  analysis::Context ctx(s);
  analysis::AnalyzeOptions o;
  o.device = device;
  o.oom = opt;
  return analysis::analyze(ctx, o).devices.at(0).ooms.explained;
}

// The OOM object of the JSON report (words included).
nlohmann::json oom_json(const snapshot::Snapshot& s, int device, analysis::OomOptions opt = {}) {
  analysis::AnalyzeOptions o;
  o.device = device;
  o.oom = opt;
  return test::analyze_json(s, o)["devices"][0]["oom"];
}

bool has_cause(const analysis::OomReport& o, analysis::OomCause c) {
  return std::find(o.causes.begin(), o.causes.end(), c) != o.causes.end();
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
    CHECK(analysis::to_string(o.cause()) == t["cause"].get<std::string>());
    CHECK(o.approximate_within_bytes == 0);
    auto j = oom_json(l.snapshot, t["device"].get<int>());
    CHECK(j["exact"] == true);
    std::string message = j["message"];
    CHECK(message.find("Tried to allocate " + torch_format_size(o.segment_request_bytes)) != std::string::npos);
    CHECK(message.find(torch_format_size(o.reserved_bytes - o.allocated_bytes) +
                       " is reserved by PyTorch but unallocated") != std::string::npos);
    CHECK_FALSE(o.fixes.empty());
    CHECK_FALSE(j["advice"].empty());
    CHECK_FALSE(o.top_sites.empty());
    CHECK(o.freed_after_bytes == 0);  // dumped at the OOM
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
  CHECK(analysis::to_string(o.cause()) == t["oom"]["cause"].get<std::string>());
  // ...the memory freed after the OOM is stated: allocated at the OOM minus at the dump
  CHECK(o.freed_after_bytes == o.allocated_bytes - t["per_device"][0]["allocated"].get<uint64_t>());
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
  CHECK_FALSE(has_cause(o, analysis::OomCause::External));
  opt.capacity = *opt.capacity * 3;  // a device three times larger: two thirds held elsewhere
  auto big = ooms_of(l.snapshot, 0, opt).at(0);
  CHECK(has_cause(big, analysis::OomCause::External));
  std::string message = oom_json(l.snapshot, 0, opt)["message"];
  CHECK(message.find("total capacity of " + torch_format_size(*opt.capacity)) != std::string::npos);
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
  CHECK(ooms[0].cause() == analysis::OomCause::Capacity);  // 384 MiB asked, 252 MiB free on the device, 17 MiB cached
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
  CHECK(std::find(o.fixes.begin(), o.fixes.end(), analysis::OomFix::RetryOutsideExcept) != o.fixes.end());
  bool said = false;
  auto j = oom_json(s, 0);
  for (const auto& a : j["advice"]) said = said || a.get<std::string>().find("except") != std::string::npos;
  CHECK(said);
  analysis::Context ctx(s);
  auto f = analysis::analyze(ctx, {}).devices.at(0).findings;
  REQUIRE(f.size() >= 2);
  CHECK(f[0].kind == analysis::FindingKind::OomCapacity);
  CHECK(f[1].kind == analysis::FindingKind::OomRetryInExcept);
}

TEST_CASE("pinning sites of an OOM carry their live bytes and the bytes they strand") {
  auto l = snapshot::load_snapshot(test::testdata("snapgen/frag.pickle").string());
  auto o = ooms_of(l.snapshot, 0).at(0);
  REQUIRE_FALSE(o.pinning_sites.empty());
  // live bytes are the sites' allocated blocks in the request's pool and stream, counted independently
  const auto& d = l.snapshot.devices[0];
  analysis::Context ctx(l.snapshot);
  for (const auto& p : o.pinning_sites) {
    CHECK(p.live_bytes > 0);
    CHECK(p.stranded_bytes > 0);
    uint64_t live = 0;
    for (const auto& s : d.segments) {
      if (s.pool != o.pool || s.stream != o.stream) continue;
      uint64_t seg_live = 0;
      bool has_free = false;
      for (const auto& b : d.blocks_of(s)) {
        if (b.state == snapshot::BlockState::Inactive) has_free = true;
        if (b.state == snapshot::BlockState::ActiveAllocated && ctx.sites.site(b.stack) == p.site) seg_live += b.size;
      }
      if (has_free) live += seg_live;
    }
    CHECK(p.live_bytes == live);
  }
  auto j = oom_json(l.snapshot, 0);
  CHECK(j["pinning_sites"][0]["live_bytes"].get<uint64_t>() == o.pinning_sites[0].live_bytes);
  CHECK(j["pinning_sites"][0]["stranded_bytes"].get<uint64_t>() == o.pinning_sites[0].stranded_bytes);
}

TEST_CASE("advice never asks for a setting that is already on") {
  // The frag OOM with expandable segments reported on: no advice to turn them on.
  auto l = snapshot::load_snapshot(test::testdata("snapgen/frag.pickle").string());
  l.snapshot.settings.present = true;
  l.snapshot.settings.expandable_segments = true;
  auto o = ooms_of(l.snapshot, 0).at(0);
  CHECK(std::find(o.fixes.begin(), o.fixes.end(), analysis::OomFix::ExpandableSegments) == o.fixes.end());
  auto j = oom_json(l.snapshot, 0);
  REQUIRE_FALSE(j["advice"].empty());
  for (const auto& a : j["advice"])
    CHECK(a.get<std::string>().find("Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True") == std::string::npos);
  auto plain = snapshot::load_snapshot(test::testdata("snapgen/frag.pickle").string());
  auto p = ooms_of(plain.snapshot, 0).at(0);
  CHECK(std::find(p.fixes.begin(), p.fixes.end(), analysis::OomFix::ExpandableSegments) != p.fixes.end());
}
