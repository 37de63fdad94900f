// The allocator rules (round, pool, segment size, split, oversize, best fit) and the
// "would it fit" answer, against hand-built segment models and the frag fixture's truth.
#include <doctest/doctest.h>

#include <map>

#include "memsnap/analysis/allocator_rules.hpp"
#include "memsnap/analysis/fits.hpp"
#include "memsnap/snapshot/load.hpp"
#include "support/device_builder.hpp"
#include "support/testdata.hpp"

using namespace memsnap;
using namespace memsnap::test;
namespace rules = memsnap::analysis::rules;
using snapshot::Pool;

TEST_CASE("round_size: 512-byte steps, and roundup_power2_divisions") {
  CHECK(rules::round_size(1) == 512);
  CHECK(rules::round_size(512) == 512);
  CHECK(rules::round_size(513) == 1024);
  CHECK(rules::round_size(MiB + 1) == MiB + 512);
  snapshot::AllocatorSettings s;
  s.roundup_power2_divisions = {{1, 4}, {2, 8}};  // torch's keys: "1" = below 2 MiB, "2" = [2, 4) MiB
  // 4 divisions between 1 MiB and 2 MiB: steps of 256 KiB.
  CHECK(rules::round_size(1300000, s) == MiB + 256 * KiB);
  CHECK(rules::round_size(MiB, s) == MiB);  // a power of two stays
  // Only sizes above 512 * divisions use the divisions: 1200 B still rounds to 512 B steps.
  CHECK(rules::round_size(1200, s) == 1536);
  // 8 divisions between 2 MiB and 4 MiB: steps of 256 KiB; 3,000,000 B is 11.4 steps.
  CHECK(rules::round_size(3000000, s) == 2 * MiB + 4 * 256 * KiB);
}

TEST_CASE("pool choice at 1 MiB and the new segment size (get_allocation_size)") {
  CHECK(rules::pool_for(MiB) == Pool::Small);
  CHECK(rules::pool_for(MiB + 512) == Pool::Large);
  CHECK(rules::segment_size_for(512) == 2 * MiB);
  CHECK(rules::segment_size_for(MiB) == 2 * MiB);
  CHECK(rules::segment_size_for(MiB + 512) == 20 * MiB);
  CHECK(rules::segment_size_for(10 * MiB - 512) == 20 * MiB);
  CHECK(rules::segment_size_for(10 * MiB) == 10 * MiB);
  CHECK(rules::segment_size_for(10 * MiB + 512) == 12 * MiB);
}

TEST_CASE("split rule: small pool and expandable at 512 B, large pool only above 1 MiB and below max_split_size") {
  CHECK(rules::should_split(2 * MiB, 2 * MiB - 512, Pool::Small, false, {}));
  CHECK_FALSE(rules::should_split(2 * MiB, 2 * MiB, Pool::Small, false, {}));
  CHECK_FALSE(rules::should_split(6 * MiB, 5 * MiB, Pool::Large, false, {}));  // exactly 1 MiB left
  CHECK(rules::should_split(6 * MiB + 512, 5 * MiB, Pool::Large, false, {}));
  CHECK(rules::should_split(5 * MiB + 512, 5 * MiB, Pool::Large, true, {}));              // expandable: 512 B is enough
  CHECK_FALSE(rules::should_split(210 * MiB, 200 * MiB, Pool::Large, false, 100 * MiB));  // oversize: never split
  CHECK(rules::should_split(210 * MiB, 50 * MiB, Pool::Large, false, 100 * MiB));
}

TEST_CASE("oversize rules with max_split_size") {
  CHECK(rules::oversize_allows(150 * MiB, 10 * MiB, {}));
  CHECK_FALSE(rules::oversize_allows(150 * MiB, 10 * MiB, 100 * MiB));  // small request, oversize block
  CHECK(rules::oversize_allows(99 * MiB, 10 * MiB, 100 * MiB));
  CHECK_FALSE(rules::oversize_allows(140 * MiB, 120 * MiB, 100 * MiB));  // 20 MiB or more too large
  CHECK(rules::oversize_allows(140 * MiB - 512, 120 * MiB, 100 * MiB));
}

