// The streaming pickler: exact opcodes for each value kind, batching, memo sharing, and a round trip
// through memsnap's own unpickler (the Python side is checked by tests/cli/test_export.py).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "memsnap/pickle/pickler.hpp"
#include "memsnap/pickle/unpickler.hpp"

using namespace memsnap::pickle;

namespace {

template <class F>
std::string pickled(F body) {
  std::ostringstream out;
  Pickler p(out);
  body(p);
  p.finish();
  return out.str();
}

std::string hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

std::string decoded(const std::string& bytes) {
  std::vector<uint8_t> in(bytes.begin(), bytes.end());
  PickleInfo info;
  ValueGraph g = unpickle(in, &info);
  CHECK(info.protocol == 4);
  return dump(g, g.root());
}

}  // namespace

TEST_CASE("integers take CPython's smallest encoding: BININT1, BININT2, BININT, then LONG1 of minimal length") {
  auto one = [](int64_t v) { return hex(pickled([&](Pickler& p) { p.integer(v); })); };
  CHECK(one(0) == "80044b002e");
  CHECK(one(255) == "80044bff2e");
  CHECK(one(256) == "80044d00012e");
  CHECK(one(65535) == "80044dffff2e");
  CHECK(one(65536) == "80044a000001002e");
  CHECK(one(-1) == "80044affffffff2e");
  CHECK(one(INT32_MAX) == "80044affffff7f2e");
  CHECK(one(INT32_MIN) == "80044a000000802e");
  CHECK(one(int64_t{1} << 31) ==
        "80048a05000000800"
        "02e");                                            // needs a fifth byte for the sign
  CHECK(one(0x7f0000200000) == "80048a0600002000007f2e");  // a device address: 6 bytes
  CHECK(one(0x800000000000) ==
        "80048a070000000000800"
        "02e");  // bit 47 set: 7 bytes
  CHECK(one(INT64_MIN) == "80048a0800000000000000802e");
  CHECK(one(-(int64_t{1} << 40)) == "80048a060000000000ff2e");
  // unsigned values with bit 63 set: eight bytes and a zero sign byte
  CHECK(hex(pickled([](Pickler& p) { p.uinteger(UINT64_MAX); })) == "80048a09ffffffffffffffff002e");
  CHECK(hex(pickled([](Pickler& p) { p.uinteger(1234); })) == "80044dd2042e");
  CHECK(decoded(pickled([](Pickler& p) {
          p.begin_list();
          for (int64_t v : {int64_t{0}, int64_t{-129}, int64_t{1} << 40, -(int64_t{1} << 40), INT64_MAX, INT64_MIN})
            p.integer(v);
          p.uinteger(UINT64_MAX);
          p.uinteger(uint64_t{1} << 63);
          p.end_list();
        })) ==
        "[0, -129, 1099511627776, -1099511627776, 9223372036854775807, -9223372036854775808, "
        "18446744073709551615, 9223372036854775808]");
}

TEST_CASE("floats are BINFLOAT big-endian; None, booleans, strings, tuples") {
  CHECK(hex(pickled([](Pickler& p) { p.real(1.5); })) == "8004473ff80000000000002e");
  CHECK(hex(pickled([](Pickler& p) { p.none(); })) == "80044e2e");
  CHECK(hex(pickled([](Pickler& p) { p.boolean(true); })) == "8004882e");
  CHECK(hex(pickled([](Pickler& p) { p.boolean(false); })) == "8004892e");
  CHECK(hex(pickled([](Pickler& p) { p.str("size"); })) == "80048c0473697a652e");
  CHECK(hex(pickled([](Pickler& p) {
          p.begin_tuple();
          p.integer(0);
          p.integer(1);
          p.end_tuple();
        })) == "8004284b004b01742e");
  std::string long_str(300, 'a');
  std::string b = pickled([&](Pickler& p) { p.str(long_str); });
  CHECK(hex(b.substr(0, 7)) == "8004582c010000");  // BINUNICODE, u32 length 300
  CHECK(decoded(b) == "\"" + long_str + "\"");
  CHECK(decoded(pickled([](Pickler& p) {
          p.begin_list();
          p.real(-0.0);
          p.real(std::numeric_limits<double>::infinity());
          p.real(0.1);
          p.end_list();
        })) == "[-0, inf, 0.10000000000000001]");
}

