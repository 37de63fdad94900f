// The seeded byte hash that keys every table filled from a snapshot (strings, stacks,
// tracebacks): a file must not be able to choose collisions without knowing the seed.
#include <doctest/doctest.h>

#include <cstring>
#include <set>
#include <string>

#include "memsnap/util/hash.hpp"

using namespace memsnap;

namespace {

// Bytes chosen by a file's author: 8 bytes that differ from string to string, then 8 bytes
// equal to the multiplier constant of the hash's first step (little-endian), then a common
// tail. Were that factor only data ^ constant, it would be zero for all of them, and so
// would everything hashed before it, whatever the seed.
std::string crafted(uint64_t prefix, uint64_t constant, const std::string& tail) {
  std::string s(16, '\0');
  std::memcpy(s.data(), &prefix, 8);
  std::memcpy(s.data() + 8, &constant, 8);
  return s + tail;
}

}  // namespace

TEST_CASE("hash_bytes: strings built to zero a multiply do not collide, at any length") {
  constexpr uint64_t k2 = 0xE7037ED1A0B428DBull, k4 = 0x589965CC75374CC3ull;  // the hash's constants
  for (uint64_t seed : {uint64_t{1}, uint64_t{0x9E3779B97F4A7C15ull}, util::hash_seed()}) {
    CAPTURE(seed);
    for (const std::string& tail : {std::string(), std::string(7, 'x'), std::string(40, 'y')}) {
      CAPTURE(tail.size());
      std::set<uint64_t> hashes, lane2;
      for (uint64_t i = 0; i < 64; ++i) {
        std::string s = crafted(i * 0x0101010101010101ull, k2, tail);
        hashes.insert(util::hash_bytes(s.data(), s.size(), seed));
        // The second lane of 32-byte steps: bytes 24..31 equal its constant.
        std::string t = std::string(16, 'a') + crafted(i, k4, tail);
        lane2.insert(util::hash_bytes(t.data(), t.size(), seed));
      }
      CHECK(hashes.size() == 64);
      CHECK(lane2.size() == 64);
    }
  }
}

TEST_CASE("hash_bytes: every byte and the length count, on both sides of each step size") {
  uint64_t seed = util::hash_seed();
  for (size_t n : {0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 128}) {
    CAPTURE(n);
    std::string base(n, 'q');
    uint64_t h = util::hash_bytes(base.data(), n, seed);
    std::string longer = base + '\0';
    CHECK(util::hash_bytes(longer.data(), longer.size(), seed) != h);  // a trailing zero byte counts
    for (size_t i = 0; i < n; ++i) {
      std::string m = base;
      m[i] ^= 1;
      CHECK(util::hash_bytes(m.data(), n, seed) != h);
    }
    CHECK(util::hash_bytes(base.data(), n, seed ^ 1) != h);  // the seed counts
  }
}
