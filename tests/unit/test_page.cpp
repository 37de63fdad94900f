// The report page's data: segment maps tile their segments and stay bounded, pruned flame
// trees keep their bytes, and the recorded moments are the replay's own states.
#include <doctest/doctest.h>

#include <algorithm>

#include "memsnap/analysis/analyze.hpp"
#include "memsnap/analysis/page.hpp"
#include "memsnap/snapshot/load.hpp"
#include "support/device_builder.hpp"
#include "support/testdata.hpp"

using namespace memsnap;
using analysis::MapClass;
using test::alloc;
using test::free_;
using test::KiB;
using test::MiB;
using test::pending;

namespace {

// Every segment's runs start at 0, follow each other and end at its size.
void check_tiles(const analysis::SegmentMap& map) {
  for (const auto& s : map.segments) {
    uint64_t pos = 0;
    for (uint32_t k = 0; k < s.runs; ++k) {
      const auto& r = map.runs[s.first_run + k];
      CHECK(r.offset == pos);
      CHECK(r.bytes > 0);
      pos += r.bytes;
    }
    CHECK(pos == s.size);
  }
}

}  // namespace

TEST_CASE("segment map: runs of one class, exact when small") {
  snapshot::Snapshot snap;
  auto& d = test::add_device(
      snap,
      {{0x1000000,
        snapshot::Pool::Large,
        {alloc(2 * MiB, "a.py:1:f"), alloc(2 * MiB, "a.py:2:g"), free_(4 * MiB), pending(1 * MiB), free_(1 * MiB)}},
       {0x2000000, snapshot::Pool::Small, {free_(2 * MiB)}}});
  analysis::Context ctx(snap);
  analysis::Accounting a = analysis::account(ctx, d);
  analysis::SegmentMap map = analysis::segment_map(d, a, 100, 100);
  check_tiles(map);
  CHECK(map.merge_below == 0);
  REQUIRE(map.segments.size() == 2);
  REQUIRE(map.segments[0].runs == 4);  // the two allocated blocks are one run
  // The free bytes of the first segment are stranded (it holds allocated blocks), so the
  // allocated blocks pin them; the second segment is all releasable.
  CHECK(map.runs[0].cls == MapClass::Pinning);
  CHECK(map.runs[0].blocks == 2);
  CHECK(map.runs[0].bytes == 4 * MiB);
  CHECK(map.runs[1].cls == MapClass::Stranded);
  CHECK(map.runs[2].cls == MapClass::Pending);
  CHECK(map.runs[3].cls == MapClass::Stranded);
  CHECK(map.runs[4].cls == MapClass::Free);
  CHECK(map.segments[0].allocated_bytes == 4 * MiB);
  CHECK(map.segments[0].stranded_bytes == a.segments[0].stranded_bytes);
}

TEST_CASE("segment map: many blocks are merged under the bound, bytes kept") {
  std::vector<test::B> blocks;
  for (int i = 0; i < 5000; ++i) blocks.push_back(i % 2 ? free_(512) : alloc(512 + 512 * (i % 7), "a.py:1:f"));
  blocks.push_back(free_(8 * MiB));
  snapshot::Snapshot snap;
  auto& d = test::add_device(snap, {{0x1000000, snapshot::Pool::Large, blocks}});
  analysis::Context ctx(snap);
  analysis::Accounting a = analysis::account(ctx, d);
  analysis::SegmentMap exact = analysis::segment_map(d, a, 100000, 100);
  CHECK(exact.merge_below == 0);
  CHECK(exact.runs.size() == 5000);  // the last small free block and the large one are one run
  CHECK(exact.runs.back().blocks == 2);
  analysis::SegmentMap map = analysis::segment_map(d, a, 200, 100);
  check_tiles(map);
  CHECK(map.runs.size() <= 200);
  CHECK(map.merge_below > 0);
  // The 8 MiB free block is larger than the threshold: a run of its own.
  CHECK(map.runs.back().bytes == 8 * MiB);
  CHECK(map.runs.back().blocks == 1);
}

TEST_CASE("segment map: more segments than the bound keeps the largest") {
  std::vector<test::Seg> segs;
  for (int i = 0; i < 50; ++i)
    segs.push_back({0x1000000ull + uint64_t(i) * 0x1000000, snapshot::Pool::Large, {free_((i + 1) * MiB)}});
  snapshot::Snapshot snap;
  auto& d = test::add_device(snap, segs);
  analysis::Context ctx(snap);
  analysis::SegmentMap map = analysis::segment_map(d, analysis::account(ctx, d), 1000, 10);
  check_tiles(map);
  REQUIRE(map.segments.size() == 10);
  CHECK(map.segments_left_out == 40);
  uint64_t left = 0;
  for (int i = 1; i <= 40; ++i) left += uint64_t(i) * MiB;
  CHECK(map.bytes_left_out == left);
  CHECK(map.segments.front().size == 41 * MiB);  // the largest ten, in address order
  for (size_t k = 1; k < map.segments.size(); ++k) CHECK(map.segments[k].address > map.segments[k - 1].address);
}

