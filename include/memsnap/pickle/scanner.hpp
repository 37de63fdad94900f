// Scanning primitives over pickle bytes, shared by the unpickler and the snapshot fast path.
//
// Why one home: both parsers read the same little-endian arguments and LONG payloads
// (decode_long), hop the same FRAMEs and (the fast path) walk opcodes by their lengths and
// skip runs of memo GETs. Each primitive here reads only bytes its caller has shown to
// exist (or says how many it needs), and none throws: the parsers keep their own error
// policy (the unpickler names the offset and opcode, the fast path hands the input over to
// the general path).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "memsnap/pickle/opcodes.hpp"

namespace memsnap::pickle {

/// The payload of LONG1/LONG4 (little-endian two's complement), classified once for both
/// readers: the unpickler's value graph and the snapshot's fast builder.
struct DecodedLong {
  enum Kind : uint8_t { Signed, Unsigned, Big };
  Kind kind = Signed;
  uint64_t bits = 0;  // Signed: the int64's bits; Unsigned: the value (above INT64_MAX)
  size_t bytes = 0;   // Big: significant bytes (redundant sign extension dropped)
};

/// Inline: the fast path's event decoder reads every address through it (a LONG1).
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

struct Scanner {
  /// A little-endian integer of type T at p (all supported hosts are little-endian);
  /// sizeof(T) bytes must be readable.
  template <class T>
  [[gnu::always_inline]] static T le(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }

  /// The length of the opcode at q, its argument included, or 0 for an opcode that is not
  /// one of the binary forms a protocol 2-5 snapshot uses (text opcodes, anything that
  /// imports or calls) or one cut by `end`.
  static size_t op_length(const uint8_t* q, const uint8_t* end);

  /// An integer opcode at q whose argument lies within q's next 16 bytes (the caller has
  /// checked they exist): BININT1, BININT2, BININT, or LONG1 of 1 to 8 bytes. Sets v as
  /// pickle::decode_long would and returns the opcode's length, or 0 for anything else.
  [[gnu::always_inline]] static uint8_t small_int(const uint8_t* q, int64_t& v) {
    switch (q[0]) {
      case op::BININT1: v = q[1]; return 2;
      case op::BININT2: v = le<uint16_t>(q + 1); return 3;
      case op::BININT: v = le<int32_t>(q + 1); return 5;
      case op::LONG1: {
        uint8_t n = q[1];
        if (n == 0 || n > 8) return 0;
        uint64_t u = le<uint64_t>(q + 2);  // within the 16 bytes; the payload's n low bytes
        unsigned drop = 64 - 8 * unsigned(n);
        v = static_cast<int64_t>(u << drop) >> drop;  // sign-extended from its top byte
        return uint8_t(2 + n);
      }
      default: return 0;
    }
  }

  /// A memo GET at q (BINGET + 1 byte, LONG_BINGET + 4 bytes; 5 bytes readable): sets idx
  /// and returns the opcode's length, or 0 when q holds no GET.
  [[gnu::always_inline]] static uint8_t memo_get(const uint8_t* q, uint32_t& idx) {
    if (q[0] == op::BINGET) return idx = q[1], 2;
    if (q[0] == op::LONG_BINGET) return idx = le<uint32_t>(q + 1), 5;
    return 0;
  }

  /// The payload length a FRAME at q announces (9 bytes readable).
  static uint64_t frame_length(const uint8_t* q) { return le<uint64_t>(q + 1); }
  static constexpr size_t kFrameHeader = 9;

  /// The end of the run of memo GETs (BINGET, LONG_BINGET) that starts at q: the first
  /// byte that does not begin a whole GET before `end`. Inline: the fast path's hottest
  /// primitive, called for every traceback.
  static const uint8_t* skip_memo_gets(const uint8_t* q, const uint8_t* end);
};

// The end of a run of BINGET ('h' + 1 byte) and LONG_BINGET ('j' + 4 bytes) ops from q.
// Each op's length depends on its opcode, so a plain scan is one load-compare-add chain
// per op: perf put that scan at 14% of a 1 GB analyze, as the first reader of every
// traceback. With SSE2, 32 bytes at a time become two bit masks (where 'h' is, where 'j'
// is). A run of one kind (frame dicts memoized early are BINGETs, later ones LONG_BINGETs)
// is then one mask test for 16 or 7 ops; a mixed stretch walks the masks in registers
// instead of loading byte by byte. The last few bytes, and builds without SSE2, take the
// scalar scan, which checks four ops of one kind at a time from independent loads.
//
// The loads here were the rest of that 14%: this is the first read of most of the input,
// and a mapped file's page cache comes in 4 KiB pages, at whose ends the hardware
// prefetcher stops. So each call also asks for the three cache lines a page ahead (a
// traceback is about two lines; a prefetch never faults, past the end either). Paired
// bench_load runs on the 1 GB input: 1.86 s before, 1.70 s with the masks, 1.55 s with
// the prefetch; asking for each line once from try_event instead measured no gain.
inline const uint8_t* Scanner::skip_memo_gets(const uint8_t* q, const uint8_t* end) {
  for (uintptr_t ahead : {4096, 4096 + 64, 4096 + 128})  // as integers: may point past the input
    __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(q) + ahead));
#if defined(__SSE2__)
  constexpr uint32_t kEvery2 = 0x55555555u;  // op starts of 16 'h' ops
  constexpr uint32_t kEvery5 = 0x42108421u;  // op starts of 7 'j' ops
  while (end - q >= 37) {                    // a 'j' at offset 31 still ends inside the input
    __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16));
    const __m128i h = _mm_set1_epi8(char(op::BINGET)), j = _mm_set1_epi8(char(op::LONG_BINGET));
    uint32_t mh =
        uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(lo, h))) | uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(hi, h))) << 16;
    if ((mh & kEvery2) == kEvery2) {
      q += 32;
      continue;
    }
    uint32_t mj =
        uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(lo, j))) | uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(hi, j))) << 16;
    if ((mj & kEvery5) == kEvery5) {
      q += 35;
      continue;
    }
    unsigned pos = 0;
    while (pos < 32) {
      if ((mh >> pos) & 1)
        pos += 2;
      else if ((mj >> pos) & 1)
        pos += 5;
      else
        return q + pos;
    }
    q += pos;
  }
#endif
  for (;;) {
    while (end - q >= 21) {
      if (q[0] == op::BINGET && q[2] == op::BINGET && q[4] == op::BINGET && q[6] == op::BINGET)
        q += 8;
      else if (q[0] == op::LONG_BINGET && q[5] == op::LONG_BINGET && q[10] == op::LONG_BINGET &&
               q[15] == op::LONG_BINGET)
        q += 20;
      else
        break;
    }
    ptrdiff_t left = end - q;
    if (left >= 5 && *q == op::LONG_BINGET)
      q += 5;
    else if (left >= 2 && *q == op::BINGET)
      q += 2;
    else
      return q;
  }
}

}  // namespace memsnap::pickle
