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

namespace {

// Allocates each size (MiB) as a segment of its own on `stream`, then frees them all: cached
// oversize blocks, one per segment.
void cache_segments(AllocatorModel& m, std::initializer_list<uint64_t> mib, uint64_t stream = 0) {
  std::vector<uint64_t> got;
  for (uint64_t n : mib) {
    auto a = m.malloc_simulated(n * MiB, stream);
    REQUIRE(a.addr);
    got.push_back(*a.addr);
  }
  for (uint64_t a : got) {
    m.free_requested(a);
    m.free_completed(a);
  }
}

}  // namespace

// release_available_cached_blocks (CUDACachingAllocator.cpp): with max_split_size set, in the
// request's pool and stream, the smallest cached block of at least max(request, max_split_size)
// is freed; when there is none, the largest oversize blocks first until that much is freed.
TEST_CASE("simulate: release_available_cached_blocks frees what PyTorch frees") {
  ModelSettings s;
  s.max_split_size = 40 * MiB;
  SUBCASE("the smallest cached block of at least the request") {
    s.capacity = 330 * MiB;
    AllocatorModel m(s, true);
    cache_segments(m, {50, 100, 150});  // 300 MiB reserved, all cached
    // 120 MiB: the 150 MiB block is too large to hand out (>= 120 + 20 MiB), a new segment does
    // not fit (420 > 330). PyTorch frees the 150 MiB block alone, then its cudaMalloc succeeds.
    auto r = m.malloc_simulated(120 * MiB, 0);
    REQUIRE(r.addr);
    CHECK(m.counters().segment_frees == 1);
    CHECK(m.totals().reserved == (50 + 100 + 120) * MiB);
    CHECK(m.counters().retries == 0);  // no release_cached_blocks, no retry
    check_invariants(m);
  }
  SUBCASE("none large enough: the largest first, until the request's size is freed") {
    s.capacity = 440 * MiB;
    AllocatorModel m(s, true);
    cache_segments(m, {50, 60, 100});  // 210 MiB
    cache_segments(m, {200}, 1);       // another stream's 200 MiB
    // 240 MiB on stream 0 has no cached block of 240; 410 + 240 > 440. PyTorch frees 100, then
    // 60 (160 < 240), then 50 (210 < 240): not enough, returns false, and release_cached_blocks
    // frees the other stream's 200 MiB too before the retry.
    auto r = m.malloc_simulated(240 * MiB, 0);
    REQUIRE(r.addr);
    CHECK(m.counters().retries == 1);
    CHECK(m.totals().reserved == 240 * MiB);
    check_invariants(m);
  }
  SUBCASE("largest first stops once enough is freed") {
    s.capacity = 240 * MiB;
    AllocatorModel m(s, true);
    cache_segments(m, {50, 60, 100});  // 210 MiB
    // 130 MiB: no cached block of 130 or more; 210 + 130 > 240. PyTorch frees 100 (100 < 130)
    // then 60 (160 >= 130) and stops: the 50 MiB block stays cached. No retry.
    auto r = m.malloc_simulated(130 * MiB, 0);
    REQUIRE(r.addr);
    CHECK(m.counters().segment_frees == 2);
    CHECK(m.totals().reserved == (50 + 130) * MiB);
    CHECK(m.counters().retries == 0);
    check_invariants(m);
  }
}

// garbage_collect_cached_blocks runs only under set_per_process_memory_fraction (malloc:
// `if (set_fraction && garbage_collection_threshold() > 0.0)`), which a snapshot never records.
TEST_CASE("simulate: garbage_collection_threshold frees nothing without a memory fraction") {
  ModelSettings s;
  s.garbage_collection_threshold = 0.5;
  s.capacity = 100 * MiB;
  AllocatorModel m(s, true);
  auto keep = m.malloc_simulated(30 * MiB, 0);
  REQUIRE(keep.addr);
  cache_segments(m, {30});                   // 60 MiB reserved, above half the device, 30 MiB of it cached
  auto small = m.malloc_simulated(1024, 0);  // the small pool: a new 2 MiB segment
  REQUIRE(small.addr);
  CHECK(m.counters().segment_frees == 0);  // PyTorch collects nothing: no fraction set
  CHECK(m.totals().reserved == 62 * MiB);
  check_invariants(m);
}