TEST_CASE("best fit: smallest block that fits, lowest address on ties; expandable prefers blocks that cannot grow") {
  std::vector<rules::FreeBlockRef> blocks = {
      {4 * MiB, 0x300, 0}, {2 * MiB, 0x200, 0}, {2 * MiB, 0x100, 0}, {8 * MiB, 0x400, 0}};
  CHECK(rules::best_fit(blocks, 2 * MiB, {}, false).chosen == size_t{2});
  CHECK(rules::best_fit(blocks, 3 * MiB, {}, false).chosen == size_t{0});
  CHECK_FALSE(rules::best_fit(blocks, 9 * MiB, {}, false).chosen);
  // max_split_size 4 MiB: a 3 MiB request may not take the 4 MiB block; best fit stops there.
  auto r = rules::best_fit(blocks, 3 * MiB, 4 * MiB, false);
  CHECK_FALSE(r.chosen);
  CHECK(r.rejected == size_t{0});
  // Expandable: the 2 MiB block ends a mapped range (it could grow), the 3 MiB one cannot.
  std::vector<rules::FreeBlockRef> exp = {{2 * MiB, 0x100, UINT64_MAX}, {3 * MiB, 0x200, 0}};
  CHECK(rules::best_fit(exp, 2 * MiB, {}, true).chosen == size_t{1});
  CHECK(rules::best_fit(exp, 2 * MiB, {}, false).chosen == size_t{0});
}

namespace {

/// Stream 0 large pool: A = [4 MiB used][6 MiB free][2 MiB used][8 MiB free], B = 12 MiB free;
/// stream 7: C = 20 MiB free; a private pool: E = 30 MiB free; small pool: D = [512 B used][2 MiB - 512 B free].
snapshot::Snapshot classic_model() {
  snapshot::Snapshot snap;
  add_device(snap, {
                       {0x10000000, Pool::Large, {alloc(4 * MiB), free_(6 * MiB), alloc(2 * MiB), free_(8 * MiB)}},
                       {0x20000000, Pool::Large, {free_(12 * MiB)}},
                       {0x30000000, Pool::Large, {free_(20 * MiB)}, 7},
                       {0x40000000, Pool::Small, {alloc(512), free_(2 * MiB - 512)}},
                       {0x50000000, Pool::Large, {free_(30 * MiB)}, 0, false, 1},
                   });
  return snap;
}

}  // namespace

