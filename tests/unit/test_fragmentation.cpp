// Free memory by cause: exact accounting on hand-built models (both regimes), the
// snapgen fixtures (frag's OOM truth, expandable pages) and every real file.
#include <doctest/doctest.h>

#include <map>

#include "memsnap/analysis/fragmentation.hpp"
#include "memsnap/analysis/summary.hpp"
#include "memsnap/snapshot/load.hpp"
#include "support/device_builder.hpp"
#include "support/testdata.hpp"

using namespace memsnap;
using namespace memsnap::test;
using snapshot::Pool;

namespace {

/// The invariants every result must keep, whatever the input.
void check_identities(const snapshot::Snapshot& snap, const snapshot::Device& d, const analysis::Fragmentation& f) {
  CHECK(f.requested_bytes + f.internal_free_bytes + f.pending_free_bytes + f.external_free_bytes == f.reserved_bytes);
  CHECK(f.releasable_bytes + f.stranded_bytes == f.external_free_bytes);
  uint64_t pinned = 0, pinning_blocks = 0;
  for (const auto& s : f.pinning_sites) {
    pinned += s.stranded_bytes;
    pinning_blocks += s.blocks;
  }
  CHECK(pinned == f.stranded_bytes);
  CHECK(pinning_blocks == f.pinning_blocks);
  REQUIRE(f.segments.size() == d.segments.size());
  uint64_t reserved = 0, pool_free = 0, pool_stranded = 0;
  for (size_t i = 0; i < d.segments.size(); ++i) {
    const auto& sf = f.segments[i];
    CAPTURE(i);
    CHECK(sf.requested_bytes + sf.internal_free_bytes + sf.pending_free_bytes + sf.external_free_bytes ==
          d.segments[i].total_size);
    CHECK(sf.releasable_bytes + sf.stranded_bytes == sf.external_free_bytes);
    reserved += d.segments[i].total_size;
  }
  for (const auto& p : f.pools) {
    pool_free += p.free_bytes;
    pool_stranded += p.stranded_bytes;
    uint64_t hist = 0;
    for (const auto& b : p.histogram) {
      hist += b.bytes;
      CHECK(b.max_bytes == 2 * b.min_bytes);
    }
    CHECK(hist == p.free_bytes);
  }
  CHECK(reserved == f.reserved_bytes);
  CHECK(pool_free == f.external_free_bytes);
  CHECK(pool_stranded == f.stranded_bytes);
  // The same figures as the totals every report prints.
  auto t = analysis::summarize(d);
  CHECK(f.external_free_bytes == t.inactive_bytes);
  CHECK(f.pending_free_bytes == t.pending_free_bytes);
  CHECK(f.largest_free_block_bytes == t.largest_free_block_bytes);
  (void)snap;
}

/// Releasable bytes computed the way torch releases memory, independently of the
/// unit walk: classic, the segments with no live block; expandable, the whole pages
/// (counted from the mapped range's start) inside each free block.
uint64_t releasable_by_torch_rule(const snapshot::Device& d) {
  uint64_t total = 0;
  for (const auto& s : d.segments) {
    auto blocks = d.blocks_of(s);
    if (!s.expandable) {
      bool live = false;
      for (const auto& b : blocks) live = live || b.is_active();
      if (!live) total += s.total_size;
      continue;
    }
    uint64_t page = s.pool == Pool::Small ? 2 * MiB : 20 * MiB;
    uint64_t off = 0;
    for (const auto& b : blocks) {
      if (!b.is_active()) {
        uint64_t lo = (off + page - 1) / page * page, hi = (off + b.size) / page * page;
        if (hi > lo) total += hi - lo;
      }
      off += b.size;
    }
  }
  return total;
}

}  // namespace

TEST_CASE("fraction definition") {
  CHECK(analysis::fragmentation_ratio(0, 0) == 0);
  CHECK(analysis::fragmentation_ratio(10, 10) == 0);
  CHECK(analysis::fragmentation_ratio(1, 4) == doctest::Approx(0.75));
}

