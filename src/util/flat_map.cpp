// FlatMap64's growth (flat_map.hpp): the entries of the old slot array placed in the new one.
#include "memsnap/util/flat_map.hpp"

#include <cstring>

namespace memsnap::detail {

void flat_map_place(const void* from, size_t count, void* to, size_t mask, unsigned shift, uint64_t seed,
                    size_t slot_bytes) {
  const auto* src = static_cast<const unsigned char*>(from);
  auto* dst = static_cast<unsigned char*>(to);
  auto key_at = [](const unsigned char* slot) {
    uint64_t key;
    std::memcpy(&key, slot, sizeof key);
    return key;
  };
  for (const unsigned char* s = src; s != src + count * slot_bytes; s += slot_bytes) {
    uint64_t key = key_at(s);
    if (key == kFlatMapFree) continue;
    size_t i = flat_map_home(key, seed, shift);
    while (key_at(dst + i * slot_bytes) != kFlatMapFree) i = (i + 1) & mask;
    std::memcpy(dst + i * slot_bytes, s, slot_bytes);
  }
}

}  // namespace memsnap::detail