TEST_CASE("fits on a hand-built classic model") {
  auto snap = classic_model();
  const auto& d = snap.devices[0];
  snapshot::AllocatorSettings none;

  SUBCASE("best fit takes the 6 MiB block; 1 MiB left is not split off in the large pool") {
    auto a = analysis::would_fit(d, none, {5 * MiB, 0});
    CHECK(a.served_from_cache);
    CHECK(a.pool == Pool::Large);
    CHECK(a.block_address == uint64_t{0x10000000 + 4 * MiB});
    CHECK(a.block_bytes == 6 * MiB);
    CHECK_FALSE(a.split);
    CHECK(a.remainder_bytes == MiB);
    CHECK(a.free_blocks == 3);
    CHECK(a.free_bytes == 26 * MiB);
    CHECK(a.largest_free_block_bytes == 12 * MiB);
    CHECK(a.other_streams_free_bytes == 20 * MiB);
    CHECK(a.private_pools_free_bytes == 30 * MiB);
  }
  SUBCASE("2 MiB left is split off") {
    auto a = analysis::would_fit(d, none, {4 * MiB, 0});
    CHECK(a.served_from_cache);
    CHECK(a.block_bytes == 6 * MiB);
    CHECK(a.split);
    CHECK(a.remainder_bytes == 2 * MiB);
  }
  SUBCASE("larger than every block on the stream: a new segment rounded up to 2 MiB") {
    auto a = analysis::would_fit(d, none, {13 * MiB, 0});
    CHECK_FALSE(a.served_from_cache);
    CHECK(a.new_segment_bytes == 14 * MiB);
    // The same request on stream 7 is served by that stream's 20 MiB block.
    auto b = analysis::would_fit(d, none, {13 * MiB, 7});
    CHECK(b.served_from_cache);
    CHECK(b.block_address == uint64_t{0x30000000});
  }
  SUBCASE("rounding: one byte more than a block is 512 bytes more") {
    auto a = analysis::would_fit(d, none, {12 * MiB + 1, 0});
    CHECK(a.rounded_bytes == 12 * MiB + 512);
    CHECK_FALSE(a.served_from_cache);
    CHECK(a.new_segment_bytes == 14 * MiB);
    CHECK(analysis::would_fit(d, none, {12 * MiB, 0}).served_from_cache);
  }
  SUBCASE("small requests use the small pool; 1 MiB + 1 goes to the large pool") {
    auto a = analysis::would_fit(d, none, {600 * KiB, 0});
    CHECK(a.served_from_cache);
    CHECK(a.pool == Pool::Small);
    CHECK(a.block_address == uint64_t{0x40000000 + 512});
    CHECK(a.split);
    auto b = analysis::would_fit(d, none, {MiB + 1, 0});
    CHECK(b.pool == Pool::Large);
    CHECK(b.block_bytes == 6 * MiB);
    auto c = analysis::would_fit(d, none, {MiB, 7});  // no small pool on stream 7
    CHECK(c.pool == Pool::Small);
    CHECK_FALSE(c.served_from_cache);
    CHECK(c.new_segment_bytes == 2 * MiB);
    auto e = analysis::would_fit(d, none, {9 * MiB, 3});  // nothing at all on stream 3
    CHECK_FALSE(e.served_from_cache);
    CHECK(e.new_segment_bytes == 20 * MiB);
  }
  SUBCASE("max_split_size: a request below it may not take a block of that size or more") {
    snapshot::AllocatorSettings s;
    s.max_split_size = 8 * MiB;
    auto a = analysis::would_fit(d, s, {7 * MiB, 0});  // best fit is the 8 MiB block
    CHECK_FALSE(a.served_from_cache);
    CHECK(a.oversize_rejected_bytes == 8 * MiB);
    CHECK(a.new_segment_bytes == 20 * MiB);
    CHECK(analysis::would_fit(d, s, {5 * MiB, 0}).served_from_cache);  // the 6 MiB block is fine
  }
}

TEST_CASE("fits with expandable segments: grow the free tail of a mapped range by whole pages") {
  snapshot::Snapshot snap;
  // Two mapped ranges of one large-pool reservation, 20 MiB unmapped between them.
  const uint64_t base = 0x7f0000000000;
  add_device(snap, {
                       {base, Pool::Large, {alloc(30 * MiB), free_(10 * MiB)}, 0, true},
                       {base + 60 * MiB, Pool::Large, {alloc(20 * MiB)}, 0, true},
                   });
  const auto& d = snap.devices[0];
  snapshot::AllocatorSettings s;
  s.expandable_segments = true;
  auto a = analysis::would_fit(d, s, {9 * MiB, 0});
  CHECK(a.expandable);
  CHECK(a.served_from_cache);
  CHECK(a.block_address == base + 30 * MiB);
  CHECK(a.split);  // expandable: any remainder of 512 B or more is split off
  // 25 MiB: 10 MiB free at the end of the first range + one new 20 MiB page in the gap.
  auto b = analysis::would_fit(d, s, {25 * MiB, 0});
  CHECK_FALSE(b.served_from_cache);
  CHECK(b.new_segment_bytes == 20 * MiB);
  CHECK(b.grows_block_address == base + 30 * MiB);
  // 35 MiB does not fit the 30 MiB around the gap: two new pages after the last range.
  auto c = analysis::would_fit(d, s, {35 * MiB, 0});
  CHECK_FALSE(c.served_from_cache);
  CHECK(c.new_segment_bytes == 40 * MiB);
  CHECK_FALSE(c.grows_block_address);
}