TEST_CASE("classic: a tiny live block strands its whole segment; wholly free segments are releasable") {
  snapshot::Snapshot snap;
  add_device(snap, {
                       // 512 B live (100 B asked) pins a 20 MiB segment.
                       {0x1000000, Pool::Large, {alloc(512, "a.py:1:f", 100), free_(20 * MiB - 512)}},
                       {0x3000000, Pool::Small, {free_(2 * MiB)}},
                       // Two live blocks (one pending) share 18 MiB of stranded memory.
                       {0x5000000,
                        Pool::Large,
                        {alloc(MiB, "b.py:2:g"), free_(2 * MiB), pending(MiB, "c.py:3:h"), free_(16 * MiB)}},
                   });
  analysis::Sites sites(snap);
  const auto& d = snap.devices[0];
  auto f = analysis::analyze_fragmentation(snap, d, sites);
  check_identities(snap, d, f);
  CHECK(f.regime == analysis::Regime::Classic);
  CHECK(f.reserved_bytes == 42 * MiB);
  CHECK(f.requested_bytes == 100 + MiB);
  CHECK(f.internal_free_bytes == 412);
  CHECK(f.pending_free_bytes == MiB);
  CHECK(f.external_free_bytes == 20 * MiB - 512 + 2 * MiB + 18 * MiB);
  CHECK(f.releasable_bytes == 2 * MiB);
  CHECK(f.stranded_bytes == 20 * MiB - 512 + 18 * MiB);
  CHECK(f.releasable_segments == 1);
  CHECK(f.stranding_segments == 2);
  CHECK(f.pinning_blocks == 3);
  REQUIRE(f.pinning_sites.size() == 3);
  // Most stranded first: a.py strands its segment alone; b.py and c.py halve 18 MiB.
  CHECK(f.pinning_sites[0].site == "a.py:1:f");
  CHECK(f.pinning_sites[0].stranded_bytes == 20 * MiB - 512);
  CHECK(f.pinning_sites[0].live_bytes == 512);
  CHECK(f.pinning_sites[0].example_address == 0x1000000);
  CHECK(f.pinning_sites[1].stranded_bytes == 9 * MiB);
  CHECK(f.pinning_sites[2].stranded_bytes == 9 * MiB);
  // Per pool: the large pool's two free blocks of 18 MiB - 512 B.. and 2 MiB, 16 MiB.
  REQUIRE(f.pools.size() == 2);
  const auto& small = f.pools[0];
  const auto& large = f.pools[1];
  CHECK(small.pool == Pool::Small);
  CHECK(small.fragmentation == 0);
  CHECK(small.releasable_bytes == 2 * MiB);
  CHECK(large.free_blocks == 3);
  CHECK(large.largest_free_block_bytes == 20 * MiB - 512);
  CHECK(large.fragmentation == doctest::Approx(1.0 - double(20 * MiB - 512) / double(38 * MiB - 512)));
  // Histogram: 2 MiB in [2, 4) MiB, 16 MiB in [16, 32) MiB, 20 MiB - 512 B in [16, 32) MiB.
  REQUIRE(large.histogram.size() == 2);
  CHECK(large.histogram[0].min_bytes == 2 * MiB);
  CHECK(large.histogram[0].blocks == 1);
  CHECK(large.histogram[1].min_bytes == 16 * MiB);
  CHECK(large.histogram[1].blocks == 2);
  CHECK(large.histogram[1].bytes == 36 * MiB - 512);
}

TEST_CASE("stranded bytes are shared equally; the remainder goes to the lowest addresses, one byte each") {
  snapshot::Snapshot snap;
  add_device(snap, {{0x1000, Pool::Large,
                     {alloc(512, "x.py:1:a"), free_(1000), alloc(512, "x.py:2:b"), alloc(512, "x.py:3:c")}}});
  analysis::Sites sites(snap);
  auto f = analysis::analyze_fragmentation(snap, snap.devices[0], sites);
  check_identities(snap, snap.devices[0], f);
  std::map<std::string, uint64_t> by_site;
  for (const auto& s : f.pinning_sites) by_site[s.site] = s.stranded_bytes;
  CHECK(by_site["x.py:1:a"] == 334);
  CHECK(by_site["x.py:2:b"] == 333);
  CHECK(by_site["x.py:3:c"] == 333);
}

