// The real snapshots in ../shared/realdata (never copied here): all parse, and their blocks obey torch's invariants.
#include <doctest/doctest.h>

#include "memsnap/analysis/accounting.hpp"
#include "memsnap/snapshot/load.hpp"
#include "support/testdata.hpp"

using namespace memsnap;

TEST_CASE("every real snapshot loads and its segments agree with their own stated totals" *
          doctest::test_suite("realdata")) {
  size_t files = test::each_realdata([&](const std::filesystem::path& path) {
    auto l = snapshot::load_snapshot(path.string());
    CHECK(l.snapshot.warnings.empty());
    analysis::Context ctx(l.snapshot);
    for (const auto& d : l.snapshot.devices) {
      for (const auto& seg : d.segments) {
        uint64_t sum = 0, alloc = 0, active = 0;
        for (const auto& b : d.blocks_of(seg)) {
          sum += b.size;
          if (b.state == snapshot::BlockState::ActiveAllocated) alloc += b.size;
          if (b.is_active()) active += b.size;
        }
        CHECK(sum == seg.total_size);
        if (seg.stated_allocated) CHECK(alloc == *seg.stated_allocated);
        if (seg.stated_active) CHECK(active == *seg.stated_active);
      }
      auto t = analysis::account(ctx, d);
      CHECK(t.requested_bytes + t.internal_free_bytes + t.pending_free_bytes + t.external_free_bytes ==
            t.reserved_bytes);
    }
  });
  if (files) CHECK(files >= 30);  // all of ../shared/realdata when it is there
}
