// Trace replay against the dumped state, mid-run snapshots and every real file.
#include <doctest/doctest.h>

#include <algorithm>

#include "memsnap/analysis/accounting.hpp"
#include "memsnap/analysis/allocator_rules.hpp"
#include "memsnap/analysis/replay.hpp"
#include "memsnap/snapshot/load.hpp"
#include "support/testdata.hpp"

using namespace memsnap;

namespace {

void check_ends_at_dump(const snapshot::Snapshot& s, const snapshot::Device& d, bool want_consistent,
                        size_t checkpoint_events = 4096) {
  analysis::Context ctx(s);
  analysis::ReplayOptions ro;
  ro.checkpoint_events = checkpoint_events;
  analysis::Replay r(ctx, d, ro);
  if (want_consistent) {
    CHECK_MESSAGE(r.consistent(), (r.first_mismatch() ? r.first_mismatch()->what : ""));
  }
  if (d.trace.empty()) return;
  const uint32_t last = static_cast<uint32_t>(d.trace.size() - 1);
  // The totals after every event, recomputed from the ranges.
  std::vector<analysis::Totals> series;
  analysis::TotalsCursor cursor(r);
  for (uint32_t i = 0; i <= last; ++i) series.push_back(cursor.after(i));
  auto end = r.state_after(last);
  auto want = analysis::account(ctx, d);
  auto got = analysis::account(ctx, end.device);
  CHECK(end.totals.reserved == want.reserved_bytes);
  CHECK(end.totals.allocated == want.allocated_bytes);
  CHECK(end.totals.active == want.active_bytes);
  CHECK(got.reserved_bytes == want.reserved_bytes);
  CHECK(got.allocated_bytes == want.allocated_bytes);
  CHECK(got.external_free_bytes == want.external_free_bytes);
  CHECK(got.largest_free_block_bytes == want.largest_free_block_bytes);
  CHECK(got.segment_count == want.segment_count);
  CHECK(series[last].allocated == want.allocated_bytes);
  CHECK(series[last].reserved == want.reserved_bytes);
  // The cursor and the state rebuilt from checkpoints are two computations; they
  // agree at every event sampled, and at the last one with the dump.
  uint32_t step = std::max<uint32_t>(1, last / 97);
  for (uint32_t i = 0; i <= last; i += step) {
    CAPTURE(i);
    auto st = r.state_after(i);
    CHECK(st.totals.allocated == series[i].allocated);
    CHECK(st.totals.active == series[i].active);
    CHECK(st.totals.reserved == series[i].reserved);
    CHECK(st.totals.requested == series[i].requested);
    auto a = analysis::account(ctx, st.device);
    CHECK(a.allocated_bytes == st.totals.allocated);
    CHECK(a.reserved_bytes == st.totals.reserved);
  }
  // The sweep's running totals, kept at the peaks and OOMs, are the cursor's there;
  // the peaks are the series' maxima, first reached where the sweep says.
  auto peak = std::max_element(series.begin(), series.end(),
                               [](const auto& x, const auto& y) { return x.allocated < y.allocated; });
  REQUIRE(r.peak_allocated());
  CHECK(r.peak_allocated()->event == uint32_t(peak - series.begin()));
  CHECK(r.peak_allocated()->totals.active == peak->active);
  auto rpeak = std::max_element(series.begin(), series.end(),
                                [](const auto& x, const auto& y) { return x.reserved < y.reserved; });
  CHECK(r.peak_reserved()->totals.reserved == rpeak->reserved);
  for (const auto& o : r.ooms()) {
    CHECK(o.totals.allocated == series[o.event].allocated);
    CHECK(o.totals.active == series[o.event].active);
    CHECK(o.totals.reserved == series[o.event].reserved);
  }
}

// A trace event of a hand-built trace.
snapshot::TraceEvent ev(snapshot::Action a, uint64_t addr, uint64_t size) {
  snapshot::TraceEvent e;
  e.action = a, e.addr = addr, e.size = size;
  return e;
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
    analysis::Context ctx(full.snapshot);
    analysis::Replay r(ctx, d);
    auto st = r.state_after(static_cast<uint32_t>(n - 1));
    CHECK(st.totals.reserved == truth["reserved"].get<uint64_t>());
    CHECK(st.totals.allocated == truth["allocated"].get<uint64_t>());
    CHECK(st.totals.active == truth["active"].get<uint64_t>());
    CHECK(st.totals.requested == truth["requested"].get<uint64_t>());
    auto t = analysis::account(ctx, st.device);
    CHECK(t.segment_count == truth["segments"].get<uint64_t>());
    CHECK(t.largest_free_block_bytes == truth["largest_free_block"].get<uint64_t>());
  }
}