TEST_CASE("expandable: whole free pages are releasable even next to live blocks; partial pages are stranded") {
  // One large-pool mapped range of three 20 MiB pages:
  //   [0, 1) A live | [1, 46) free | [46, 48) B live | [48, 60) free   (MiB)
  // page 0 holds A and 19 MiB free -> stranded, pinned by A;
  // page 1 is inside the free block -> releasable;
  // page 2 holds 6 + 12 MiB free around B -> stranded, pinned by B.
  std::vector<Seg> layout = {
      {0x7f0000000000, Pool::Large, {alloc(MiB, "a.py:1:f"), free_(45 * MiB), alloc(2 * MiB, "b.py:2:g"), free_(12 * MiB)},
       0, true}};
  snapshot::Snapshot snap;
  add_device(snap, layout);
  analysis::Sites sites(snap);
  auto f = analysis::analyze_fragmentation(snap, snap.devices[0], sites);
  check_identities(snap, snap.devices[0], f);
  CHECK(f.regime == analysis::Regime::Expandable);
  CHECK(f.external_free_bytes == 57 * MiB);
  CHECK(f.releasable_bytes == 20 * MiB);
  CHECK(f.releasable_bytes == releasable_by_torch_rule(snap.devices[0]));
  CHECK(f.stranded_bytes == 37 * MiB);
  REQUIRE(f.pinning_sites.size() == 2);
  CHECK(f.pinning_sites[0].site == "a.py:1:f");
  CHECK(f.pinning_sites[0].stranded_bytes == 19 * MiB);
  CHECK(f.pinning_sites[1].stranded_bytes == 18 * MiB);

  // The same blocks in a classic segment: nothing is releasable; A and B share 57 MiB.
  layout[0].expandable = false;
  snapshot::Snapshot classic;
  add_device(classic, layout);
  analysis::Sites csites(classic);
  auto c = analysis::analyze_fragmentation(classic, classic.devices[0], csites);
  check_identities(classic, classic.devices[0], c);
  CHECK(c.releasable_bytes == 0);
  CHECK(c.stranded_bytes == 57 * MiB);
  CHECK(c.pinning_sites[0].stranded_bytes == c.pinning_sites[1].stranded_bytes);

  // Both kinds on one device.
  snapshot::Snapshot mixed;
  layout.push_back({0x7f1000000000, Pool::Small, {free_(2 * MiB)}});
  add_device(mixed, layout);
  mixed.devices[0].segments[0].expandable = true;
  analysis::Sites msites(mixed);
  CHECK(analysis::analyze_fragmentation(mixed, mixed.devices[0], msites).regime == analysis::Regime::Mixed);
}

TEST_CASE("worst first: most stranded, then most fragmented") {
  snapshot::Snapshot snap;
  add_device(snap, {
                       {0x1000000, Pool::Large, {free_(20 * MiB)}},                                     // releasable
                       {0x3000000, Pool::Large, {alloc(MiB), free_(19 * MiB)}},                         // 19 stranded
                       {0x5000000, Pool::Large, {alloc(MiB), free_(9 * MiB), alloc(MiB), free_(9 * MiB)}},  // 18
                       {0x7000000, Pool::Small, {alloc(MiB), free_(MiB)}},                              // 1, frag 0
                       {0x8000000, Pool::Small, {free_(MiB / 2), alloc(MiB), free_(MiB / 2)}},          // 1, frag .5
                   });
  analysis::Sites sites(snap);
  const auto& d = snap.devices[0];
  auto f = analysis::analyze_fragmentation(snap, d, sites);
  auto order = analysis::segments_worst_first(d, f);
  CHECK(order == std::vector<uint32_t>{1, 2, 4, 3, 0});
}

TEST_CASE("findings: quiet on a healthy model, stranded and fragmented pool on a fragmented one") {
  snapshot::AllocatorSettings classic;
  {
    snapshot::Snapshot snap;  // mostly allocated, a little free
    add_device(snap, {{0x1000000, Pool::Large, {alloc(900 * MiB, "m.py:1:w"), free_(100 * MiB)}}});
    analysis::Sites sites(snap);
    auto f = analysis::analyze_fragmentation(snap, snap.devices[0], sites);
    CHECK(analysis::fragmentation_findings(f, classic).empty());
  }
  snapshot::Snapshot snap;  // small live tensors strand most of 1 GiB
  std::vector<Seg> segs;
  for (int i = 0; i < 10; ++i)
    segs.push_back({0x10000000ull * uint64_t(i + 1), Pool::Large,
                    {free_(40 * MiB), alloc(512, "opt.py:402:_init_group"), free_(60 * MiB - 512)}});
  add_device(snap, segs);
  analysis::Sites sites(snap);
  auto f = analysis::analyze_fragmentation(snap, snap.devices[0], sites);
  auto findings = analysis::fragmentation_findings(f, classic);
  REQUIRE(findings.size() == 2);
  CHECK(findings[0].kind == "stranded_free_memory");
  CHECK(findings[0].severity == analysis::Severity::Critical);
  CHECK(findings[0].message.find("opt.py:402:_init_group") != std::string::npos);
  CHECK(findings[0].advice.find("expandable_segments:True") != std::string::npos);
  CHECK(findings[0].advice.find("del") != std::string::npos);
  CHECK(findings[1].kind == "fragmented_pool");
  CHECK(findings[1].advice.find("max_split_size_mb") != std::string::npos);
  // With expandable segments already on, the advice no longer suggests turning them on.
  snapshot::AllocatorSettings on;
  on.expandable_segments = true;
  for (const auto& x : analysis::fragmentation_findings(f, on))
    CHECK(x.advice.find("Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True") == std::string::npos);
}

