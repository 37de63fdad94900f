// The accounting: exact identities on hand-built models (both regimes, pending-only
// segments, private pools, clamped requests), the torch release rule computed
// independently, the snapgen fixtures (frag's OOM truth) and every real file.
#include <doctest/doctest.h>

#include <map>
#include <sstream>

#include "memsnap/analysis/accounting.hpp"
#include "memsnap/analysis/analyze.hpp"
#include "memsnap/report/analyze.hpp"
#include "memsnap/snapshot/load.hpp"
#include "support/device_builder.hpp"
#include "support/testdata.hpp"

using namespace memsnap;
using namespace memsnap::test;
using snapshot::Pool;

namespace {

/// The invariants every result must keep, whatever the input.
void check_identities(const snapshot::Device& d, const analysis::Accounting& a) {
  CHECK(a.requested_bytes + a.internal_free_bytes + a.pending_free_bytes + a.external_free_bytes == a.reserved_bytes);
  CHECK(a.releasable_bytes + a.stranded_bytes + a.private_held_bytes == a.external_free_bytes);
  CHECK(a.allocated_bytes == a.requested_bytes + a.internal_free_bytes);
  CHECK(a.active_bytes == a.allocated_bytes + a.pending_free_bytes);
  uint64_t pinned = 0, pinning_blocks = 0;
  for (const auto& s : a.pinning_sites) {
    pinned += s.stranded_bytes;
    pinning_blocks += s.blocks;
  }
  CHECK(pinned == a.stranded_bytes);
  CHECK(pinning_blocks == a.pinning_blocks);
  REQUIRE(a.segments.size() == d.segments.size());
  uint64_t reserved = 0, allocated = 0, pool_free = 0, pool_stranded = 0, pool_reserved = 0, pool_alloc = 0;
  for (size_t i = 0; i < d.segments.size(); ++i) {
    const auto& sa = a.segments[i];
    CAPTURE(i);
    CHECK(sa.requested_bytes + sa.internal_free_bytes + sa.pending_free_bytes + sa.external_free_bytes ==
          d.segments[i].total_size);
    CHECK(sa.releasable_bytes + sa.stranded_bytes + sa.private_held_bytes == sa.external_free_bytes);
    reserved += d.segments[i].total_size;
    for (const auto& b : d.blocks_of(d.segments[i]))
      if (b.state == snapshot::BlockState::ActiveAllocated) allocated += b.size;
  }
  for (const auto& p : a.pools) {
    pool_free += p.free_bytes;
    pool_stranded += p.stranded_bytes;
    pool_reserved += p.reserved_bytes;
    pool_alloc += p.allocated_bytes;
    uint64_t hist = 0;
    for (const auto& b : p.histogram) {
      hist += b.bytes;
      CHECK(b.max_bytes == 2 * b.min_bytes);
    }
    CHECK(hist == p.free_bytes);
  }
  CHECK(reserved == a.reserved_bytes);
  CHECK(allocated == a.allocated_bytes);
  CHECK(pool_reserved == a.reserved_bytes);
  CHECK(pool_alloc == a.allocated_bytes);
  CHECK(pool_free == a.external_free_bytes);
  CHECK(pool_stranded == a.stranded_bytes);
}

/// Releasable bytes by torch's rule, independently of the unit walk: per release unit
/// (a classic segment; a 2/20 MiB page of an expandable range, counted from its
/// start) of a default-pool segment, its free bytes when no allocated block touches it.
uint64_t releasable_by_torch_rule(const snapshot::Device& d) {
  uint64_t total = 0;
  for (const auto& s : d.segments) {
    if (s.pool_id[0] != 0 || s.pool_id[1] != 0) continue;
    uint64_t unit = s.expandable ? (s.pool == Pool::Small ? 2 * MiB : 20 * MiB) : std::max<uint64_t>(s.total_size, 1);
    std::map<uint64_t, std::pair<bool, uint64_t>> units;  // unit index -> (allocated seen, free bytes)
    uint64_t off = 0;
    for (const auto& b : d.blocks_of(s)) {
      for (uint64_t u = off / unit; b.size && u <= (off + b.size - 1) / unit; ++u) {
        uint64_t lo = std::max(off, u * unit), hi = std::min(off + b.size, (u + 1) * unit);
        auto& x = units[u];
        if (b.state == snapshot::BlockState::ActiveAllocated) x.first = true;
        if (b.state == snapshot::BlockState::Inactive) x.second += hi - lo;
      }
      off += b.size;
    }
    for (const auto& [u, x] : units)
      if (!x.first) total += x.second;
  }
  return total;
}

analysis::Accounting account_of(const snapshot::Snapshot& snap, const snapshot::Device& d) {
  analysis::Context ctx(snap);
  return analysis::account(ctx, d);
}

}  // namespace