TEST_CASE("prune_flame keeps the root's bytes and a valid pre-order tree") {
  auto loaded = snapshot::load_snapshot(test::testdata("snapgen/frag.pickle").string());
  analysis::FlameTree full = analysis::flame_tree(analysis::stack_profile(loaded.snapshot, loaded.snapshot.devices[0]));
  REQUIRE(full.nodes.size() > 20);
  for (size_t limit : {size_t{1}, size_t{5}, size_t{20}, full.nodes.size()}) {
    analysis::FlameTree t = full;
    size_t left_out = analysis::prune_flame(t, limit);
    CHECK(t.nodes.size() <= std::max<size_t>(limit, 1));
    CHECK(t.nodes.size() + left_out == full.nodes.size());
    CHECK(t.nodes[0].bytes == full.nodes[0].bytes);
    std::vector<uint64_t> children(t.nodes.size(), 0);
    for (size_t i = 1; i < t.nodes.size(); ++i) {
      CHECK(t.nodes[i].parent < i);
      CHECK(t.nodes[i].depth == t.nodes[t.nodes[i].parent].depth + 1);
      children[t.nodes[i].parent] += t.nodes[i].bytes;
    }
    for (size_t i = 0; i < t.nodes.size(); ++i) {
      CHECK(children[i] + t.nodes[i].self_bytes == t.nodes[i].bytes);
      // The subtree is the contiguous range after the node.
      size_t end = i + t.subtree_size[i];
      REQUIRE(end <= t.nodes.size());
      for (size_t k = i + 1; k < end; ++k) CHECK(t.nodes[k].depth > t.nodes[i].depth);
      if (end < t.nodes.size()) CHECK(t.nodes[end].depth <= t.nodes[i].depth);
    }
  }
}

TEST_CASE("the page's moments are the replay's states") {
  for (const char* name : {"frag", "leak", "devices2", "list"}) {
    CAPTURE(name);
    auto loaded = snapshot::load_snapshot(test::testdata(std::string("snapgen/") + name + ".pickle").string());
    analysis::Context ctx(loaded.snapshot);
    analysis::AnalyzeOptions o;
    o.timeline.emplace();
    analysis::PageOptions po;
    po.even_states = 5;
    o.page = po;
    auto result = analysis::analyze(ctx, o);
    for (const auto& dev : result.devices) {
      REQUIRE(dev.page);
      const auto& page = *dev.page;
      REQUIRE(!page.states.empty());
      // The dump last, as dumped.
      const auto& dump = page.states.back();
      CHECK(dump.moment == analysis::Moment::Dump);
      CHECK(!dump.event);
      CHECK(dump.reserved_bytes == dev.accounting.reserved_bytes);
      CHECK(dump.allocated_bytes == dev.accounting.allocated_bytes);
      if (dev.dumped().trace.empty()) {
        CHECK(page.states.size() == 1);
        continue;
      }
      // Replayed moments in event order, distinct, bounded.
      size_t iterations = std::min(po.iteration_states, dev.iterations.boundaries.size());
      CHECK(page.states.size() <= 1 + 1 + po.oom_states + iterations + po.even_states);
      for (size_t k = 1; k + 1 < page.states.size(); ++k) CHECK(*page.states[k - 1].event < *page.states[k].event);
      // The peak's state holds the peak, as analyze found it.
      REQUIRE(dev.peaks.allocated);
      auto peak = std::find_if(page.states.begin(), page.states.end(),
                               [](const auto& s) { return s.moment == analysis::Moment::Peak; });
      REQUIRE(peak != page.states.end());
      CHECK(*peak->event == dev.peaks.allocated->event_index);
      CHECK(peak->allocated_bytes == dev.peaks.allocated->allocated_bytes);
      CHECK(peak->reserved_bytes == dev.peaks.allocated->reserved_bytes);
      // One event behind every timeline point.
      REQUIRE(dev.timeline);
      CHECK(page.point_events.size() == dev.timeline->points.size());
      // The flames: the dump's holds the dump's allocated bytes.
      REQUIRE(!page.flames.empty());
      CHECK(page.flames[0].tree.nodes[0].bytes == dev.accounting.allocated_bytes);
    }
  }
}
