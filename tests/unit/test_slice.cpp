// analysis::slice: a window of the trace with the replayed state at its end replays consistently
// to exactly that state; its events are the original's; errors name the bad window in one line.
#include <doctest/doctest.h>

#include <sstream>

#include "memsnap/analysis/accounting.hpp"
#include "memsnap/analysis/replay.hpp"
#include "memsnap/analysis/slice.hpp"
#include "memsnap/report/export.hpp"
#include "memsnap/snapshot/load.hpp"
#include "memsnap/util/error.hpp"
#include "support/model_compare.hpp"
#include "support/testdata.hpp"

using namespace memsnap;
using analysis::SliceOptions;

namespace {

// The cut device replays consistently and ends exactly at its own segments; its events are
// trace[first..last] of the original; its state is the original replay's after `last`.
void check_cut(const snapshot::Snapshot& snap, const snapshot::Device& d, const SliceOptions& o, uint32_t first,
               uint32_t last) {
  CAPTURE(first);
  CAPTURE(last);
  snapshot::Snapshot cut = analysis::slice(snap, o);
  REQUIRE(cut.devices.size() == 1);
  const snapshot::Device& c = cut.devices[0];
  CHECK(c.index == d.index);
  REQUIRE(c.trace.size() == last - first + 1);
  for (uint32_t i = first; i <= last; ++i) {
    const auto &e = d.trace[i], &f = c.trace[i - first];
    if (!(e.action == f.action && e.addr == f.addr && e.size == f.size && e.time_us == f.time_us &&
          e.stack == f.stack)) {
      FAIL_CHECK("event " << i << " differs");
      break;
    }
  }

  analysis::Context sctx(snap), cctx(cut);
  analysis::Replay whole(sctx, d);
  auto want = whole.state_after(last).totals;
  auto got = analysis::account(cctx, c);
  CHECK(got.reserved_bytes == want.reserved);
  CHECK(got.allocated_bytes == want.allocated);
  CHECK(got.active_bytes == want.active);
  CHECK(got.requested_bytes == want.requested);

  analysis::Replay r(cctx, c);
  CHECK_MESSAGE(r.consistent(), (r.first_mismatch() ? r.first_mismatch()->what : ""));
  auto end = r.state_after(static_cast<uint32_t>(c.trace.size() - 1));
  snapshot::Device rebuilt = end.device;
  auto t = analysis::account(cctx, rebuilt);
  CHECK(t.reserved_bytes == got.reserved_bytes);
  CHECK(t.allocated_bytes == got.allocated_bytes);
  CHECK(t.active_bytes == got.active_bytes);
  CHECK(t.requested_bytes == got.requested_bytes);
  CHECK(t.external_free_bytes == got.external_free_bytes);
  CHECK(t.segment_count == got.segment_count);
  CHECK(t.block_count == got.block_count);
  REQUIRE(rebuilt.blocks.size() == c.blocks.size());
  size_t differ = 0;
  for (size_t i = 0; i < c.blocks.size(); ++i)
    differ += rebuilt.blocks[i].address != c.blocks[i].address || rebuilt.blocks[i].size != c.blocks[i].size ||
              rebuilt.blocks[i].state != c.blocks[i].state;
  CHECK(differ == 0);

  // And through a file: the pickle of the cut reads back to the same model, still consistent.
  std::ostringstream out;
  report::write_snapshot_pickle(out, cut);
  std::string bytes = out.str();
  auto back = snapshot::load_snapshot_bytes(std::vector<uint8_t>(bytes.begin(), bytes.end()), "cut.pickle");
  test::check_same_snapshot(cut, back.snapshot);
  const snapshot::Device* bd = back.snapshot.device(d.index);
  REQUIRE(bd != nullptr);
  analysis::Context bctx(back.snapshot);
  CHECK(analysis::Replay(bctx, *bd).consistent());
}

void check_windows(const snapshot::Snapshot& snap) {
  for (const auto& d : snap.devices) {
    const uint32_t n = static_cast<uint32_t>(d.trace.size());
    if (n < 3) continue;
    CAPTURE(d.index);
    SliceOptions o;
    o.device = d.index;
    o.last = 50;
    check_cut(snap, d, o, n > 50 ? n - 50 : 0, n - 1);
    o = {};
    o.device = d.index;
    o.from = n / 3;
    o.to = 2 * n / 3;
    check_cut(snap, d, o, n / 3, 2 * n / 3);
    o.from = 0;
    o.to = 0;
    check_cut(snap, d, o, 0, 0);
    if (d.trace[n / 4].has_time() && d.trace[n / 2].has_time() && d.trace[n / 4].time_us < d.trace[n / 2].time_us) {
      o = {};
      o.device = d.index;
      o.from_time = d.trace[n / 4].time_us;
      o.to_time = d.trace[n / 2].time_us;
      uint32_t first = n / 4, last = n / 2;
      while (first > 0 && d.trace[first - 1].time_us >= *o.from_time) --first;
      while (last + 1 < n && d.trace[last + 1].time_us <= *o.to_time) ++last;
      check_cut(snap, d, o, first, last);
    }
  }
}

std::string error_of(const snapshot::Snapshot& s, const SliceOptions& o) {
  try {
    analysis::slice(s, o);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("a cut of every snapgen fixture replays consistently to exactly its segments") {
  for (const auto& row : test::snapgen_manifest()) {
    CAPTURE(row.file);
    auto l = snapshot::load_snapshot(test::testdata("snapgen/" + row.file).string());
    check_windows(l.snapshot);
  }
}

TEST_CASE("a cut of every real snapshot whose trace replays consistently does too" * doctest::test_suite("realdata")) {
  test::each_realdata([](const std::filesystem::path& p) {
    auto l = snapshot::load_snapshot(p.string());
    analysis::Context lctx(l.snapshot);
    for (const auto& d : l.snapshot.devices)
      if (!d.trace.empty() && !analysis::Replay(lctx, d).consistent()) return;  // nothing to keep
    check_windows(l.snapshot);
  });
}

TEST_CASE("without a window: the dumped state of the chosen device, unchanged") {
  auto l = snapshot::load_snapshot(test::testdata("snapgen/devices2.pickle").string());
  SliceOptions o;
  o.device = 1;
  auto cut = analysis::slice(l.snapshot, o);
  REQUIRE(cut.devices.size() == 1);
  test::check_same_device(l.snapshot, *l.snapshot.device(1), cut, cut.devices[0]);
  // --last reaching the end keeps the dumped state itself (exact, not replayed)
  o.last = 1000000;
  cut = analysis::slice(l.snapshot, o);
  test::check_same_device(l.snapshot, *l.snapshot.device(1), cut, cut.devices[0]);
  // all devices, the last 10 events of each
  o = {};
  o.last = 10;
  cut = analysis::slice(l.snapshot, o);
  REQUIRE(cut.devices.size() == 2);
  for (const auto& d : cut.devices) CHECK(d.trace.size() == 10);
}

TEST_CASE("a time window holding no event keeps the state at its end and no trace") {
  auto l = snapshot::load_snapshot(test::testdata("snapgen/leak.pickle").string());
  const auto& d = l.snapshot.devices[0];
  const uint32_t n = static_cast<uint32_t>(d.trace.size());
  uint32_t k = n / 2;
  while (k + 1 < n && d.trace[k + 1].time_us == d.trace[k].time_us) ++k;
  REQUIRE(d.trace[k + 1].time_us > d.trace[k].time_us + 1);
  SliceOptions o;
  o.from_time = d.trace[k].time_us + 1;
  o.to_time = d.trace[k + 1].time_us - 1;
  CHECK(error_of(l.snapshot, o) == "--from-time/--to-time: no trace entry lies in that window on any device");
}

TEST_CASE("bad windows are one-line usage errors") {
  auto l = snapshot::load_snapshot(test::testdata("snapgen/frag.pickle").string());
  const auto& s = l.snapshot;
  SliceOptions o;
  o.device = 3;
  CHECK(error_of(s, o) == "--device 3: the snapshot has no such device");
  o = {};
  o.last = 0;
  CHECK(error_of(s, o) == "--last 0: a window holds at least one event");
  o = {};
  o.from = 10;
  o.to = 5;
  CHECK(error_of(s, o) == "--from 10 is after --to 5");
  o.to = 5000;
  CHECK(error_of(s, o) == "--to 5000: device 0 has 3089 trace entries (valid indices 0 to 3088)");
  o = {};
  o.from = 4000;
  CHECK(error_of(s, o) == "--from 4000: device 0 has 3089 trace entries (valid indices 0 to 3088)");
  o = {};
  o.last = 3;
  o.from = 1;
  CHECK(error_of(s, o) == "--last, --from/--to and --from-time/--to-time exclude each other: choose one window");
  o = {};
  o.from_time = 20;
  o.to_time = 10;
  CHECK(error_of(s, o) == "--from-time 20 is after --to-time 10");

  auto two = snapshot::load_snapshot(test::testdata("snapgen/devices2.pickle").string());
  o = {};
  o.from = 1;
  CHECK(error_of(two.snapshot, o) ==
        "--from/--to: trace indices are per device and 2 devices have traces: choose one with --device");

  auto list = snapshot::load_snapshot(test::testdata("snapgen/list.pickle").string());  // no trace at all
  o = {};
  o.device = 0;
  o.to = 3;
  CHECK(error_of(list.snapshot, o) == "--from/--to: device 0 has no trace entries");
}
