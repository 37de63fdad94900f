// Seeded hashing for every map keyed by input data, so that a crafted snapshot cannot
// make all keys collide (identity hashes of addresses or memo indices would).
//
// The seed is drawn once per process from the address-space layout and the clock; the
// mixer is a full-avalanche 64-bit finaliser (splitmix64's), so keys that differ in any
// bit land in unrelated buckets and an attacker who does not know the seed cannot
// choose colliding keys.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace memsnap {

/// The per-process hash seed (never 0).
uint64_t hash_seed();

/// Mixes a 64-bit key with the process seed.
inline uint64_t mix64(uint64_t x) {
  static const uint64_t seed = hash_seed();
  x ^= seed;
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

/// Seeded hash of a byte string.
uint64_t hash_bytes(std::string_view s);

/// For std::unordered_map / unordered_set keyed by integers from the input.
struct SeededHash {
  size_t operator()(uint64_t v) const { return static_cast<size_t>(mix64(v)); }
  size_t operator()(std::string_view s) const { return static_cast<size_t>(hash_bytes(s)); }
};

}  // namespace memsnap
