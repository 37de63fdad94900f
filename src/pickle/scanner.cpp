// Scanning primitives over pickle bytes (see scanner.hpp).
#include "memsnap/pickle/scanner.hpp"

namespace memsnap::pickle {

size_t Scanner::op_length(const uint8_t* q, const uint8_t* end) {
  size_t left = size_t(end - q);
  auto with = [&](size_t arg, size_t n) -> size_t { return left >= 1 + arg + n ? 1 + arg + n : 0; };
  auto u8 = [&] { return left >= 2 ? size_t(q[1]) : size_t(0); };
  auto u32 = [&] {
    uint32_t n = 0;
    if (left >= 5) std::memcpy(&n, q + 1, 4);
    return size_t(n);
  };
  auto u64 = [&] {
    uint64_t n = 0;
    if (left >= 9) std::memcpy(&n, q + 1, 8);
    return n > left ? left : size_t(n);
  };
  switch (*q) {
    case op::MARK:
    case op::STOP:
    case op::EMPTY_DICT:
    case op::EMPTY_LIST:
    case op::EMPTY_TUPLE:
    case op::TUPLE1:
    case op::TUPLE2:
    case op::TUPLE3:
    case op::TUPLE:
    case op::APPEND:
    case op::APPENDS:
    case op::SETITEM:
    case op::SETITEMS:
    case op::MEMOIZE:
    case op::NONE:
    case op::NEWTRUE:
    case op::NEWFALSE: return 1;
    case op::BINGET:
    case op::BINPUT:
    case op::BININT1: return with(1, 0);
    case op::BININT2: return with(2, 0);
    case op::LONG_BINGET:
    case op::LONG_BINPUT:
    case op::BININT: return with(4, 0);
    case op::BINFLOAT:
    case op::FRAME: return with(8, 0);
    case op::SHORT_BINUNICODE:
    case op::LONG1:
    case op::SHORT_BINBYTES: return left >= 2 ? with(1, u8()) : 0;
    case op::BINUNICODE:
    case op::BINBYTES: return left >= 5 ? with(4, u32()) : 0;
    case op::LONG4: return left >= 5 && int32_t(u32()) >= 0 ? with(4, u32()) : 0;
    case op::BINUNICODE8:
    case op::BINBYTES8:
    case op::BYTEARRAY8: return left >= 9 ? with(8, u64()) : 0;
    default: return 0;
  }
}

}  // namespace memsnap::pickle