TEST_CASE("fraction definition") {
  CHECK(analysis::fragmentation_ratio(0, 0) == 0);
  CHECK(analysis::fragmentation_ratio(10, 10) == 0);
  CHECK(analysis::fragmentation_ratio(1, 4) == doctest::Approx(0.75));
}

TEST_CASE("classic: a tiny allocation strands its whole segment; pending frees pin nothing") {
  snapshot::Snapshot snap;
  add_device(
      snap,
      {
          // 512 B allocated (100 B asked) pins a 20 MiB segment.
          {0x1000000, Pool::Large, {alloc(512, "a.py:1:f", 100), free_(20 * MiB - 512)}},
          {0x3000000, Pool::Small, {free_(2 * MiB)}},
          // One allocated and one pending block: the allocated one alone strands 18 MiB.
          {0x5000000, Pool::Large, {alloc(MiB, "b.py:2:g"), free_(2 * MiB), pending(MiB, "c.py:3:h"), free_(16 * MiB)}},
      });
  const auto& d = snap.devices[0];
  auto f = account_of(snap, d);
  check_identities(d, f);
  CHECK(f.regime == analysis::Regime::Classic);
  CHECK(f.reserved_bytes == 42 * MiB);
  CHECK(f.requested_bytes == 100 + MiB);
  CHECK(f.internal_free_bytes == 412);
  CHECK(f.pending_free_bytes == MiB);
  CHECK(f.external_free_bytes == 20 * MiB - 512 + 2 * MiB + 18 * MiB);
  CHECK(f.releasable_bytes == 2 * MiB);
  CHECK(f.releasable_bytes == releasable_by_torch_rule(d));
  CHECK(f.stranded_bytes == 20 * MiB - 512 + 18 * MiB);
  CHECK(f.releasable_segments == 1);
  CHECK(f.stranding_segments == 2);
  CHECK(f.pinning_blocks == 2);
  REQUIRE(f.pinning_sites.size() == 2);
  CHECK(f.pinning_sites[0].site == "a.py:1:f");
  CHECK(f.pinning_sites[0].stranded_bytes == 20 * MiB - 512);
  CHECK(f.pinning_sites[0].live_bytes == 512);
  CHECK(f.pinning_sites[0].example_address == 0x1000000);
  CHECK(f.pinning_sites[1].site == "b.py:2:g");
  CHECK(f.pinning_sites[1].stranded_bytes == 18 * MiB);
  // Pools: the large pool's stranded pieces are 20 MiB - 512 B, 2 MiB and 16 MiB.
  REQUIRE(f.pools.size() == 2);
  const auto& small = f.pools[0];
  const auto& large = f.pools[1];
  CHECK(small.pool == Pool::Small);
  CHECK(small.fragmentation == 0);
  CHECK(small.releasable_bytes == 2 * MiB);
  CHECK(large.free_blocks == 3);
  CHECK(large.largest_free_block_bytes == 20 * MiB - 512);
  CHECK(large.largest_stranded_block_bytes == 20 * MiB - 512);
  CHECK(large.fragmentation == doctest::Approx(1.0 - double(20 * MiB - 512) / double(38 * MiB - 512)));
  REQUIRE(large.histogram.size() == 2);
  CHECK(large.histogram[0].min_bytes == 2 * MiB);
  CHECK(large.histogram[1].min_bytes == 16 * MiB);
  CHECK(large.histogram[1].bytes == 36 * MiB - 512);
}

