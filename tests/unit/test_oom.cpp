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
  // The allocator model sizes the blocks freed after the OOM as the allocator did: exact.
  CHECK(o.approximate_within_bytes == 0);
  CHECK(o.allocated_bytes == t["oom"]["allocated"].get<uint64_t>());
  CHECK(o.free_cached_bytes == t["oom"]["free_cached"].get<uint64_t>());
  CHECK(o.largest_free_block_any_bytes == t["oom"]["largest_free_block"].get<uint64_t>());
  CHECK(near(o.allocated_bytes, t["oom"]["allocated"].get<uint64_t>()));
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

TEST_CASE("the real OOM snapshot: request, device free and reserved at the event" * doctest::test_suite("realdata")) {
  auto path = test::realdata_file("Nesta-gitU__discrete_diffusion__memory_snapshot.json");
  if (!path) return;
  auto l = snapshot::load_snapshot(path->string());
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

TEST_CASE("parse_oom_message: both wordings, wrapped, and what is not a message") {
  constexpr uint64_t GiB = uint64_t{1} << 30, MiB = uint64_t{1} << 20;
  auto half_unit = [](uint64_t unit) { return (unit + 199) / 200; };  // half of 0.01 unit, rounded up
  // >= 2.2, with another process listed and a line break where a log wrapped it
  auto m = analysis::parse_oom_message(
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of "
      "79.15 GiB of which 1.20 GiB is free. Process 4242 has 3.00 GiB memory in use. Including non-PyTorch\n"
      "    memory, this process has 74.95 GiB memory in use. Of the allocated memory 70.25 GiB is allocated by "
      "PyTorch, and 4.10 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large "
      "try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.");
  REQUIRE(m);
  CHECK(m->tried.bytes == 2 * GiB);
  CHECK(m->tried.within == half_unit(GiB));
  CHECK(m->device == 3);
  REQUIRE((m->capacity && m->free && m->process && m->allocated && m->reserved));
  CHECK(m->capacity->bytes == uint64_t(79.15 * double(GiB) + 0.5));
  CHECK(m->free->bytes == uint64_t(1.20 * double(GiB) + 0.5));
  CHECK(m->process->bytes == uint64_t(74.95 * double(GiB) + 0.5));  // this process's, not process 4242's
  CHECK(m->allocated->bytes == uint64_t(70.25 * double(GiB) + 0.5));
  CHECK(m->reserved->bytes == m->allocated->bytes + uint64_t(4.10 * double(GiB) + 0.5));  // AL + R
  CHECK(m->reserved->within == 2 * half_unit(GiB));
  // <= 2.1
  m = analysis::parse_oom_message(
      "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB total capacity; 6.81 GiB "
      "already allocated; 12.44 MiB free; 6.87 GiB reserved in total by PyTorch) If reserved memory is >> "
      "allocated memory try setting max_split_size_mb to avoid fragmentation.");
  REQUIRE(m);
  CHECK(m->tried.bytes == 20 * MiB);
  CHECK(m->device == 0);
  CHECK(m->capacity->bytes == uint64_t(7.79 * double(GiB) + 0.5));
  CHECK(m->allocated->bytes == uint64_t(6.81 * double(GiB) + 0.5));
  CHECK(m->free->bytes == uint64_t(12.44 * double(MiB) + 0.5));
  CHECK(m->reserved->bytes == uint64_t(6.87 * double(GiB) + 0.5));
  CHECK_FALSE(m->process);
  // "N bytes" is exact; figures the message does not give stay empty
  m = analysis::parse_oom_message("Tried to allocate 512 bytes. GPU 0 has a total capacity of ? of which ? is free.");
  REQUIRE(m);
  CHECK(m->tried.bytes == 512);
  CHECK(m->tried.within == 0);
  CHECK_FALSE(m->capacity);
  CHECK_FALSE(m->free);
  CHECK(m->tried.matches(512));
  CHECK_FALSE(m->tried.matches(514));
  // not a message, or a size that does not parse
  CHECK_FALSE(analysis::parse_oom_message("CUDA error: an illegal memory access was encountered"));
  CHECK_FALSE(analysis::parse_oom_message("Tried to allocate 99999999999999999999 GiB."));
  CHECK_FALSE(analysis::parse_oom_message("Tried to allocate 1.5.0 GiB."));
  CHECK_FALSE(analysis::parse_oom_message("Tried to allocate 2.00 GiBibytes"));
  CHECK_FALSE(analysis::parse_oom_message("Tried to allocate 2.5 bytes"));
  CHECK_FALSE(analysis::parse_oom_message(""));
}

namespace {

// PyTorch's >= 2.2 message from figures, as c10's format_size prints them (written here,
// not memsnap's own rebuilt message).
std::string torch_22_message(int gpu, uint64_t tried, uint64_t capacity, uint64_t free, uint64_t process,
                             uint64_t allocated, uint64_t reserved) {
  return "CUDA out of memory. Tried to allocate " + torch_format_size(tried) + ". GPU " + std::to_string(gpu) +
         " has a total capacity of " + torch_format_size(capacity) + " of which " + torch_format_size(free) +
         " is free. Including non-PyTorch memory, this process has " + torch_format_size(process) +
         " memory in use. Of the allocated memory " + torch_format_size(allocated) + " is allocated by PyTorch, and " +
         torch_format_size(reserved - allocated) + " is reserved by PyTorch but unallocated.";
}

}  // namespace

TEST_CASE("--oom-message: checked against the trace's OOM, the truth's figures match") {
  for (const char* name : {"frag", "capacity"}) {
    CAPTURE(name);
    auto l = snapshot::load_snapshot(test::testdata(std::string("snapgen/") + name + ".pickle").string());
    auto truth = test::read_json_file(test::testdata(std::string("snapgen/") + name + ".truth.json"));
    auto t = truth["oom"];
    int dev = t["device"].get<int>();
    uint64_t capacity = truth["capacity_bytes"][dev].get<uint64_t>(), free = t["device_free"].get<uint64_t>();
    uint64_t reserved = t["reserved"].get<uint64_t>(), allocated = t["allocated"].get<uint64_t>();
    analysis::OomOptions opt;
    opt.message = analysis::parse_oom_message(torch_22_message(dev, t["segment_request"].get<uint64_t>(), capacity,
                                                               free, capacity - free, allocated, reserved));
    REQUIRE(opt.message);
    auto plain = ooms_of(l.snapshot, dev).at(0);
    auto o = ooms_of(l.snapshot, dev, opt).at(0);
    REQUIRE(o.message);
    const auto& c = *o.message;
    CHECK(c.request_matches);
    CHECK(c.allocated_matches == true);
    CHECK(c.reserved_matches == true);
    CHECK(c.free_matches == true);
    CHECK_FALSE(c.state_differs());
    CHECK(o.capacity_bytes == opt.message->capacity->bytes);  // taken from the message
    // the simulated device holds the allocator's segments and free memory, nothing else,
    // so neither this process outside the allocator nor another process holds any
    CHECK(capacity == reserved + free);
    CHECK(c.outside_allocator_bytes == uint64_t{0});
    CHECK(c.other_processes_bytes == uint64_t{0});
    CHECK(o.causes == plain.causes);  // the simulated device holds nothing else: same verdict
    auto j = oom_json(l.snapshot, dev, opt)["oom_message"];
    CHECK(j["request_matches"] == true);
    CHECK(j["tried_bytes"] == opt.message->tried.bytes);
  }
}

TEST_CASE("--oom-message without an OOM in the trace: stands in for --oom-size, and tells a different state") {
  // frag_after_oom's OOM-time figures against train.pickle's dumped state, which holds no OOM
  auto l = snapshot::load_snapshot(test::testdata("snapgen/train.pickle").string());
  auto dumped = test::read_json_file(test::testdata("snapgen/train.truth.json"))["per_device"][0];
  auto t = test::read_json_file(test::testdata("snapgen/frag_after_oom.truth.json"))["oom"];
  uint64_t tried = t["segment_request"].get<uint64_t>(), reserved = t["reserved"].get<uint64_t>(),
           allocated = t["allocated"].get<uint64_t>(), free = t["device_free"].get<uint64_t>();
  uint64_t capacity = reserved + free + (3ull << 30);  // another 3 GiB in use on the device
  analysis::OomOptions opt;
  opt.message = analysis::parse_oom_message(torch_22_message(0, tried, capacity, free, reserved, allocated, reserved));
  REQUIRE(opt.message);
  auto o = ooms_of(l.snapshot, 0, opt);
  REQUIRE(o.size() == 1);
  CHECK_FALSE(o[0].from_trace);
  CHECK(o[0].device_free_bytes == opt.message->free->bytes);
  CHECK(o[0].allocated_bytes == dumped["allocated"].get<uint64_t>());
  REQUIRE(o[0].message);
  const auto& c = *o[0].message;
  CHECK(c.allocated_matches == opt.message->allocated->matches(dumped["allocated"].get<uint64_t>()));
  CHECK(c.reserved_matches == opt.message->reserved->matches(dumped["reserved"].get<uint64_t>()));
  CHECK(c.state_differs());
  CHECK_FALSE(c.free_matches);  // no oom event records it
  // the 3 GiB are another process's, within the rounding of the printed figures
  REQUIRE(c.other_processes_bytes);
  uint64_t slack = opt.message->capacity->within + opt.message->free->within + opt.message->process->within;
  CHECK(*c.other_processes_bytes + slack >= (3ull << 30));
  CHECK(*c.other_processes_bytes <= (3ull << 30) + slack);
  CHECK(has_cause(o[0], analysis::OomCause::External));  // the message's capacity and free memory show it
  CHECK(c.message_cause ==
        (reserved - allocated >= tried ? analysis::OomCause::Fragmentation : analysis::OomCause::Capacity));
  // a message about a GPU the file does not have is checked against nothing, with a warning
  opt.message->device = 7;
  analysis::Context ctx(l.snapshot);
  analysis::AnalyzeOptions ao;
  ao.oom = opt;
  auto r = analysis::analyze(ctx, ao);
  CHECK(r.devices.at(0).ooms.explained.empty());
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0].find("GPU 7") != std::string::npos);
}