TEST_CASE("frag fixture: largest free block and free cached equal the truth at the OOM moment") {
  auto l = snapshot::load_snapshot(testdata("snapgen/frag.pickle").string());
  auto oom = read_json_file(testdata("snapgen/frag.truth.json"))["oom"];
  analysis::Sites sites(l.snapshot);
  const auto& d = l.snapshot.devices[0];
  auto f = analysis::analyze_fragmentation(l.snapshot, d, sites);
  check_identities(l.snapshot, d, f);
  CHECK(f.largest_free_block_bytes == oom["largest_free_block"].get<uint64_t>());
  CHECK(f.reserved_bytes - (f.requested_bytes + f.internal_free_bytes + f.pending_free_bytes) ==
        oom["free_cached"].get<uint64_t>());
  CHECK(f.external_free_bytes == oom["free_cached"].get<uint64_t>());
  CHECK(f.reserved_bytes == oom["reserved"].get<uint64_t>());
  // At an OOM the allocator has already released every wholly free segment (SNAPSHOT_FORMAT.md §9.7).
  CHECK(f.releasable_bytes == 0);
  CHECK(f.stranded_bytes == oom["free_cached"].get<uint64_t>());
  auto kinds = analysis::fragmentation_findings(f, l.snapshot.settings);
  REQUIRE_FALSE(kinds.empty());
  CHECK(kinds[0].kind == "stranded_free_memory");
}

TEST_CASE("every snapgen fixture: identities, the torch release rule, quiet findings on healthy runs") {
  for (const auto& row : snapgen_manifest()) {
    CAPTURE(row.file);
    auto l = snapshot::load_snapshot(testdata("snapgen/" + row.file).string());
    auto truth = read_json_file(testdata("snapgen/" + row.truth));
    analysis::Sites sites(l.snapshot);
    for (const auto& d : l.snapshot.devices) {
      auto f = analysis::analyze_fragmentation(l.snapshot, d, sites);
      check_identities(l.snapshot, d, f);
      CHECK(f.releasable_bytes == releasable_by_torch_rule(d));
      CHECK(f.reserved_bytes == truth["per_device"][size_t(d.index)]["reserved"].get<uint64_t>());
      bool expandable = row.args.find("--expandable") != std::string::npos;
      CHECK(f.regime == (expandable ? analysis::Regime::Expandable : analysis::Regime::Classic));
      if (truth["oom"].is_null())  // healthy runs: nothing to warn about
        for (const auto& x : analysis::fragmentation_findings(f, l.snapshot.settings))
          CHECK_MESSAGE(x.severity == analysis::Severity::Info, x.kind);
    }
  }
}

TEST_CASE("expandable fixture: whole free pages are releasable inside a range that holds live blocks") {
  auto l = snapshot::load_snapshot(testdata("snapgen/expandable_leak.pickle").string());
  analysis::Sites sites(l.snapshot);
  const auto& d = l.snapshot.devices[0];
  auto f = analysis::analyze_fragmentation(l.snapshot, d, sites);
  CHECK(f.regime == analysis::Regime::Expandable);
  CHECK(f.releasable_bytes > 0);
  CHECK(f.stranded_bytes > 0);
  // Classic rules would release only the ranges with no live block at all.
  uint64_t whole_free = 0;
  for (const auto& s : d.segments) {
    bool live = false;
    for (const auto& b : d.blocks_of(s)) live = live || b.is_active();
    if (!live) whole_free += s.total_size;
  }
  CHECK(f.releasable_bytes >= whole_free);
}

TEST_CASE("every real file: identities per device and per segment, pinning sums to stranded") {
  if (!std::filesystem::is_directory(realdata())) {
    MESSAGE("SKIPPED: " << realdata() << " is absent");
    return;
  }
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(realdata())) {
    auto ext = entry.path().extension();
    if (ext != ".pickle" && ext != ".pkl" && ext != ".json") continue;
    CAPTURE(entry.path().filename().string());
    ++files;
    auto l = snapshot::load_snapshot(entry.path().string());
    analysis::Sites sites(l.snapshot);
    for (const auto& d : l.snapshot.devices) {
      auto f = analysis::analyze_fragmentation(l.snapshot, d, sites);
      check_identities(l.snapshot, d, f);
      CHECK(f.releasable_bytes == releasable_by_torch_rule(d));
    }
  }
  CHECK(files >= 30);
}