TEST_CASE("a segment whose only non-free blocks are pending is releasable; empty_cache returns them too") {
  snapshot::Snapshot snap;
  add_device(snap, {{0x1000000, Pool::Large, {pending(4 * MiB, "p.py:1:f"), free_(16 * MiB)}},
                    {0x3000000, Pool::Large, {alloc(MiB, "q.py:2:g"), pending(MiB, "p.py:1:f"), free_(18 * MiB)}}});
  const auto& d = snap.devices[0];
  auto f = account_of(snap, d);
  check_identities(d, f);
  CHECK(f.releasable_bytes == 16 * MiB);
  CHECK(f.releasable_bytes == releasable_by_torch_rule(d));
  CHECK(f.empty_cache_pending_bytes == 4 * MiB);
  CHECK(f.empty_cache_bytes() == 20 * MiB);
  CHECK(f.releasable_segments == 1);
  CHECK(f.stranded_bytes == 18 * MiB);
  REQUIRE(f.pinning_sites.size() == 1);  // the pending block of the second segment pins nothing
  CHECK(f.pinning_sites[0].site == "q.py:2:g");
  CHECK(f.pinning_sites[0].stranded_bytes == 18 * MiB);
}

TEST_CASE("private pools hold their free blocks: neither releasable nor stranded") {
  snapshot::Snapshot snap;
  std::vector<Seg> segs = {{0x1000000, Pool::Large, {alloc(MiB, "g.py:1:f"), free_(19 * MiB)}},
                           {0x3000000, Pool::Large, {free_(20 * MiB)}}};
  segs[0].pool_id0 = 1;
  segs[1].pool_id0 = 1;
  add_device(snap, segs);
  const auto& d = snap.devices[0];
  auto f = account_of(snap, d);
  check_identities(d, f);
  CHECK(f.private_held_bytes == 39 * MiB);
  CHECK(f.releasable_bytes == 0);
  CHECK(f.stranded_bytes == 0);
  CHECK(f.pinning_sites.empty());
  CHECK(f.releasable_segments == 0);
  REQUIRE(f.pools.size() == 1);
  CHECK(f.pools[0].is_private());
}

TEST_CASE("a requested size above the block size is clamped and listed") {
  snapshot::Snapshot snap;
  add_device(snap, {{0x1000, Pool::Small, {alloc(512, "r.py:1:f", 600), free_(2 * MiB - 512)}}});
  const auto& d = snap.devices[0];
  analysis::Context ctx(snap);
  auto f = analysis::account(ctx, d);
  check_identities(d, f);
  CHECK(f.requested_bytes == 512);
  CHECK(f.internal_free_bytes == 0);
  REQUIRE(f.clamped.size() == 1);
  CHECK(f.clamped[0].stated_requested == 600);
  auto result = analysis::analyze(ctx, {});
  REQUIRE(result.warnings.size() == 1);
  CHECK(result.warnings[0].find("600") != std::string::npos);
}

TEST_CASE("stranded bytes are shared equally; the remainder goes to the lowest addresses, one byte each") {
  snapshot::Snapshot snap;
  add_device(
      snap,
      {{0x1000, Pool::Large, {alloc(512, "x.py:1:a"), free_(1000), alloc(512, "x.py:2:b"), alloc(512, "x.py:3:c")}}});
  auto f = account_of(snap, snap.devices[0]);
  check_identities(snap.devices[0], f);
  std::map<std::string, uint64_t> by_site;
  for (const auto& s : f.pinning_sites) by_site[s.site] = s.stranded_bytes;
  CHECK(by_site["x.py:1:a"] == 334);
  CHECK(by_site["x.py:2:b"] == 333);
  CHECK(by_site["x.py:3:c"] == 333);
}

