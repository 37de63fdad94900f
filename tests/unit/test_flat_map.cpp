// FlatMap64 against std::map under churn: inserts, finds, erases by key and by the slot a
// find returned (erase_found, which the replay's sweep and undo use), with keys that
// collide in their low bits as addresses do, so probe runs are long and the backward
// shift moves entries. UINT64_MAX, which marks a free slot inside the map, is a key too.
// Growth (flat_map.cpp copies slots as bytes) with a value wider than 8 bytes, and clear().
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "memsnap/util/flat_map.hpp"

using memsnap::FlatMap64;

TEST_CASE("FlatMap64: inserts, finds and both erases agree with std::map under churn") {
  std::mt19937_64 rng(0x5EEDF1A7u);
  FlatMap64<uint32_t> map;
  std::map<uint64_t, uint32_t> want;
  size_t erased_found = 0, erased_key = 0, max_key_steps = 0;
  for (uint32_t step = 0; step < 200000; ++step) {
    uint64_t key = 0x7F0000000000ull + (rng() % 3000) * 512;  // 512-aligned, as block addresses
    if (rng() % 512 == 0) key = rng() % 2 ? UINT64_MAX : 0;   // the key that marks a free slot, and 0
    max_key_steps += key == UINT64_MAX;
    switch (rng() % 4) {
      case 0:
      case 1: {
        auto [slot, added] = map.try_emplace(key, step);
        CHECK(added == (want.count(key) == 0));
        if (added) want[key] = step;
        CHECK(*slot == want[key]);
        break;
      }
      case 2: {
        uint32_t* slot = map.find(key);
        REQUIRE((slot != nullptr) == (want.count(key) == 1));
        if (slot) {
          CHECK(*slot == want[key]);
          map.erase_found(slot);
          want.erase(key);
          ++erased_found;
        }
        break;
      }
      default:
        CHECK(map.erase(key) == (want.erase(key) == 1));
        ++erased_key;
        break;
    }
    if (step % 20000 == 0) {
      REQUIRE(map.size() == want.size());
      size_t seen = 0;
      map.for_each([&](uint64_t k, uint32_t v) {
        ++seen;
        auto it = want.find(k);
        REQUIRE(it != want.end());
        CHECK(it->second == v);
      });
      CHECK(seen == want.size());
    }
  }
  CHECK(map.size() == want.size());
  for (const auto& [k, v] : want) {
    const uint32_t* slot = map.find(k);
    REQUIRE(slot != nullptr);
    CHECK(*slot == v);
  }
  CHECK(max_key_steps > 100);
  CHECK(erased_found > 10000);
  CHECK(erased_key > 10000);
}

TEST_CASE("FlatMap64: growth keeps every entry of a wide value; clear empties the map") {
  struct Wide {  // 40-byte slots: growth copies slots as bytes, whatever their size
    uint64_t a = 0, b = 0, c = 0;
    uint32_t d = 0;
  };
  auto value_of = [](uint64_t key) { return Wide{key, ~key, key * 3, static_cast<uint32_t>(key >> 9)}; };
  FlatMap64<Wide> map;
  std::vector<uint64_t> keys;
  for (uint64_t i = 0; i < 5000; ++i) keys.push_back(0x7F0000000000ull + i * 512);
  keys.push_back(UINT64_MAX);
  for (uint64_t k : keys) CHECK(map.try_emplace(k, value_of(k)).second);
  REQUIRE(map.size() == keys.size());
  size_t bad = 0;
  for (uint64_t k : keys) {
    const Wide* w = map.find(k);
    Wide want = value_of(k);
    bad += !w || w->a != want.a || w->b != want.b || w->c != want.c || w->d != want.d;
  }
  CHECK(bad == 0);

  map.clear();
  CHECK(map.size() == 0);
  CHECK(map.empty());
  size_t found = 0, visited = 0;
  for (uint64_t k : keys) found += map.contains(k);
  map.for_each([&](uint64_t, const Wide&) { ++visited; });
  CHECK(found == 0);
  CHECK(visited == 0);
  CHECK(map.try_emplace(keys[7], value_of(keys[7])).second);
  CHECK(map.size() == 1);
}