TEST_CASE("a wrapped ring buffer starts mid-run and still replays consistently") {
  auto l = snapshot::load_snapshot(test::testdata("snapgen/ring.pickle").string());
  auto truth = test::read_json_file(test::testdata("snapgen/ring.truth.json"));
  REQUIRE(truth["per_device"][0]["trace_dropped"].get<int>() > 0);
  analysis::Context ctx(l.snapshot);
  analysis::Replay r(ctx, l.snapshot.devices[0]);
  CHECK(r.window_starts_mid_run());
  CHECK(r.consistent());
  auto full = snapshot::load_snapshot(test::testdata("snapgen/leak.pickle").string());
  analysis::Context fctx(full.snapshot);
  analysis::Replay rf(fctx, full.snapshot.devices[0]);
  CHECK_FALSE(rf.window_starts_mid_run());  // the full trace starts with an empty allocator
}

TEST_CASE("replay is consistent on every real snapshot" * doctest::test_suite("realdata")) {
  test::each_realdata([&](const std::filesystem::path& path) {
    auto l = snapshot::load_snapshot(path.string());
    for (const auto& d : l.snapshot.devices) check_ends_at_dump(l.snapshot, d, true);
  });
}

TEST_CASE("checkpoints every few events rebuild every state the sweep saw") {
  for (const char* name : {"leak", "frag_after_oom", "expandable_leak", "streams2", "ring"}) {
    CAPTURE(name);
    auto l = snapshot::load_snapshot(test::testdata(std::string("snapgen/") + name + ".pickle").string());
    for (size_t every : {1, 7, 64}) check_ends_at_dump(l.snapshot, l.snapshot.devices[0], true, every);
  }
}

// The replay stores sizes in 512-byte units; others (a dumped block of an odd size, a
// block of 1 TiB) go to a side table. Every range reads back the size it was given.
TEST_CASE("ranges keep sizes that are not 512-byte multiples or are very large") {
  const uint64_t base = 0x7f0000000000ull, tib = 1ull << 40;
  snapshot::Snapshot s;
  s.devices.emplace_back();
  snapshot::Device& d = s.devices.back();
  snapshot::Segment sg;
  sg.address = base, sg.total_size = 3 * tib, sg.pool = snapshot::Pool::Large;
  // Dumped: an odd-sized block live since before the window, a 1 TiB block allocated in it.
  d.blocks.push_back({base, 1000, 1000, {}, snapshot::BlockState::ActiveAllocated});
  d.blocks.push_back({base + 1000, tib - 1000, 0, {}, snapshot::BlockState::Inactive});
  d.blocks.push_back({base + tib, tib, tib - 5, {}, snapshot::BlockState::ActiveAllocated});
  d.blocks.push_back({base + 2 * tib, tib, 0, {}, snapshot::BlockState::Inactive});
  sg.block_count = static_cast<uint32_t>(d.blocks.size());
  d.segments.push_back(sg);
  using snapshot::Action;
  d.trace.push_back(ev(Action::Alloc, base + 2 * tib, 3 * tib / 4));  // freed in the window: estimated
  d.trace.push_back(ev(Action::FreeRequested, base + 2 * tib, 3 * tib / 4));
  d.trace.push_back(ev(Action::FreeCompleted, base + 2 * tib, 3 * tib / 4));
  d.trace.push_back(ev(Action::Alloc, base + tib, tib - 5));
  analysis::Context ctx(s);
  analysis::Replay r(ctx, d);
  CHECK(r.consistent());
  const auto& ranges = r.ranges();
  REQUIRE(ranges.size() == 3);
  CHECK(ranges[0].begin == analysis::kWindowStart);
  CHECK(ranges[0].addr == base);
  CHECK(ranges[0].size == 1000);
  CHECK(ranges[0].requested == 1000);
  CHECK(ranges[0].size_exact);
  CHECK(ranges[1].begin == 0);
  CHECK(ranges[1].size == analysis::rules::round_size(3 * tib / 4, s.settings));
  CHECK_FALSE(ranges[1].size_exact);
  CHECK(ranges[1].allocated_before == 1000);  // not a multiple of 512: kept aside
  CHECK(ranges[1].freed == 1);
  CHECK(ranges[1].end == 2);
  CHECK(ranges[2].begin == 3);
  CHECK(ranges[2].addr == base + tib);
  CHECK(ranges[2].size == tib);
  CHECK(ranges[2].requested == tib - 5);
  CHECK(ranges[2].size_exact);
  CHECK(ranges[2].allocated_before == 1000);
  CHECK(r.state_after(3).totals.allocated == 1000 + tib);
}

