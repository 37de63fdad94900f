// The allocator model: should_split handouts, merging, oversize rules, expandable pages, and a
// random run whose layout invariants are checked after every step.
#include <doctest/doctest.h>

#include <random>

#include "memsnap/analysis/allocator_model.hpp"

using namespace memsnap;
using namespace memsnap::analysis;

namespace {

constexpr uint64_t MiB = 1ull << 20;
const PoolKey kLarge{0, false, 0, 0};
const PoolKey kSmall{0, true, 0, 0};

// Every segment is tiled by its blocks, no two free blocks touch, and the totals are the layout's
// (stranded bytes are counted when simulating; following a trace, the replay keeps its own).
void check_invariants(const AllocatorModel& m) {
  uint64_t allocated = 0, active = 0, reserved = 0, stranded = 0;
  for (const auto& [addr, blocks] : m.layout()) {
    uint64_t cursor = addr, seg_active = 0, seg_free = 0;
    bool prev_free = false;
    for (const auto& b : blocks) {
      REQUIRE(b.address == cursor);
      REQUIRE(b.size > 0);
      cursor += b.size;
      bool is_free = b.state == ModelState::Free;
      REQUIRE_FALSE((is_free && prev_free));
      prev_free = is_free;
      if (b.state == ModelState::Allocated) allocated += b.size;
      (is_free ? seg_free : seg_active) += b.size;
    }
    reserved += cursor - addr;
    active += seg_active;
    if (seg_active) stranded += seg_free;
  }
  CHECK(m.totals().allocated == allocated);
  CHECK(m.totals().active == active);
  CHECK(m.totals().reserved == reserved);
  CHECK(m.totals().stranded == (m.simulating() ? stranded : 0));
}

}  // namespace

TEST_CASE("follow: a large-pool remainder of 1 MiB or less stays in the block") {
  AllocatorModel m(ModelSettings{});
  m.add_segment(0x100000000, 20 * MiB, kLarge, false);
  auto a = m.alloc_at(0x100000000, 19 * MiB + 512 * 1024);
  CHECK(a.exact);
  CHECK(a.size == 20 * MiB);  // 0.5 MiB left: handed out whole
  CHECK(m.totals().allocated == 20 * MiB);
  check_invariants(m);
  CHECK(m.free_completed(0x100000000));
  m.add_segment(0x200000000, 20 * MiB, kLarge, false);
  auto b = m.alloc_at(0x200000000, 8 * MiB);
  CHECK(b.size == 8 * MiB);  // 12 MiB left: split off
  check_invariants(m);
}

TEST_CASE("follow: blocks of max_split_size or more are never split") {
  ModelSettings s;
  s.max_split_size = 20 * MiB;
  AllocatorModel m(s);
  m.add_segment(0x100000000, 64 * MiB, kLarge, false);
  CHECK(m.alloc_at(0x100000000, 22 * MiB).size == 64 * MiB);
  check_invariants(m);
}

TEST_CASE("follow: the small pool splits any remainder; frees merge with free neighbours") {
  AllocatorModel m(ModelSettings{});
  m.add_segment(0x100000000, 2 * MiB, kSmall, false);
  CHECK(m.alloc_at(0x100000000, 1536).size == 1536);
  CHECK(m.alloc_at(0x100000000 + 1536, 512).size == 512);
  check_invariants(m);
  CHECK(m.free_requested(0x100000000));
  CHECK(m.totals().allocated == 512);
  CHECK(m.totals().active == 2048);
  CHECK(m.free_completed(0x100000000));
  CHECK(m.free_completed(0x100000000 + 1536));
  auto layout = m.layout();
  REQUIRE(layout.size() == 1);
  CHECK(layout[0].second.size() == 1);  // one free block again
  CHECK(m.remove_segment(0x100000000, 2 * MiB));
  check_invariants(m);
}

TEST_CASE("follow: an alloc where the model has no free block is reported, not trusted") {
  AllocatorModel m(ModelSettings{});
  m.add_segment(0x100000000, 20 * MiB, kLarge, false);
  CHECK(m.alloc_at(0x100000000, 4 * MiB).exact);
  CHECK_FALSE(m.alloc_at(0x100000000, 4 * MiB).exact);            // live there already
  CHECK_FALSE(m.alloc_at(0x100000000 + 6 * MiB, 2 * MiB).exact);  // inside a free block
  check_invariants(m);
}

TEST_CASE("follow: expandable ranges join when mapped and split when unmapped") {
  AllocatorModel m(ModelSettings{});
  m.map(0x100000000, 20 * MiB, kLarge);
  m.map(0x100000000 + 20 * MiB, 20 * MiB, kLarge);
  REQUIRE(m.layout().size() == 1);
  CHECK(m.alloc_at(0x100000000, 30 * MiB).size == 30 * MiB);
  CHECK(m.free_completed(0x100000000));
  CHECK(m.unmap(0x100000000 + 20 * MiB, 20 * MiB));
  CHECK(m.totals().reserved == 20 * MiB);
  check_invariants(m);
}