TEST_CASE("expandable: whole free pages are releasable even next to allocations; partial pages are stranded") {
  // One large-pool mapped range of three 20 MiB pages:
  //   [0, 1) A | [1, 46) free | [46, 48) B | [48, 60) free   (MiB)
  std::vector<Seg> layout = {{0x7f0000000000,
                              Pool::Large,
                              {alloc(MiB, "a.py:1:f"), free_(45 * MiB), alloc(2 * MiB, "b.py:2:g"), free_(12 * MiB)},
                              0,
                              true}};
  snapshot::Snapshot snap;
  add_device(snap, layout);
  auto f = account_of(snap, snap.devices[0]);
  check_identities(snap.devices[0], f);
  CHECK(f.regime == analysis::Regime::Expandable);
  CHECK(f.external_free_bytes == 57 * MiB);
  CHECK(f.releasable_bytes == 20 * MiB);
  CHECK(f.releasable_bytes == releasable_by_torch_rule(snap.devices[0]));
  CHECK(f.stranded_bytes == 37 * MiB);
  REQUIRE(f.pinning_sites.size() == 2);
  CHECK(f.pinning_sites[0].site == "a.py:1:f");
  CHECK(f.pinning_sites[0].stranded_bytes == 19 * MiB);
  CHECK(f.pinning_sites[1].stranded_bytes == 18 * MiB);

  layout[0].expandable = false;  // classic: nothing is releasable; A and B share 57 MiB
  snapshot::Snapshot classic;
  add_device(classic, layout);
  auto c = account_of(classic, classic.devices[0]);
  check_identities(classic.devices[0], c);
  CHECK(c.releasable_bytes == 0);
  CHECK(c.stranded_bytes == 57 * MiB);

  snapshot::Snapshot mixed;  // both kinds on one device
  layout.push_back({0x7f1000000000, Pool::Small, {free_(2 * MiB)}});
  add_device(mixed, layout);
  mixed.devices[0].segments[0].expandable = true;
  CHECK(account_of(mixed, mixed.devices[0]).regime == analysis::Regime::Mixed);
}

TEST_CASE("worst first: most stranded, then most fragmented") {
  snapshot::Snapshot snap;
  add_device(snap, {
                       {0x1000000, Pool::Large, {free_(20 * MiB)}},
                       {0x3000000, Pool::Large, {alloc(MiB), free_(19 * MiB)}},
                       {0x5000000, Pool::Large, {alloc(MiB), free_(9 * MiB), alloc(MiB), free_(9 * MiB)}},
                       {0x7000000, Pool::Small, {alloc(MiB), free_(MiB)}},
                       {0x8000000, Pool::Small, {free_(MiB / 2), alloc(MiB), free_(MiB / 2)}},
                   });
  const auto& d = snap.devices[0];
  auto f = account_of(snap, d);
  CHECK(analysis::segments_worst_first(d, f) == std::vector<uint32_t>{1, 2, 4, 3, 0});
}

TEST_CASE("findings: quiet on a healthy model; stranded and fragmented pool on a fragmented one; settings respected") {
  auto kinds = [](const snapshot::Snapshot& snap) {
    analysis::Context ctx(snap);
    auto r = analysis::analyze(ctx, {});
    std::vector<analysis::Finding> f = r.devices.at(0).findings;
    return f;
  };
  {
    snapshot::Snapshot snap;  // mostly allocated, a little free
    add_device(snap, {{0x1000000, Pool::Large, {alloc(900 * MiB, "m.py:1:w"), free_(100 * MiB)}}});
    CHECK(kinds(snap).empty());
  }
  auto fragmented = [](bool expandable_on) {
    auto snap = std::make_unique<snapshot::Snapshot>();
    std::vector<Seg> segs;
    for (int i = 0; i < 10; ++i)  // small allocations strand most of 1 GiB, in many pieces
      segs.push_back({0x10000000ull * uint64_t(i + 1),
                      Pool::Large,
                      {free_(40 * MiB), alloc(512, "opt.py:402:_init_group"), free_(60 * MiB - 512)}});
    add_device(*snap, segs);
    snap->settings.present = true;
    snap->settings.expandable_segments = expandable_on;
    return snap;
  };
  auto snap = fragmented(false);
  auto f = kinds(*snap);
  REQUIRE(f.size() == 2);
  CHECK(f[0].kind == analysis::FindingKind::StrandedFreeMemory);
  // no OOM, no flush-and-retry, no capacity known: no memory pressure, so info only
  CHECK(f[0].severity == analysis::Severity::Info);
  CHECK(f[1].kind == analysis::FindingKind::FragmentedPool);
  CHECK(f[1].severity == analysis::Severity::Info);
  // The words: the site is named, and a setting already on is never advised.
  for (bool on : {false, true}) {
    auto s = fragmented(on);
    analysis::Context ctx(*s);
    analysis::AnalyzeOptions opts;
    opts.oom.capacity = 1000 * MiB;  // the device is full: memory pressure, so warnings and fixes
    auto result = analysis::analyze(ctx, opts);
    CHECK(result.devices[0].memory_pressure);
    REQUIRE(result.devices[0].findings.size() == 2);
    CHECK(result.devices[0].findings[0].severity == analysis::Severity::Critical);
    snapshot::InputInfo input;
    std::ostringstream out;
    report::write_analyze_json(out, report::Source{input, ctx}, result);
    auto doc = nlohmann::json::parse(out.str());
    const auto& fs = doc["devices"][0]["findings"];
    REQUIRE(fs.size() == 2);
    CHECK(fs[0]["kind"] == "stranded_free_memory");
    CHECK(fs[0]["message"].get<std::string>().find("opt.py:402:_init_group") != std::string::npos);
    bool advises_expandable =
        fs[0]["advice"].get<std::string>().find("Set PYTORCH_CUDA_ALLOC_CONF=expandable") != std::string::npos;
    CHECK(advises_expandable == !on);
    CHECK(fs[1]["kind"] == "fragmented_pool");
  }
}

