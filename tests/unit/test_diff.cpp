// diff: totals deltas equal the truth files' differences; site rows account for the allocated delta.
#include <doctest/doctest.h>

#include <set>

#include "memsnap/analysis/diff.hpp"
#include "memsnap/snapshot/load.hpp"
#include "support/device_builder.hpp"
#include "support/testdata.hpp"

using namespace memsnap;

TEST_CASE("diff of two mid-run snapshots of the leak scenario") {
  auto a = snapshot::load_snapshot(test::testdata("snapgen/leak.step4.pickle").string());
  auto b = snapshot::load_snapshot(test::testdata("snapgen/leak.step10.pickle").string());
  auto ta = test::read_json_file(test::testdata("snapgen/leak.step4.truth.json"))["per_device"][0];
  auto tb = test::read_json_file(test::testdata("snapgen/leak.step10.truth.json"))["per_device"][0];
  auto leak = test::read_json_file(test::testdata("snapgen/leak.truth.json"))["leak"];
  analysis::Context ca(a.snapshot), cb(b.snapshot);
  auto diff = analysis::diff_snapshots(ca, cb);
  REQUIRE(diff.size() == 1);
  const auto& d = diff[0];
  auto delta = [](const nlohmann::json& x, const nlohmann::json& y, const char* k) {
    return y[k].get<int64_t>() - x[k].get<int64_t>();
  };
  CHECK(int64_t(d.after.reserved_bytes) - int64_t(d.before.reserved_bytes) == delta(ta, tb, "reserved"));
  CHECK(int64_t(d.after.allocated_bytes) - int64_t(d.before.allocated_bytes) == delta(ta, tb, "allocated"));
  CHECK(int64_t(d.after.active_bytes) - int64_t(d.before.active_bytes) == delta(ta, tb, "active"));
  CHECK(int64_t(d.after.requested_bytes) - int64_t(d.before.requested_bytes) == delta(ta, tb, "requested"));
  // every allocated byte is in some row, so the rows add up to the allocated delta
  int64_t rows = 0;
  for (const auto& s : d.sites) rows += s.delta_bytes();
  CHECK(rows == delta(ta, tb, "allocated"));
  // six steps apart, the leak line holds six more blocks
  bool seen = false;
  for (const auto& s : d.sites)
    if (s.site == leak["site"].get<std::string>()) {
      seen = true;
      CHECK(s.after_allocations - s.before_allocations == 10 - 4);
      CHECK(s.stack.front() == s.site);
    }
  CHECK(seen);
  // sorted by absolute change
  for (size_t i = 1; i < d.sites.size(); ++i) CHECK(d.sites[i - 1].change_magnitude() >= d.sites[i].change_magnitude());
  // one row per site, the callers within it
  std::set<std::string> labels;
  for (const auto& s : d.sites) {
    CHECK(labels.insert(s.site).second);
    uint64_t before = 0, after = 0;
    for (const auto& c : s.callers) before += c.before_bytes, after += c.after_bytes;
    CHECK(before == s.before_bytes);
    CHECK(after == s.after_bytes);
  }
  // the segment count changed by exactly the segments seen on one side only
  CHECK(int64_t(d.after.segments) - int64_t(d.before.segments) ==
        int64_t(d.segments_only_after.size()) - int64_t(d.segments_only_before.size()));
}

TEST_CASE("a snapshot diffed with itself changes nothing") {
  auto a = snapshot::load_snapshot(test::testdata("snapgen/devices2.pickle").string());
  auto b = snapshot::load_snapshot(test::testdata("snapgen/devices2.pickle").string());
  analysis::Context ca(a.snapshot), cb(b.snapshot);
  auto diff = analysis::diff_snapshots(ca, cb);
  REQUIRE(diff.size() == 2);
  for (const auto& d : diff) {
    CHECK(d.segments_only_before.empty());
    CHECK(d.segments_only_after.empty());
    for (const auto& s : d.sites) CHECK(s.delta_bytes() == 0);
  }
}

