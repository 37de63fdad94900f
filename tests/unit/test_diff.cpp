// diff: totals deltas equal the truth files' differences; site rows account for the allocated delta.
#include <doctest/doctest.h>

#include "memsnap/analysis/diff.hpp"
#include "memsnap/snapshot/load.hpp"
#include "support/testdata.hpp"

using namespace memsnap;

TEST_CASE("diff of two mid-run snapshots of the leak scenario") {
  auto a = snapshot::load_snapshot(test::testdata("snapgen/leak.step4.pickle").string());
  auto b = snapshot::load_snapshot(test::testdata("snapgen/leak.step10.pickle").string());
  auto ta = test::read_json_file(test::testdata("snapgen/leak.step4.truth.json"))["per_device"][0];
  auto tb = test::read_json_file(test::testdata("snapgen/leak.step10.truth.json"))["per_device"][0];
  auto leak = test::read_json_file(test::testdata("snapgen/leak.truth.json"))["leak"];
  auto diff = analysis::diff_snapshots(a.snapshot, b.snapshot);
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
  for (size_t i = 1; i < d.sites.size(); ++i)
    CHECK(std::llabs(d.sites[i - 1].delta_bytes()) >= std::llabs(d.sites[i].delta_bytes()));
  // the segment count changed by exactly the segments seen on one side only
  CHECK(int64_t(d.after.segments) - int64_t(d.before.segments) ==
        int64_t(d.segments_only_after.size()) - int64_t(d.segments_only_before.size()));
}

TEST_CASE("a snapshot diffed with itself changes nothing") {
  auto a = snapshot::load_snapshot(test::testdata("snapgen/devices2.pickle").string());
  auto b = snapshot::load_snapshot(test::testdata("snapgen/devices2.pickle").string());
  auto diff = analysis::diff_snapshots(a.snapshot, b.snapshot);
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
  auto diff = analysis::diff_snapshots(a.snapshot, b.snapshot);
  REQUIRE(diff.size() == 2);
  CHECK(diff[1].in_after);
  CHECK_FALSE(diff[1].in_before);
  for (const auto& s : diff[1].sites) CHECK(s.is_new());
}