TEST_CASE("a trace the dump contradicts: the first contradicting event, and the ranges still made") {
  const uint64_t base = 0x7f0000000000ull;
  snapshot::Snapshot s;
  s.devices.emplace_back();
  snapshot::Device& d = s.devices.back();
  snapshot::Segment sg;
  sg.address = base, sg.total_size = 1 << 20, sg.pool = snapshot::Pool::Large;
  d.blocks.push_back({base, 1 << 20, 0, {}, snapshot::BlockState::Inactive});
  sg.block_count = 1;
  d.segments.push_back(sg);
  using snapshot::Action;
  analysis::Context ctx(s);
  SUBCASE("the same block freed twice") {
    d.trace.push_back(ev(Action::Free, base, 4096));  // a block live before the window
    d.trace.push_back(ev(Action::Free, base, 4096));  // no block there any more
    analysis::Replay r(ctx, d);
    CHECK_FALSE(r.consistent());
    REQUIRE(r.first_mismatch());
    CHECK(r.first_mismatch()->event == 0);  // undone first: a block is live after it
    CHECK(r.first_mismatch()->what == "free of 0x7f0000000000, but a block is still live there after it");
    const auto& ranges = r.ranges();
    REQUIRE(ranges.size() == 1);
    CHECK(ranges[0].begin == analysis::kWindowStart);
    CHECK(ranges[0].freed == 0);
    CHECK(ranges[0].end == 0);
    // A 4096-byte request in a 1 MiB large-pool segment: the allocator hands out the whole
    // block (less than 1 MiB would remain), and the model sizes it so.
    CHECK(r.start_totals().allocated == 1 << 20);
  }
  SUBCASE("a completed free then a plain one: the later block is replaced by the earlier") {
    d.trace.push_back(ev(Action::FreeRequested, base, 4096));
    d.trace.push_back(ev(Action::FreeCompleted, base, 4096));
    d.trace.push_back(ev(Action::Free, base, 8192));
    analysis::Replay r(ctx, d);
    REQUIRE(r.first_mismatch());
    CHECK(r.first_mismatch()->event == 1);
    CHECK(r.first_mismatch()->what == "free of 0x7f0000000000, but a block is still live there after it");
    const auto& ranges = r.ranges();
    REQUIRE(ranges.size() == 1);
    CHECK(ranges[0].requested == 4096);  // the block event 1 completes: requested at its free_requested
    CHECK(ranges[0].freed == 0);
    CHECK(ranges[0].end == 1);
  }
  SUBCASE("an alloc where a block is already live: the old block ends there") {
    d.trace.push_back(ev(Action::Alloc, base, 4096));
    d.trace.push_back(ev(Action::Alloc, base, 8192));
    d.trace.push_back(ev(Action::Free, base, 8192));
    analysis::Replay r(ctx, d);
    const auto& ranges = r.ranges();
    REQUIRE(ranges.size() == 2);
    CHECK(ranges[0].begin == 0);
    CHECK(ranges[0].end == 1);  // replaced by the second alloc
    CHECK(ranges[1].begin == 1);
    CHECK(ranges[1].end == 2);
    // Each alloc takes the whole 1 MiB block (less than 1 MiB would remain): one at a time.
    CHECK(r.state_after(0).totals.allocated == 1 << 20);
    CHECK(r.state_after(1).totals.allocated == 1 << 20);
    CHECK(r.state_after(2).totals.allocated == 0);
  }
  SUBCASE("a segment freed with a live block in it: the block stays live until its free") {
    d.trace.push_back(ev(Action::Alloc, base, 4096));
    d.trace.push_back(ev(Action::SegmentFree, base, 1 << 20));
    d.trace.push_back(ev(Action::SegmentAlloc, base, 1 << 20));
    d.trace.push_back(ev(Action::Free, base, 4096));
    analysis::Replay r(ctx, d);
    const auto& ranges = r.ranges();
    REQUIRE(ranges.size() == 1);
    CHECK(ranges[0].begin == 0);
    CHECK(ranges[0].end == 3);  // the model lost the block with its segment; the replay did not
    CHECK(r.state_after(2).totals.allocated == 1 << 20);
    CHECK(r.state_after(3).totals.allocated == 0);
    if (r.first_mismatch()) CHECK(r.first_mismatch()->what.find("where no block is live") == std::string::npos);
  }
  SUBCASE("an alloc whose block is gone after it") {
    d.trace.push_back(ev(Action::Alloc, base, 4096));
    analysis::Replay r(ctx, d);
    REQUIRE(r.first_mismatch());
    CHECK(r.first_mismatch()->event == 0);
    CHECK(r.first_mismatch()->what == "alloc at 0x7f0000000000, but no block is allocated there after it");
  }
}