TEST_CASE("new and vanished paths, and a device on one side only") {
  auto a = snapshot::load_snapshot(test::testdata("snapgen/train.pickle").string());
  auto b = snapshot::load_snapshot(test::testdata("snapgen/devices2.pickle").string());
  analysis::Context ca(a.snapshot), cb(b.snapshot);
  auto diff = analysis::diff_snapshots(ca, cb);
  REQUIRE(diff.size() == 2);
  CHECK(diff[1].in_after);
  CHECK_FALSE(diff[1].in_before);
  for (const auto& s : diff[1].sites) CHECK(s.is_new());
}

TEST_CASE("a caller whose line moved stays one row; distinct sites with one label are told apart") {
  // before: model.py:40:forward called from run.py:118; after: the same site called from run.py:120.
  auto build = [](snapshot::Snapshot& snap, int64_t caller_line, uint64_t bytes) {
    auto frame = [&](const char* file, int64_t line, const char* fn) {
      snapshot::Frame f;
      f.filename = snap.strings.intern(file);
      f.line = line;
      f.name = snap.strings.intern(fn);
      return snap.frames.intern(f);
    };
    snapshot::FrameId s1[] = {frame("/a/model.py", 40, "forward"), frame("/a/run.py", caller_line, "main")};
    snapshot::FrameId s2[] = {frame("/b/model.py", 40, "forward"), frame("/a/run.py", 7, "main")};
    auto st1 = snap.stacks.intern(s1);
    auto st2 = snap.stacks.intern(s2);
    test::add_device(
        snap,
        {{0x1000000, snapshot::Pool::Large, {test::alloc(bytes), test::alloc(test::MiB), test::free_(test::MiB)}}});
    snap.devices[0].blocks[0].stack = st1;
    snap.devices[0].blocks[1].stack = st2;
  };
  snapshot::Snapshot a, b;
  build(a, 118, 4 * test::MiB);
  build(b, 120, 6 * test::MiB);
  analysis::Context ca(a), cb(b);
  auto diff = analysis::diff_snapshots(ca, cb);
  REQUIRE(diff.size() == 1);
  REQUIRE(diff[0].sites.size() == 2);
  const auto& moved = diff[0].sites[0];
  CHECK(moved.file == "/a/model.py");
  CHECK(moved.before_bytes == 4 * test::MiB);
  CHECK(moved.after_bytes == 6 * test::MiB);
  CHECK(moved.delta_bytes() == int64_t(2 * test::MiB));
  REQUIRE(moved.callers.size() == 2);  // run.py:118 before, run.py:120 after
  // /a/model.py and /b/model.py both print as model.py:40:forward: the labels get their directories
  CHECK(diff[0].sites[0].site != diff[0].sites[1].site);
  CHECK(diff[0].sites[0].site == "a/model.py:40:forward");
  CHECK(diff[0].sites[1].site == "b/model.py:40:forward");
}

TEST_CASE("deltas never overflow") {
  CHECK(analysis::signed_delta(0, UINT64_MAX) == INT64_MAX);
  CHECK(analysis::signed_delta(UINT64_MAX, 0) == INT64_MIN);
  CHECK(analysis::signed_delta(5, 3) == -2);
}

namespace {

// Events i in [from, to) of one program: alloc and free in turn, 100 us apart, at
// addresses from `base`; time stamps shifted by `skew` us (a dump's own clock conversion).
snapshot::Trace program(size_t from, size_t to, uint64_t base, int64_t skew, bool timed = true) {
  snapshot::Trace t;
  for (size_t i = from; i < to; ++i) {
    snapshot::TraceEvent e;
    e.action = i % 2 ? snapshot::Action::FreeCompleted : snapshot::Action::Alloc;
    e.addr = base + (i / 2) * 512;
    e.size = 512;
    if (timed) e.time_us = 1'700'000'000'000'000 + int64_t(i) * 100 + skew;
    t.push_back(e);
  }
  return t;
}

analysis::ProcessMatch relation(snapshot::Trace before, snapshot::Trace after) {
  snapshot::Snapshot a, b;
  test::add_device(a, {}).trace = std::move(before);
  test::add_device(b, {}).trace = std::move(after);
  return analysis::match_processes(a, b);
}

}  // namespace