TEST_CASE("frag fixture: largest free block and free cached equal the truth at the OOM moment") {
  auto l = snapshot::load_snapshot(testdata("snapgen/frag.pickle").string());
  auto oom = read_json_file(testdata("snapgen/frag.truth.json"))["oom"];
  const auto& d = l.snapshot.devices[0];
  auto f = account_of(l.snapshot, d);
  check_identities(d, f);
  CHECK(f.largest_free_block_bytes == oom["largest_free_block"].get<uint64_t>());
  CHECK(f.reserved_bytes - f.active_bytes == oom["free_cached"].get<uint64_t>());
  CHECK(f.external_free_bytes == oom["free_cached"].get<uint64_t>());
  CHECK(f.reserved_bytes == oom["reserved"].get<uint64_t>());
  // At an OOM the allocator has already released every wholly free segment (SNAPSHOT_FORMAT.md §9.7).
  CHECK(f.releasable_bytes == 0);
  CHECK(f.stranded_bytes == oom["free_cached"].get<uint64_t>());
}

TEST_CASE("every snapgen fixture: identities, the torch release rule, quiet state findings on healthy runs") {
  for (const auto& row : snapgen_manifest()) {
    CAPTURE(row.file);
    auto l = snapshot::load_snapshot(testdata("snapgen/" + row.file).string());
    auto truth = read_json_file(testdata("snapgen/" + row.truth));
    analysis::Context ctx(l.snapshot);
    auto result = analysis::analyze(ctx, {});
    for (const auto& a : result.devices) {
      const auto& d = a.state();
      check_identities(d, a.accounting);
      CHECK(a.accounting.releasable_bytes == releasable_by_torch_rule(d));
      CHECK(a.accounting.reserved_bytes == truth["per_device"][size_t(d.index)]["reserved"].get<uint64_t>());
      bool expandable = row.args.find("--expandable") != std::string::npos;
      CHECK(a.accounting.regime == (expandable ? analysis::Regime::Expandable : analysis::Regime::Classic));
      if (truth["oom"].is_null())  // healthy runs: no warning about the state
        for (const auto& x : a.findings) {
          bool state = x.kind == analysis::FindingKind::StrandedFreeMemory ||
                       x.kind == analysis::FindingKind::FragmentedPool ||
                       x.kind == analysis::FindingKind::ReleasableCache || x.kind == analysis::FindingKind::PendingFree;
          CAPTURE(std::string(analysis::to_string(x.kind)));
          if (state) CHECK(x.severity == analysis::Severity::Info);
        }
    }
  }
}

TEST_CASE("every real file: identities per device and per segment, pinning sums to stranded" *
          doctest::test_suite("realdata")) {
  size_t files = each_realdata([](const std::filesystem::path& path) {
    auto l = snapshot::load_snapshot(path.string());
    for (const auto& d : l.snapshot.devices) {
      auto f = account_of(l.snapshot, d);
      check_identities(d, f);
      CHECK(f.releasable_bytes == releasable_by_torch_rule(d));
    }
  });
  if (files) CHECK(files >= 30);
}
