// Trace replay against the dumped state, mid-run snapshots and every real file.
#include <doctest/doctest.h>

#include "memsnap/analysis/replay.hpp"
#include "memsnap/analysis/summary.hpp"
#include "memsnap/snapshot/load.hpp"
#include "support/testdata.hpp"

using namespace memsnap;

namespace {

void check_ends_at_dump(const snapshot::Snapshot& s, const snapshot::Device& d, bool want_consistent) {
  analysis::Replay r(s, d);
  if (want_consistent) {
    CHECK_MESSAGE(r.consistent(), (r.first_mismatch() ? r.first_mismatch()->what : ""));
  }
  if (d.trace.empty()) return;
  auto end = r.state_after(static_cast<uint32_t>(d.trace.size() - 1));
  auto want = analysis::summarize(d);
  auto got = analysis::summarize(end.to_device(d.index));
  CHECK(end.totals().reserved == want.reserved_bytes);
  CHECK(end.totals().allocated == want.allocated_bytes);
  CHECK(end.totals().active == want.active_bytes);
  CHECK(end.totals().requested == want.requested_bytes);
  CHECK(got.reserved_bytes == want.reserved_bytes);
  CHECK(got.allocated_bytes == want.allocated_bytes);
  CHECK(got.inactive_bytes == want.inactive_bytes);
  CHECK(got.largest_free_block_bytes == want.largest_free_block_bytes);
  CHECK(got.segments == want.segments);
}

}  // namespace

TEST_CASE("replay ends exactly at the dumped state for every snapgen fixture") {
  for (const auto& row : test::snapgen_manifest()) {
    CAPTURE(row.file);
    auto l = snapshot::load_snapshot(test::testdata("snapgen/" + row.file).string());
    for (const auto& d : l.snapshot.devices) check_ends_at_dump(l.snapshot, d, true);
  }
}

TEST_CASE("replay to a mid-run snapshot's last event reproduces that snapshot") {
  auto full = snapshot::load_snapshot(test::testdata("snapgen/leak.pickle").string());
  for (const char* step : {"leak.step4", "leak.step10"}) {
    CAPTURE(step);
    auto mid = snapshot::load_snapshot(test::testdata(std::string("snapgen/") + step + ".pickle").string());
    auto truth = test::read_json_file(test::testdata(std::string("snapgen/") + step + ".truth.json"))["per_device"][0];
    const auto& d = full.snapshot.devices[0];
    size_t n = mid.snapshot.devices[0].trace.size();  // the mid-run dump saw exactly these events
    REQUIRE(n > 0);
    REQUIRE(n <= d.trace.size());
    analysis::Replay r(full.snapshot, d);
    auto st = r.state_after(static_cast<uint32_t>(n - 1));
    CHECK(st.totals().reserved == truth["reserved"].get<uint64_t>());
    CHECK(st.totals().allocated == truth["allocated"].get<uint64_t>());
    CHECK(st.totals().active == truth["active"].get<uint64_t>());
    CHECK(st.totals().requested == truth["requested"].get<uint64_t>());
    auto t = analysis::summarize(st.to_device(0));
    CHECK(t.segments == truth["segments"].get<uint64_t>());
    CHECK(t.largest_free_block_bytes == truth["largest_free_block"].get<uint64_t>());
  }
}

TEST_CASE("a wrapped ring buffer starts mid-run and still replays consistently") {
  auto l = snapshot::load_snapshot(test::testdata("snapgen/ring.pickle").string());
  auto truth = test::read_json_file(test::testdata("snapgen/ring.truth.json"));
  REQUIRE(truth["per_device"][0]["trace_dropped"].get<int>() > 0);
  analysis::Replay r(l.snapshot, l.snapshot.devices[0]);
  CHECK(r.window_starts_mid_run());
  CHECK(r.consistent());
  auto full = snapshot::load_snapshot(test::testdata("snapgen/leak.pickle").string());
  analysis::Replay rf(full.snapshot, full.snapshot.devices[0]);
  CHECK_FALSE(rf.window_starts_mid_run());  // the full trace starts with an empty allocator
}

TEST_CASE("replay is consistent on every real snapshot") {
  test::each_realdata([&](const std::filesystem::path& path) {
    auto l = snapshot::load_snapshot(path.string());
    for (const auto& d : l.snapshot.devices) check_ends_at_dump(l.snapshot, d, true);
  });
}