TEST_CASE("one process or two: segments are matched by address only when the traces share events") {
  using analysis::ProcessEvidence;
  using analysis::ProcessRelation;
  constexpr uint64_t kBase = 0x7f0000000000;
  // A later dump of one process: its ring holds the earlier dump's last events, their
  // time stamps converted anew (within kSameEventMicros).
  auto same = relation(program(0, 40, kBase, 0), program(20, 90, kBase, analysis::kSameEventMicros));
  CHECK(same.relation == ProcessRelation::Same);
  CHECK(same.evidence == ProcessEvidence::SharedEvents);
  CHECK(same.segments_by_address());
  // the order of the arguments does not matter
  CHECK(relation(program(20, 90, kBase, 0), program(0, 40, kBase, 0)).relation == ProcessRelation::Same);
  // one microsecond more than the bound: not the same events
  auto skewed = relation(program(0, 40, kBase, 0), program(0, 90, kBase, analysis::kSameEventMicros + 1));
  CHECK(skewed.relation == ProcessRelation::Different);
  // the same events at the same times, at other addresses: another process recording then
  auto other = relation(program(0, 40, kBase, 0), program(0, 90, kBase + 4096, 0));
  CHECK(other.relation == ProcessRelation::Different);
  CHECK(other.evidence == ProcessEvidence::OverlapWithoutSharedEvents);
  CHECK_FALSE(other.segments_by_address());
  // windows that do not overlap: a later dump or another run, nothing tells
  auto disjoint = relation(program(0, 40, kBase, 0), program(60, 90, kBase, 0));
  CHECK(disjoint.relation == ProcessRelation::Unknown);
  CHECK(disjoint.evidence == ProcessEvidence::DisjointWindows);
  CHECK_FALSE(disjoint.segments_by_address());
  // without time stamps two runs of one program look alike
  auto untimed = relation(program(0, 40, kBase, 0, false), program(0, 90, kBase, 0, false));
  CHECK(untimed.relation == ProcessRelation::Unknown);
  CHECK(untimed.evidence == ProcessEvidence::NoTimeStamps);
  CHECK(relation({}, {}).evidence == ProcessEvidence::NoTrace);
  // the leak scenario's step-4 and step-10 dumps come from one run
  auto a = snapshot::load_snapshot(test::testdata("snapgen/leak.step4.pickle").string());
  auto b = snapshot::load_snapshot(test::testdata("snapgen/leak.step10.pickle").string());
  CHECK(analysis::match_processes(a.snapshot, b.snapshot).relation == ProcessRelation::Same);
}

TEST_CASE("diff compares the peaks: the leak run's step-4 and step-10 dumps against their truth") {
  auto a = snapshot::load_snapshot(test::testdata("snapgen/leak.step4.pickle").string());
  auto b = snapshot::load_snapshot(test::testdata("snapgen/leak.step10.pickle").string());
  analysis::Context ca(a.snapshot), cb(b.snapshot);
  auto diff = analysis::diff_snapshots(ca, cb);
  REQUIRE(diff.size() == 1);
  const auto& d = diff[0];
  REQUIRE(d.peak_before.known);
  REQUIRE(d.peak_after.known);
  // a peak is at least the state at the dump
  auto tb = test::read_json_file(test::testdata("snapgen/leak.step10.truth.json"))["per_device"][0];
  // every byte live at a peak is in a row
  uint64_t before = 0, after = 0;
  for (const auto& s : d.peak_sites) before += s.before_bytes, after += s.after_bytes;
  CHECK(before == d.peak_before.allocated_bytes);
  CHECK(after == d.peak_after.allocated_bytes);
  CHECK(d.peak_after.allocated_bytes >= tb["allocated"].get<uint64_t>());
  CHECK(d.peak_after.reserved_bytes >= tb["reserved"].get<uint64_t>());
}
