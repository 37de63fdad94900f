// The payload of LONG1/LONG4 (little-endian two's complement), classified once for both
// readers: the unpickler's value graph and the snapshot's fast builder.
#pragma once

#include <cstddef>
#include <cstdint>

namespace memsnap::pickle {

struct DecodedLong {
  enum Kind : uint8_t { Signed, Unsigned, Big };
  Kind kind = Signed;
  uint64_t bits = 0;  // Signed: the int64's bits; Unsigned: the value (above INT64_MAX)
  size_t bytes = 0;   // Big: significant bytes (redundant sign extension dropped)
};

inline DecodedLong decode_long(const uint8_t* p, size_t len) {
  if (len == 0) return {};
  bool neg = p[len - 1] & 0x80;
  // Drop redundant sign-extension bytes so that the length says how big the value is.
  size_t n = len;
  while (n > 1 && p[n - 1] == (neg ? 0xFF : 0x00) && bool(p[n - 2] & 0x80) == neg) --n;
  if (n <= 8) {
    uint64_t u = 0;
    for (size_t i = n; i-- > 0;) u = (u << 8) | p[i];
    if (neg && n < 8) u |= ~uint64_t{0} << (8 * n);
    return {DecodedLong::Signed, u, n};
  }
  if (n == 9 && !neg && p[8] == 0) {  // 2^63 .. 2^64-1: p[7]'s top bit is set
    uint64_t u = 0;
    for (size_t i = 8; i-- > 0;) u = (u << 8) | p[i];
    return {DecodedLong::Unsigned, u, n};
  }
  return {DecodedLong::Big, 0, n};
}

}  // namespace memsnap::pickle