TEST_CASE("frag fixture: the OOM request needs exactly the truth's new segment; the largest free block serves") {
  auto l = snapshot::load_snapshot(testdata("snapgen/frag.pickle").string());
  auto truth = read_json_file(testdata("snapgen/frag.truth.json"))["oom"];
  const auto& d = l.snapshot.devices[0];
  auto a = analysis::would_fit(d, l.snapshot.settings, {truth["requested"].get<uint64_t>(), 0});
  CHECK(a.rounded_bytes == truth["requested_rounded"].get<uint64_t>());
  CHECK_FALSE(a.served_from_cache);
  CHECK(a.new_segment_bytes == truth["segment_request"].get<uint64_t>());
  CHECK(a.largest_free_block_bytes == truth["largest_free_block"].get<uint64_t>());

  // The largest inactive block of the large pool on stream 0, found here directly.
  uint64_t largest = 0;
  for (const auto& s : d.segments)
    if (s.pool == Pool::Large && s.stream == 0)
      for (const auto& b : d.blocks_of(s))
        if (b.state == snapshot::BlockState::Inactive) largest = std::max(largest, b.size);
  REQUIRE(largest == truth["largest_free_block"].get<uint64_t>());
  auto fit = analysis::would_fit(d, l.snapshot.settings, {largest, 0});
  CHECK(fit.served_from_cache);
  CHECK(fit.block_bytes == largest);
  auto over = analysis::would_fit(d, l.snapshot.settings, {largest + 1, 0});
  CHECK(over.rounded_bytes == largest + 512);
  CHECK_FALSE(over.served_from_cache);
  uint64_t want = largest + 512 < 10 * MiB ? 20 * MiB : (largest + 512 + 2 * MiB - 1) / (2 * MiB) * (2 * MiB);
  CHECK(over.new_segment_bytes == want);
}

namespace {

/// For every (stream, pool) of the default pool: a request of its largest free block is
/// served, and one byte more is not (when rounding keeps that size and pool).
void check_largest_block_fits(const snapshot::Snapshot& snap, const snapshot::Device& d) {
  std::map<std::pair<uint64_t, int>, uint64_t> largest;
  for (const auto& s : d.segments) {
    if (s.pool_id[0] != 0 || s.pool_id[1] != 0 || s.pool == Pool::Unknown) continue;
    for (const auto& b : d.blocks_of(s))
      if (b.state == snapshot::BlockState::Inactive) {
        auto& v = largest[{s.stream, int(s.pool)}];
        v = std::max(v, b.size);
      }
  }
  for (const auto& [key, size] : largest) {
    Pool pool = Pool(key.second);
    if (rules::pool_for(size) != pool || rules::round_size(size, snap.settings) != size) continue;
    CAPTURE(size);
    CHECK(analysis::would_fit(d, snap.settings, {size, key.first}).served_from_cache);
    if (pool == Pool::Large)
      CHECK_FALSE(analysis::would_fit(d, snap.settings, {size + 1, key.first}).served_from_cache);
  }
}

}  // namespace

TEST_CASE("fits: the largest free block of each stream and pool serves a request of its size (fixtures)") {
  for (const auto& row : snapgen_manifest()) {
    CAPTURE(row.file);
    auto l = snapshot::load_snapshot(testdata("snapgen/" + row.file).string());
    for (const auto& d : l.snapshot.devices) check_largest_block_fits(l.snapshot, d);
  }
}

TEST_CASE("fits: the largest free block of each stream and pool serves a request of its size (real files)" *
          doctest::test_suite("realdata")) {
  each_realdata([](const std::filesystem::path& p) {
    auto l = snapshot::load_snapshot(p.string());
    for (const auto& d : l.snapshot.devices) check_largest_block_fits(l.snapshot, d);
  });
}
