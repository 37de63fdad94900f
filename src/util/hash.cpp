// The process hash seed and seeded byte-string hashing.
#include "memsnap/util/hash.hpp"

#include <chrono>
#include <cstring>

namespace memsnap {

uint64_t hash_seed() {
  static const uint64_t seed = [] {
    int local = 0;
    uint64_t s = reinterpret_cast<uintptr_t>(&local) ^ (reinterpret_cast<uintptr_t>(&hash_seed) << 17) ^
                 static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) *
                     0x9E3779B97F4A7C15ull;
    return s ? s : 0x9E3779B97F4A7C15ull;
  }();
  return seed;
}

uint64_t hash_bytes(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull ^ s.size();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = mix64(h ^ w);
  }
  uint64_t tail = 0;
  std::memcpy(&tail, s.data() + i, s.size() - i);
  return mix64(h ^ tail ^ (uint64_t(s.size() - i) << 56));
}

}  // namespace memsnap
