// Seeded hashing for every table keyed by input data, so a crafted file cannot make lookups collide.
//
// The seed is random per process (getrandom, read once), so an attacker who writes a
// file cannot know which keys collide. The mixers are strong 64-bit finalisers: every
// input bit affects every output bit, so the low bits a power-of-two table uses are as
// good as the high ones. Use `Hasher` as the hash of a std::unordered_map, or
// `hash_u64` / `hash_bytes` to key an open-addressing table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace memsnap::util {

/// The per-process random seed (never 0). The first call reads it; later calls are a load.
uint64_t hash_seed();

/// A bijective 64-bit mixer (the "rrmxmx" finaliser): each input bit flips about half
/// of the output bits. Not seeded: combine with the seed first (see hash_u64).
inline uint64_t mix64(uint64_t x) {
  x ^= (x >> 49) ^ (x >> 24);
  x *= 0x9FB21C651E98DF25ull;
  x ^= x >> 28;
  x *= 0x9FB21C651E98DF25ull;
  return x ^ (x >> 28);
}

/// 128-bit multiply folded to 64 bits: the core step of the byte hash.
__extension__ typedef unsigned __int128 uint128_t;  // GCC and Clang on 64-bit hosts
inline uint64_t fold_mul(uint64_t a, uint64_t b) {
  uint128_t r = static_cast<uint128_t>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

/// Seeded hash of one 64-bit key.
inline uint64_t hash_u64(uint64_t x, uint64_t seed) {
  return mix64(x ^ seed);
}
inline uint64_t hash_u64(uint64_t x) {
  return hash_u64(x, hash_seed());
}

/// Seeded hash of a byte string (wyhash-style folded multiplies). Long strings go 32 bytes
/// a step in two independent lanes: each multiply waits only for the one before it in its
/// lane. Tracebacks are about 120 bytes; the hash was 4.7% of a 1 GB analyze (perf), and
/// the lanes took 2% off the load (bench_load). The lanes meet before the last 31 bytes.
/// Both factors of every multiply carry the seed or the running state: were one factor
/// only data ^ constant, the 8 bytes equal to that constant would zero the product, and
/// with it everything hashed before, for any seed (a file could then make any number of
/// strings collide).
inline uint64_t hash_bytes(const void* data, size_t n, uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  constexpr uint64_t k1 = 0xA0761D6478BD642Full, k2 = 0xE7037ED1A0B428DBull, k3 = 0x8EBC6AF09C88C6E3ull,
                     k4 = 0x589965CC75374CC3ull;
  uint64_t h = seed ^ (n * k1);
  auto word = [](const unsigned char* q) {
    uint64_t w;
    std::memcpy(&w, q, 8);
    return w;
  };
  if (n >= 32) {
    uint64_t g = seed ^ (n * k3);
    do {
      h = fold_mul(word(p) ^ k1 ^ h, word(p + 8) ^ k2 ^ seed);
      g = fold_mul(word(p + 16) ^ k3 ^ g, word(p + 24) ^ k4 ^ seed);
      p += 32;
      n -= 32;
    } while (n >= 32);
    h = fold_mul(h ^ k3, g ^ k4);
  }
  while (n >= 16) {
    h = fold_mul(word(p) ^ k1 ^ h, word(p + 8) ^ k2 ^ seed);
    p += 16;
    n -= 16;
  }
  uint64_t a = 0, b = 0;
  if (n >= 8) {
    a = word(p);
    b = word(p + n - 8);
  } else if (n > 0) {
    unsigned char buf[8] = {};
    std::memcpy(buf, p, n);
    a = word(buf);
  }
  return mix64(fold_mul(a ^ k1 ^ h, b ^ k2 ^ seed));
}
inline uint64_t hash_bytes(std::string_view s) {
  return hash_bytes(s.data(), s.size(), hash_seed());
}

/// Hash functor for std::unordered_map / unordered_set keyed by integers or strings.
struct Hasher {
  uint64_t seed = hash_seed();
  size_t operator()(uint64_t x) const { return static_cast<size_t>(hash_u64(x, seed)); }
  size_t operator()(std::string_view s) const { return static_cast<size_t>(hash_bytes(s.data(), s.size(), seed)); }
  size_t operator()(const std::string& s) const { return (*this)(std::string_view(s)); }
};

}  // namespace memsnap::util