// alloc_block(isRetry) counts num_alloc_retries whenever release_cached_blocks was reached,
// also when it freed nothing (then the retry fails: the OOM).
TEST_CASE("simulate: every retry is counted, also one whose flush freed nothing") {
  ModelSettings s;
  s.capacity = 60 * MiB;
  AllocatorModel m(s, true);
  auto held = m.malloc_simulated(50 * MiB, 0);
  REQUIRE(held.addr);
  auto oom = m.malloc_simulated(20 * MiB, 0);  // nothing cached to free: retry, then the OOM
  CHECK_FALSE(oom.addr);
  CHECK(m.counters().retries == 1);
  CHECK(m.counters().segment_frees == 0);
  m.free_requested(*held.addr);
  m.free_completed(*held.addr);
  auto ok = m.malloc_simulated(55 * MiB, 0);  // the cached 50 MiB is freed, the retry succeeds
  REQUIRE(ok.addr);
  CHECK(m.counters().retries == 2);
  CHECK(m.counters().segment_frees == 1);
  check_invariants(m);
}

// find_expandable_block: a free block before unmapped space that already holds the request is
// returned as it is; nothing is mapped (get_free_block refused it: max_split_size's rule).
TEST_CASE("simulate: expandable segments with max_split_size use a free tail larger than the request") {
  ModelSettings s;
  s.expandable_segments = true;
  s.max_split_size = 64 * MiB;
  s.capacity = 1ull << 40;
  AllocatorModel m(s, true);
  auto big = m.malloc_simulated(100 * MiB, 0);
  REQUIRE(big.addr);
  m.free_requested(*big.addr);
  m.free_completed(*big.addr);
  const uint64_t mapped = m.counters().segment_allocs;
  auto r = m.malloc_simulated(3 * MiB - 1000, 0);
  REQUIRE(r.addr);
  CHECK(*r.addr == *big.addr);
  CHECK(m.counters().segment_allocs == mapped);
  CHECK(m.totals().reserved == 100 * MiB);
  check_invariants(m);
}

TEST_CASE("apply_setting: PYTORCH_CUDA_ALLOC_CONF spellings and refusals") {
  ModelSettings s;
  CHECK_FALSE(apply_setting(s, "expandable_segments:True"));
  CHECK(s.expandable_segments);
  CHECK_FALSE(apply_setting(s, "max_split_size_mb:512"));
  CHECK(s.max_split_size == 512 * MiB);
  CHECK(apply_setting(s, "max_split_size_mb:20"));  // PyTorch: "too small, must be > 20"
  CHECK(apply_setting(s, "max_split_size_mb:1"));
  CHECK(s.max_split_size == 512 * MiB);  // unchanged by a refusal
  CHECK_FALSE(apply_setting(s, "max_split_size_mb:21"));
  CHECK(s.max_split_size == 21 * MiB);
  CHECK(apply_setting(s, "max_split_size_mb:-3"));
  CHECK(apply_setting(s, "roundup_power2_divisions:3"));
  // The list form, as CUDAAllocatorConfig::parseRoundUpPower2Divisions fills its 16 intervals:
  // the first size also fills the intervals below it, `>` every interval after the last given.
  CHECK_FALSE(apply_setting(s, "roundup_power2_divisions:[256:1,512:2]"));
  std::vector<std::pair<uint64_t, uint64_t>> want;
  for (uint64_t i = 0; i < 16; ++i) want.push_back({uint64_t{1} << i, i <= 8 ? 1 : i == 9 ? 2 : 0});
  CHECK(s.roundup_power2_divisions == want);
  CHECK_FALSE(apply_setting(s, "roundup_power2_divisions:[64:8,>:2]"));
  want.clear();
  for (uint64_t i = 0; i < 16; ++i) want.push_back({uint64_t{1} << i, i <= 6 ? 8 : 2});
  CHECK(s.roundup_power2_divisions == want);
  CHECK(apply_setting(s, "roundup_power2_divisions:[256:3]"));  // divisions: a power of two
  CHECK(apply_setting(s, "roundup_power2_divisions:[100:2]"));  // sizes: a power of two
  CHECK(apply_setting(s, "roundup_power2_divisions:[256:1"));   // unclosed
  CHECK(apply_setting(s, "roundup_power2_divisions:[]"));
  CHECK(apply_setting(s, "garbage_collection_threshold:0"));
  CHECK(apply_setting(s, "nonsense"));
  CHECK(apply_setting(s, "nonsense:1"));
}