// memsnap_fuzz's finding: a trace's segment_unmap without its size reached unmap(addr, 0), whose
// cut of zero bytes linked a block to itself and then dereferenced a block that was not there.
TEST_CASE("follow: zero-byte unmaps and placements are refused, the layout unharmed") {
  AllocatorModel m(ModelSettings{});
  const uint64_t base = 0x100000000;
  m.map(base, 20 * MiB, kLarge);
  CHECK(m.alloc_at(base, MiB).size == MiB);
  m.map(base + 40 * MiB, 20 * MiB, kLarge);
  const auto before = m.layout();
  CHECK_FALSE(m.unmap(base + 40 * MiB, 0));
  CHECK_FALSE(m.unmap(base + 2 * MiB, 0));  // inside the free rest of the first range
  CHECK_FALSE(m.place(base + 4 * MiB, 0, ModelState::Allocated));
  CHECK(m.layout() == before);
  CHECK(m.totals().reserved == 40 * MiB);
  check_invariants(m);
  CHECK(m.unmap(base + 40 * MiB, 20 * MiB));  // the whole range, as a trace with its size says
  CHECK(m.totals().reserved == 20 * MiB);
  check_invariants(m);
}

TEST_CASE("simulate: best fit, oversize rule, retry after a flush, and the OOM") {
  ModelSettings s;
  s.capacity = 60 * MiB;
  AllocatorModel m(s, true);
  auto a = m.malloc_simulated(30 * MiB, 0);
  REQUIRE(a.addr);
  CHECK(m.counters().segment_allocs == 1);
  m.free_requested(*a.addr);
  m.free_completed(*a.addr);
  auto b = m.malloc_simulated(10 * MiB, 0);  // served from the cached 30 MiB segment
  REQUIRE(b.addr);
  CHECK(*b.addr == *a.addr);
  CHECK(m.counters().segment_allocs == 1);
  auto c = m.malloc_simulated(40 * MiB, 0);  // 30 + 40 > 60: no room, nothing to flush
  CHECK_FALSE(c.addr);
  CHECK(c.alloc_size == 40 * MiB);
  check_invariants(m);
  m.free_requested(*b.addr);
  m.free_completed(*b.addr);
  auto d = m.malloc_simulated(40 * MiB, 0);  // the free segment is released, then cudaMalloc again
  REQUIRE(d.addr);
  CHECK(m.counters().retries >= 1);
  CHECK(m.counters().segment_frees >= 1);
  check_invariants(m);

  ModelSettings o;
  o.max_split_size = 20 * MiB;
  AllocatorModel n(o, true);
  auto big = n.malloc_simulated(30 * MiB, 0);
  n.free_requested(*big.addr);
  n.free_completed(*big.addr);
  auto small = n.malloc_simulated(4 * MiB, 0);  // may not take the 30 MiB oversize block
  REQUIRE(small.addr);
  CHECK(*small.addr != *big.addr);
}

TEST_CASE("simulate: expandable segments map pages as they grow") {
  ModelSettings s;
  s.expandable_segments = true;
  AllocatorModel m(s, true);
  auto a = m.malloc_simulated(7 * MiB, 0);
  auto b = m.malloc_simulated(7 * MiB, 0);
  auto c = m.malloc_simulated(7 * MiB, 0);
  REQUIRE((a.addr && b.addr && c.addr));
  CHECK(m.totals().reserved == 40 * MiB);  // 21 MiB in 20 MiB pages
  CHECK(m.layout().size() == 1);
  check_invariants(m);
  for (auto x : {a, b, c}) {
    m.free_requested(*x.addr);
    m.free_completed(*x.addr);
  }
  m.empty_cache();
  CHECK(m.totals().reserved == 0);
  check_invariants(m);
}

TEST_CASE("simulate: random requests keep every invariant") {
  for (bool expandable : {false, true}) {
    ModelSettings s;
    s.expandable_segments = expandable;
    s.capacity = 400 * MiB;
    AllocatorModel m(s, true);
    std::mt19937_64 rng(expandable ? 7 : 11);
    std::vector<uint64_t> live, pending;
    for (int step = 0; step < 3000; ++step) {
      uint64_t r = rng() % 10;
      if (r < 5 || live.empty()) {
        uint64_t size = rng() % 3 == 0 ? rng() % (1 << 20) + 1 : rng() % (24 * MiB) + 1;
        auto got = m.malloc_simulated(size, rng() % 2);
        if (got.addr) {
          live.push_back(*got.addr);
          const ModelBlock* b = m.block(*got.addr);
          REQUIRE(b);
          CHECK(b->size >= got.rounded);
        }
      } else if (r < 8) {
        size_t i = rng() % live.size();
        m.free_requested(live[i]);
        pending.push_back(live[i]);
        live.erase(live.begin() + static_cast<ptrdiff_t>(i));
      } else if (!pending.empty()) {
        m.free_completed(pending.back());
        pending.pop_back();
      }
      if (step % 500 == 499) m.empty_cache();
      if (step % 50 == 0) check_invariants(m);
      REQUIRE(m.totals().reserved <= s.capacity);
    }
    check_invariants(m);
  }
}

TEST_CASE("apply_setting: PYTORCH_CUDA_ALLOC_CONF spellings and refusals") {
  ModelSettings s;
  CHECK_FALSE(apply_setting(s, "expandable_segments:True"));
  CHECK(s.expandable_segments);
  CHECK_FALSE(apply_setting(s, "max_split_size_mb:512"));
  CHECK(s.max_split_size == 512 * MiB);
  CHECK_FALSE(apply_setting(s, "max_split_size_mb:1"));
  CHECK(s.max_split_size == 20 * MiB);  // at least kLargeBuffer, as CUDAAllocatorConfig
  CHECK(apply_setting(s, "max_split_size_mb:-3"));
  CHECK(apply_setting(s, "roundup_power2_divisions:3"));
  CHECK(apply_setting(s, "garbage_collection_threshold:0"));
  CHECK(apply_setting(s, "nonsense"));
  CHECK(apply_setting(s, "nonsense:1"));
}
