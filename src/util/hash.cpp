// The per-process hash seed: random bytes from the kernel, read once.
#include "memsnap/util/hash.hpp"

#include <sys/random.h>

#include <chrono>

namespace memsnap::util {

namespace {
uint64_t read_seed() {
  uint64_t s = 0;
  if (getrandom(&s, sizeof s, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof s)) {
    // No entropy yet (early boot): the clock and an address are still unknown to a file's author.
    s = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
        reinterpret_cast<uintptr_t>(&s);
  }
  s = mix64(s);
  return s ? s : 0x9E3779B97F4A7C15ull;
}
}  // namespace

uint64_t hash_seed() {
  static const uint64_t seed = read_seed();
  return seed;
}

}  // namespace memsnap::util