TEST_CASE("strings that are not UTF-8 become U+FFFD; encoded surrogates pass as CPython reads them") {
  std::string scratch;
  CHECK(sanitize_utf8("h\xc3\xa9llo", scratch, false) == "h\xc3\xa9llo");
  CHECK(sanitize_utf8("a\xff"
                      "b",
                      scratch, false) ==
        "a\xef\xbf\xbd"
        "b");
  CHECK(sanitize_utf8("\xc3", scratch, false) == "\xef\xbf\xbd");         // truncated sequence
  CHECK(sanitize_utf8("\xed\xa0\x80", scratch, true) == "\xed\xa0\x80");  // surrogatepass
  CHECK(sanitize_utf8("\xed\xa0\x80", scratch, false) == "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  CHECK(sanitize_utf8("\xc0\x80", scratch, false) == "\xef\xbf\xbd\xef\xbf\xbd");           // overlong
  CHECK(sanitize_utf8("\xf4\x90\x80\x80", scratch, false).substr(0, 3) == "\xef\xbf\xbd");  // above U+10FFFF
  CHECK(decoded(pickled([](Pickler& p) { p.str(std::string("x\x1b[2J\xfe", 6)); })) == "\"x\\x1b[2J\\xef\\xbf\\xbd\"");
}

TEST_CASE("containers: EMPTY_DICT/EMPTY_LIST, MARK and SETITEMS/APPENDS in batches of 1000") {
  CHECK(hex(pickled([](Pickler& p) {
          p.begin_dict();
          p.str("a");
          p.integer(1);
          p.end_dict();
        })) == "80047d288c01614b01752e");
  CHECK(hex(pickled([](Pickler& p) {
          p.begin_list();
          p.end_list();
        })) == "80045d2e");
  std::string big = pickled([](Pickler& p) {
    p.begin_list();
    for (int i = 0; i < 2500; ++i) p.integer(7);
    p.end_list();
  });
  size_t appends = 0;
  for (char c : big) appends += c == 'e';  // no other byte of this pickle is 0x65
  CHECK(appends == 3);
  std::string dict = pickled([](Pickler& p) {
    p.begin_dict();
    for (int i = 0; i < 1500; ++i) {
      p.integer(i);
      p.integer(i);
    }
    p.end_dict();
  });
  std::vector<uint8_t> in(dict.begin(), dict.end());
  ValueGraph g = unpickle(in);
  CHECK(g.items(g.root()).size() == 3000);
  CHECK_THROWS_AS(pickled([](Pickler& p) { p.begin_dict(); }), std::logic_error);
  CHECK_THROWS_AS(pickled([](Pickler& p) {
                    p.begin_dict();
                    p.str("key only");
                    p.end_dict();
                  }),
                  std::logic_error);
  CHECK_THROWS_AS(pickled([](Pickler& p) { p.end_list(); }), std::logic_error);
}

TEST_CASE("memoize and get: one object referenced again, through BINGET and past 256 through LONG_BINGET") {
  std::string b = pickled([](Pickler& p) {
    p.begin_list();
    std::vector<uint32_t> ids;
    for (int i = 0; i < 300; ++i) {
      p.begin_dict();
      ids.push_back(p.memoize());
      p.str("line");
      p.integer(i);
      p.end_dict();
    }
    p.get(ids[3]);
    p.get(ids[299]);
    p.end_list();
  });
  CHECK(b.find('\x94') != std::string::npos);                               // MEMOIZE
  CHECK(b.find("h\x03") != std::string::npos);                              // BINGET 3
  CHECK(b.find(std::string("j\x2b\x01\x00\x00", 5)) != std::string::npos);  // LONG_BINGET 299
  std::vector<uint8_t> in(b.begin(), b.end());
  ValueGraph g = unpickle(in);
  auto items = g.items(g.root());
  REQUIRE(items.size() == 302);
  CHECK(items[300] == items[3]);  // the same node: shared, not copied
  CHECK(items[301] == items[299]);
  CHECK(dump(g, items[300]) == "{\"line\": 3}");
  CHECK_THROWS_AS(pickled([](Pickler& p) { p.get(0); }), std::logic_error);
  CHECK_THROWS_AS(pickled([](Pickler& p) {
                    p.begin_tuple();
                    p.memoize();
                  }),
                  std::logic_error);
}

TEST_CASE("output is streamed: a failing stream stops the pickler with ios_base::failure") {
  std::ostringstream out;
  out.setstate(std::ios::badbit);
  Pickler p(out);
  p.begin_list();
  CHECK_THROWS_AS(
      [&] {
        for (int i = 0; i < 100000; ++i) p.str("some text that fills the 64 KiB buffer");
      }(),
      std::ios_base::failure);
}
