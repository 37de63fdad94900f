// The embedded unpickler: every opcode, every error path, memo sharing, deep and pathological inputs.
// Small cases are written with the test assembler (support/pickle_asm.hpp); the Python-made
// fixtures in testdata/pickle/ pin the decoding of what CPython's own pickler writes.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "memsnap/pickle/unpickler.hpp"
#include "memsnap/util/error.hpp"
#include "support/pickle_asm.hpp"
#include "support/testdata.hpp"

using memsnap::InputError;
using memsnap::test::assemble;
using namespace memsnap::pickle;

namespace {

// Decodes `program` and returns the canonical dump of the root.
std::string dump_of(std::string_view program) {
  std::vector<uint8_t> bytes = assemble(program);
  ValueGraph g = unpickle(bytes);
  return dump(g, g.root());
}

struct Failure {
  std::string location, message;
};

// The InputError that decoding `bytes` throws (any other exception escapes and fails the test).
Failure failure_of(const std::vector<uint8_t>& bytes, const Limits& limits = {}) {
  try {
    unpickle(bytes, nullptr, limits);
  } catch (const InputError& e) {
    return {e.location(), e.message()};
  }
  FAIL("no InputError was thrown");
  return {};
}

std::string repeat(std::string_view s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), {});
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

// Asserts that decoding fails at exactly `where` ("offset N") with `fragment` in the message.
#define CHECK_FAILS(bytes, where, fragment, ...)                               \
  do {                                                                         \
    Failure f_ = failure_of(bytes __VA_OPT__(, ) __VA_ARGS__);                 \
    CHECK(f_.location == (where));                                             \
    CHECK_MESSAGE(f_.message.find(fragment) != std::string::npos, f_.message); \
  } while (0)

// ---- the assembler itself -------------------------------------------------------

TEST_CASE("pickle_asm: a program assembles to the exact bytes") {
  auto bytes = assemble(
      "PROTO 2 | EMPTY_LIST BINPUT 0 MARK BININT1 7 BININT2 0x1234 BININT -2 LONG1 -1 LONG1 255 "
      "SHORT_BINUNICODE 'a\\'b' BINFLOAT 1.5 INT 01 GLOBAL 'os system' LONG_BINGET 0x01020304 "
      "RAW x:ff00 APPENDS STOP");
  std::vector<uint8_t> want = {0x80, 0x02, ']',  'q',  0x00, '(',  'K',  0x07, 'M',  0x34, 0x12, 'J',  0xfe,
                               0xff, 0xff, 0xff, 0x8a, 0x01, 0xff, 0x8a, 0x02, 0xff, 0x00, 0x8c, 0x03, 'a',
                               '\'', 'b',  'G',  0x3f, 0xf8, 0,    0,    0,    0,    0,    0,    'I',  '0',
                               '1',  '\n', 'c',  'o',  's',  '\n', 's',  'y',  's',  't',  'e',  'm',  '\n',
                               'j',  0x04, 0x03, 0x02, 0x01, 0xff, 0x00, 'e',  '.'};
  CHECK(bytes == want);

  SUBCASE("LONG1 and LONG4 use pickle.encode_long's minimal two's complement") {
    CHECK(assemble("LONG1 0") == std::vector<uint8_t>{0x8a, 0x00});
    CHECK(assemble("LONG1 128") == std::vector<uint8_t>{0x8a, 0x02, 0x80, 0x00});
    CHECK(assemble("LONG1 -129") == std::vector<uint8_t>{0x8a, 0x02, 0x7f, 0xff});
    CHECK(assemble("LONG1 -256") == std::vector<uint8_t>{0x8a, 0x02, 0x00, 0xff});
    CHECK(assemble("LONG1 18446744073709551615") ==
          std::vector<uint8_t>{0x8a, 0x09, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00});
    CHECK(assemble("LONG1 -18446744073709551615") == std::vector<uint8_t>{0x8a, 0x09, 0x01, 0, 0, 0, 0, 0, 0, 0, 0xff});
    CHECK(assemble("LONG4 x:0102") == std::vector<uint8_t>{0x8b, 0x02, 0, 0, 0, 0x01, 0x02});
  }
  SUBCASE("length-prefixed and text arguments") {
    CHECK(assemble("BINUNICODE8 'ab'") == std::vector<uint8_t>{0x8d, 2, 0, 0, 0, 0, 0, 0, 0, 'a', 'b'});
    CHECK(assemble("BINSTRING x:00") == std::vector<uint8_t>{'T', 1, 0, 0, 0, 0});
    CHECK(assemble("FRAME 3") == std::vector<uint8_t>{0x95, 3, 0, 0, 0, 0, 0, 0, 0});
    CHECK(assemble("STRING '\"a\\\\b\"'") == std::vector<uint8_t>{'S', '"', 'a', '\\', 'b', '"', '\n'});
    CHECK(assemble("FLOAT -2.5") == std::vector<uint8_t>{'F', '-', '2', '.', '5', '\n'});
  }
  SUBCASE("malformed programs are rejected") {
    CHECK_THROWS_AS(assemble("NOT_AN_OPCODE"), std::invalid_argument);
    CHECK_THROWS_AS(assemble("BININT1 256"), std::invalid_argument);
    CHECK_THROWS_AS(assemble("STOP 1"), std::invalid_argument);
    CHECK_THROWS_AS(assemble("BINUNICODE"), std::invalid_argument);
    CHECK_THROWS_AS(assemble("SHORT_BINUNICODE 'open"), std::invalid_argument);
    CHECK_THROWS_AS(assemble("RAW x:abc"), std::invalid_argument);
  }
}

// ---- Python-made fixtures ------------------------------------------------------

TEST_CASE("every Python-made fixture decodes to its .expected dump") {
  const std::map<std::string, int> protocol = {
      {"values_p0", 0},         {"values_p1", 0},        {"values_p2", 2},        {"values_p3", 3},
      {"values_p4", 4},         {"values_p5", 5},        {"frames_p4", 4},        {"handmade_long4", 2},
      {"handmade_stackops", 2}, {"handmade_strings", 5}, {"handmade_textints", 0}};
  size_t seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(memsnap::test::testdata("pickle"))) {
    auto path = entry.path();
    if (path.extension() != ".pickle") continue;
    auto expected_path = std::filesystem::path(path).replace_extension(".expected");
    if (!std::filesystem::exists(expected_path)) continue;
    std::string stem = path.stem().string();
    CAPTURE(stem);
    REQUIRE_MESSAGE(protocol.count(stem) == 1, "new fixture: add its protocol to this table");
    ++seen;
    auto bytes = memsnap::test::read_bytes(path);
    PickleInfo info;
    ValueGraph g = unpickle(bytes, &info);
    CHECK(dump(g, g.root()) == read_text(expected_path));
    CHECK(info.protocol == protocol.at(stem));
    CHECK(info.stop_offset == bytes.size() - 1);
    CHECK(info.opcodes > 0);
  }
  CHECK(seen == protocol.size());
}

TEST_CASE("every refused fixture fails at the refused opcode's offset") {
  std::ifstream tsv(memsnap::test::testdata("pickle/refused/OFFSETS.tsv"));
  std::string file, opcode;
  uint64_t offset = 0;
  size_t rows = 0;
  while (tsv >> file >> opcode >> offset) {
    CAPTURE(file);
    ++rows;
    auto bytes = memsnap::test::read_bytes(memsnap::test::testdata("pickle/refused/" + file));
    REQUIRE(!bytes.empty());
    Failure f = failure_of(bytes);
    CHECK(f.location == "offset " + std::to_string(offset));
    CHECK_MESSAGE(f.message.find("refused opcode " + opcode) != std::string::npos, f.message);
  }
  CHECK(rows == 15);
}

TEST_CASE("refused opcodes name what they would have imported") {
  CHECK_FAILS(assemble("PROTO 2 GLOBAL 'os system' STOP"), "offset 2", "refused opcode GLOBAL os.system");
  CHECK_FAILS(assemble("PROTO 4 SHORT_BINUNICODE 'posix' SHORT_BINUNICODE 'system' STACK_GLOBAL STOP"), "offset 17",
              "refused opcode STACK_GLOBAL posix.system");
  CHECK_FAILS(assemble("MARK INST 'builtins dict' STOP"), "offset 1", "refused opcode INST builtins.dict");
  CHECK_FAILS(assemble("PROTO 2 NONE EMPTY_TUPLE REDUCE STOP"), "offset 4", "refused opcode REDUCE");
  CHECK_FAILS(assemble("PERSID 'id' STOP"), "offset 0", "refused opcode PERSID");
}

// ---- atoms ----------------------------------------------------------------------

TEST_CASE("constants and small integers") {
  CHECK(dump_of("NONE STOP") == "None");
  CHECK(dump_of("PROTO 2 NEWTRUE STOP") == "True");
  CHECK(dump_of("PROTO 2 NEWFALSE STOP") == "False");
  CHECK(dump_of("BININT1 0 STOP") == "0");
  CHECK(dump_of("BININT1 255 STOP") == "255");
  CHECK(dump_of("BININT2 256 STOP") == "256");
  CHECK(dump_of("BININT2 65535 STOP") == "65535");
  CHECK(dump_of("BININT 2147483647 STOP") == "2147483647");
  CHECK(dump_of("BININT -1 STOP") == "-1");
  CHECK(dump_of("BININT -2147483648 STOP") == "-2147483648");

  SUBCASE("INT 01 / 00 are the protocol-0 booleans") {
    auto t = assemble("INT 01 STOP");
    ValueGraph g = unpickle(t);
    CHECK(g.kind(g.root()) == Kind::Bool);
    CHECK(g.as_bool(g.root()));
    CHECK(dump_of("INT 00 STOP") == "False");
    auto one = assemble("INT 1 STOP");
    ValueGraph g1 = unpickle(one);
    CHECK(g1.kind(g1.root()) == Kind::Int);
    CHECK(g1.as_int(g1.root()) == 1);
  }
  SUBCASE("INT and LONG: decimal of any size") {
    CHECK(dump_of("INT 42 STOP") == "42");
    CHECK(dump_of("INT -7 STOP") == "-7");
    CHECK(dump_of("INT 9223372036854775807 STOP") == "9223372036854775807");
    CHECK(dump_of("INT -9223372036854775808 STOP") == "-9223372036854775808");
    CHECK(dump_of("INT 18446744073709551615 STOP") == "18446744073709551615");
    CHECK(dump_of("INT 18446744073709551616 STOP") == "0x10000000000000000");
    CHECK(dump_of("INT -9223372036854775809 STOP") == "-0x8000000000000001");
    CHECK(dump_of("INT -18446744073709551616 STOP") == "-0x10000000000000000");
    CHECK(dump_of("LONG 123L STOP") == "123");
    CHECK(dump_of("LONG -99999999999999999999L STOP") == "-0x56bc75e2d630fffff");
    CHECK(dump_of("LONG 0L STOP") == "0");
  }
}

TEST_CASE("LONG1 and LONG4: two's complement of 0 to 9 bytes and beyond") {
  auto decode = [](std::string_view program, auto&& check) {
    auto bytes = assemble(program);
    ValueGraph g = unpickle(bytes);
    check(g, g.root());
  };
  CHECK(dump_of("PROTO 2 LONG1 x: STOP") == "0");
  CHECK(dump_of("PROTO 2 LONG1 x:7f STOP") == "127");
  CHECK(dump_of("PROTO 2 LONG1 x:80 STOP") == "-128");
  CHECK(dump_of("PROTO 2 LONG1 x:ff STOP") == "-1");
  CHECK(dump_of("PROTO 2 LONG1 -1 STOP") == "-1");
  CHECK(dump_of("PROTO 2 LONG1 x:ff7f STOP") == "32767");
  CHECK(dump_of("PROTO 2 LONG1 x:000080 STOP") == "-8388608");
  CHECK(dump_of("PROTO 2 LONG1 x:ffffff7f STOP") == "2147483647");
  CHECK(dump_of("PROTO 2 LONG1 x:0000000080 STOP") == "-549755813888");
  CHECK(dump_of("PROTO 2 LONG1 x:00785634127f STOP") == "139716164220928");  // 0x7f12_3456_7800
  CHECK(dump_of("PROTO 2 LONG1 0x7f1234567800 STOP") == "139716164220928");
  CHECK(dump_of("PROTO 2 LONG1 x:ffffffffffff7f STOP") == "36028797018963967");
  CHECK(dump_of("PROTO 2 LONG1 x:ffffffffffffff7f STOP") == "9223372036854775807");
  CHECK(dump_of("PROTO 2 LONG1 x:0000000000000080 STOP") == "-9223372036854775808");

  SUBCASE("9 bytes: 2**64-1 is an unsigned Int, 2**64 a BigInt") {
    decode("PROTO 2 LONG1 x:ffffffffffffffff00 STOP", [](const ValueGraph& g, ValueId v) {
      CHECK(g.kind(v) == Kind::Int);
      CHECK(g.is_unsigned(v));
      CHECK(g.as_uint(v) == std::numeric_limits<uint64_t>::max());
    });
    decode("PROTO 2 LONG1 x:000000000000000001 STOP", [](const ValueGraph& g, ValueId v) {
      CHECK(g.kind(v) == Kind::BigInt);
      CHECK_FALSE(g.big_negative(v));
      CHECK(dump(g, v) == "0x10000000000000000");
    });
    decode("PROTO 2 LONG1 x:0000000000000000ff STOP", [](const ValueGraph& g, ValueId v) {
      CHECK(g.kind(v) == Kind::BigInt);
      CHECK(g.big_negative(v));
      CHECK(dump(g, v) == "-0x10000000000000000");
    });
    decode("PROTO 2 LONG1 x:0000000000000080ff STOP", [](const ValueGraph& g, ValueId v) {
      CHECK(g.kind(v) == Kind::Int);  // -2**63 with a redundant sign byte
      CHECK(g.as_int(v) == std::numeric_limits<int64_t>::min());
    });
  }
  SUBCASE("non-minimal encodings (torch's C++ writer) decode to Int") {
    decode("PROTO 2 LONG1 x:0500000000000000 STOP", [](const ValueGraph& g, ValueId v) {
      CHECK(g.kind(v) == Kind::Int);
      CHECK(g.as_int(v) == 5);
      CHECK_FALSE(g.is_unsigned(v));
    });
    CHECK(dump_of("PROTO 2 LONG1 x:fbffffffffffffff STOP") == "-5");
    CHECK(dump_of("PROTO 2 LONG1 x:0100000000000000000000 STOP") == "1");
    CHECK(dump_of("PROTO 2 LONG1 x:00785634127f0000 STOP") == "139716164220928");
  }
  SUBCASE("LONG4") {
    CHECK(dump_of("PROTO 2 LONG4 x: STOP") == "0");
    CHECK(dump_of("PROTO 2 LONG4 -129 STOP") == "-129");
    CHECK(dump_of("PROTO 2 LONG4 x:0000000000000000000001 STOP") == "0x100000000000000000000");
    CHECK(dump_of("PROTO 2 LONG4 x:" + repeat("00", 300) + "80 STOP") == "-0x80" + repeat("00", 300));
  }
}

TEST_CASE("floats") {
  auto value = [](std::string_view program) {
    auto bytes = assemble(program);
    ValueGraph g = unpickle(bytes);
    REQUIRE(g.kind(g.root()) == Kind::Float);
    return g.as_float(g.root());
  };
  CHECK(value("PROTO 2 BINFLOAT 1.5 STOP") == 1.5);
  double nz = value("PROTO 2 BINFLOAT -0.0 STOP");
  CHECK(nz == 0.0);
  CHECK(std::signbit(nz));
  CHECK(dump_of("PROTO 2 BINFLOAT -0.0 STOP") == "-0");
  CHECK(value("BINFLOAT 'inf' STOP") == std::numeric_limits<double>::infinity());
  CHECK(value("FLOAT 1e100 STOP") == 1e100);
  CHECK(dump_of("FLOAT 1e100 STOP") == "1e+100");
  CHECK(value("FLOAT -2.5 STOP") == -2.5);
  CHECK(value("FLOAT 0.1 STOP") == 0.1);
  CHECK(std::isinf(value("FLOAT 'inf' STOP")));
  CHECK(std::isnan(value("FLOAT 'nan' STOP")));
  CHECK(value("FLOAT '+1.5' STOP") == 1.5);  // float('+1.5') in CPython's load_float
}

TEST_CASE("strings and bytes") {
  CHECK(dump_of("PROTO 4 SHORT_BINUNICODE 'h\xc3\xa9' STOP") == "\"h\\xc3\\xa9\"");
  CHECK(dump_of("PROTO 2 BINUNICODE 'abc' STOP") == "\"abc\"");
  CHECK(dump_of("PROTO 2 BINUNICODE '' STOP") == "\"\"");
  CHECK(dump_of("PROTO 4 BINUNICODE8 'eight' STOP") == "\"eight\"");
  CHECK(dump_of("PROTO 2 SHORT_BINSTRING 'py2' STOP") == "\"py2\"");
  CHECK(dump_of("PROTO 2 BINSTRING 'py2 long' STOP") == "\"py2 long\"");
  CHECK(dump_of("PROTO 3 SHORT_BINBYTES x:00ff STOP") == "b\"\\x00\\xff\"");
  CHECK(dump_of("PROTO 3 BINBYTES 'abc' STOP") == "b\"abc\"");
  CHECK(dump_of("PROTO 4 BINBYTES8 'abc' STOP") == "b\"abc\"");
  {
    auto bytes = assemble("PROTO 5 BYTEARRAY8 'ab' STOP");
    ValueGraph g = unpickle(bytes);
    CHECK(g.kind(g.root()) == Kind::ByteArray);
    CHECK(g.bytes(g.root()) == "ab");
  }
  SUBCASE("STRING: a quoted literal decoded like codecs.escape_decode") {
    CHECK(dump_of(R"(STRING '\'plain\'' STOP)") == "\"plain\"");
    CHECK(dump_of(R"(STRING '"dq"' STOP)") == "\"dq\"");
    CHECK(dump_of(R"(STRING '\'a\nb\tc\'' STOP)") == "\"a\\x0ab\\x09c\"");
    CHECK(dump_of(R"(STRING '\'\101\x41\\\\\'' STOP)") == "\"AA\\x5c\"");
    CHECK(dump_of(R"(STRING '\'ab\q\'' STOP)") == "\"ab\\x5cq\"");  // unknown escapes keep the backslash
    CHECK(dump_of(R"(STRING '\'it\\\'s\'' STOP)") == "\"it's\"");
  }
  SUBCASE("UNICODE: raw-unicode-escape, stored as UTF-8") {
    CHECK(dump_of(R"(UNICODE 'caf\u00e9' STOP)") == "\"caf\\xc3\\xa9\"");
    CHECK(dump_of(R"(UNICODE '\U0001F600' STOP)") == "\"\\xf0\\x9f\\x98\\x80\"");
    CHECK(dump_of("UNICODE x:636166e9 STOP") == "\"caf\\xc3\\xa9\"");        // latin-1 byte
    CHECK(dump_of(R"(UNICODE '\\\\u0041' STOP)") == "\"\\x5c\\x5cu0041\"");  // even backslashes: literal
    CHECK(dump_of(R"(UNICODE '\\\\\\u0041' STOP)") == "\"\\x5c\\x5cA\"");    // odd: an escape
    CHECK(dump_of(R"(UNICODE 'a\b' STOP)") == "\"a\\x5cb\"");
  }
}

// ---- containers ----------------------------------------------------------------

TEST_CASE("containers") {
  CHECK(dump_of("PROTO 2 EMPTY_LIST STOP") == "[]");
  CHECK(dump_of("PROTO 2 EMPTY_DICT STOP") == "{}");
  CHECK(dump_of("PROTO 2 EMPTY_TUPLE STOP") == "()");
  CHECK(dump_of("PROTO 4 EMPTY_SET STOP") == "set{}");
  CHECK(dump_of("MARK LIST STOP") == "[]");
  CHECK(dump_of("MARK BININT1 1 BININT1 2 LIST STOP") == "[1, 2]");
  CHECK(dump_of("MARK BININT1 1 BININT1 2 TUPLE STOP") == "(1, 2)");
  CHECK(dump_of("MARK TUPLE STOP") == "()");
  CHECK(dump_of("MARK SHORT_BINUNICODE 'a' BININT1 1 DICT STOP") == "{\"a\": 1}");
  CHECK(dump_of("MARK DICT STOP") == "{}");
  CHECK(dump_of("PROTO 2 BININT1 1 TUPLE1 STOP") == "(1)");
  CHECK(dump_of("PROTO 2 BININT1 1 BININT1 2 TUPLE2 STOP") == "(1, 2)");
  CHECK(dump_of("PROTO 2 BININT1 1 BININT1 2 BININT1 3 TUPLE3 STOP") == "(1, 2, 3)");
  CHECK(dump_of("PROTO 4 MARK BININT1 2 BININT1 1 FROZENSET STOP") == "frozenset{1, 2}");
  CHECK(dump_of("PROTO 4 EMPTY_SET MARK BININT1 2 BININT1 1 ADDITEMS MARK BININT1 3 ADDITEMS STOP") == "set{1, 2, 3}");
  CHECK(dump_of("PROTO 2 EMPTY_LIST BININT1 1 APPEND BININT1 2 APPEND STOP") == "[1, 2]");
  CHECK(dump_of("PROTO 2 EMPTY_LIST MARK BININT1 1 BININT1 2 APPENDS MARK APPENDS MARK BININT1 3 APPENDS STOP") ==
        "[1, 2, 3]");
  CHECK(dump_of("PROTO 2 EMPTY_DICT SHORT_BINUNICODE 'k' BININT1 1 SETITEM STOP") == "{\"k\": 1}");
  CHECK(dump_of("PROTO 2 EMPTY_DICT MARK SHORT_BINUNICODE 'a' BININT1 1 SHORT_BINUNICODE 'b' NONE SETITEMS STOP") ==
        "{\"a\": 1, \"b\": None}");
  CHECK(dump_of("PROTO 2 MARK EMPTY_LIST MARK BININT1 1 APPENDS EMPTY_DICT MARK BININT1 2 EMPTY_TUPLE SETITEMS "
                "TUPLE STOP") == "([1], {2: ()})");
}

TEST_CASE("stack operations: DUP, POP, POP_MARK, MARK") {
  SUBCASE("DUP pushes the same object") {
    auto bytes = assemble("PROTO 2 EMPTY_LIST DUP BININT1 1 APPEND TUPLE2 STOP");
    ValueGraph g = unpickle(bytes);
    auto items = g.items(g.root());
    REQUIRE(items.size() == 2);
    CHECK(items[0] == items[1]);
    CHECK(dump(g, g.root()) == "([1], [1])");
  }
  CHECK(dump_of("BININT1 1 BININT1 2 POP STOP") == "1");
  CHECK(dump_of("BININT1 1 MARK BININT1 2 BININT1 3 POP_MARK STOP") == "1");
  // POP with only a MARK on top drops the MARK (CPython's load_pop).
  CHECK(dump_of("BININT1 1 MARK POP BININT1 2 TUPLE2 STOP") == "(1, 2)");
  CHECK_FAILS(assemble("BININT1 1 MARK POP BININT1 2 TUPLE STOP"), "offset 6", "TUPLE without a preceding MARK");
  // Trailing bytes after STOP are not read.
  CHECK(dump_of("PROTO 2 NONE STOP RAW x:ffff") == "None");
}

TEST_CASE("PROTO and FRAME; PickleInfo") {
  for (int v = 0; v <= 5; ++v) {
    CAPTURE(v);
    auto bytes = assemble("PROTO " + std::to_string(v) + " NONE STOP");
    PickleInfo info;
    unpickle(bytes, &info);
    CHECK(info.protocol == v);
  }
  auto bytes = assemble("PROTO 4 FRAME 5 EMPTY_LIST MEMOIZE BININT1 7 APPEND STOP");
  PickleInfo info;
  ValueGraph g = unpickle(bytes, &info);
  CHECK(dump(g, g.root()) == "[7]");
  CHECK(info.protocol == 4);
  CHECK(info.stop_offset == 16);
  CHECK(info.opcodes == 7);
  CHECK(info.memo_entries == 1);
  CHECK(dump_of("PROTO 4 FRAME 0 NONE STOP") == "None");  // FRAME is only a hint
}

// ---- memo -----------------------------------------------------------------------

TEST_CASE("memo: every PUT/GET form keeps shared objects shared") {
  auto shared_pair = [](std::string_view program) {
    auto bytes = assemble(program);
    ValueGraph g = unpickle(bytes);
    auto items = g.items(g.root());
    REQUIRE(items.size() == 2);
    CHECK(g.kind(items[0]) == Kind::List);
    CHECK(items[0] == items[1]);
  };
  SUBCASE("BINPUT / BINGET") {
    shared_pair("PROTO 2 EMPTY_LIST MARK EMPTY_LIST BINPUT 1 BINGET 1 APPENDS STOP");
  }
  SUBCASE("LONG_BINPUT / LONG_BINGET") {
    shared_pair("PROTO 2 EMPTY_LIST MARK EMPTY_LIST LONG_BINPUT 70000 LONG_BINGET 70000 APPENDS STOP");
  }
  SUBCASE("PUT / GET") {
    shared_pair("MARK MARK LIST PUT 3 GET 3 TUPLE STOP");
  }
  SUBCASE("MEMOIZE / BINGET") {
    shared_pair("PROTO 4 EMPTY_LIST MEMOIZE MARK EMPTY_LIST MEMOIZE BINGET 1 APPENDS STOP");
  }
  SUBCASE("PUT overwrites") {
    CHECK(dump_of("MARK EMPTY_LIST PUT 0 POP EMPTY_DICT PUT 0 POP GET 0 TUPLE STOP") == "({})");
  }
  SUBCASE("a MEMOIZE'd dict referenced 300 times is one node") {
    auto bytes = assemble("PROTO 4 EMPTY_LIST MEMOIZE MARK EMPTY_DICT MEMOIZE SHORT_BINUNICODE 'k' NONE SETITEM " +
                          repeat("BINGET 1 ", 299) + "APPENDS STOP");
    PickleInfo info;
    ValueGraph g = unpickle(bytes, &info);
    auto items = g.items(g.root());
    REQUIRE(items.size() == 300);
    std::set<uint32_t> ids;
    for (ValueId v : items) ids.insert(v.v);
    CHECK(ids.size() == 1);
    CHECK(g.kind(items[0]) == Kind::Dict);
    CHECK(info.memo_entries == 2);
  }
  SUBCASE("LONG_BINPUT 0xFFFFFFFF is stored sparsely and read back") {
    auto bytes = assemble("PROTO 2 EMPTY_LIST LONG_BINPUT 0xFFFFFFFF POP LONG_BINGET 0xFFFFFFFF STOP");
    PickleInfo info;
    ValueGraph g = unpickle(bytes, &info);
    CHECK(g.kind(g.root()) == Kind::List);
    CHECK(info.memo_entries == 1);
  }
  SUBCASE("a sparse key stays readable after the dense memo grows past it") {
    // Key 100000 is too far ahead of offset 8 to be dense; after 40000 bytes of input
    // key 100001 is dense, which grows the dense array past 100000.
    auto bytes = assemble("PROTO 2 EMPTY_LIST LONG_BINPUT 100000 POP BINBYTES x:" + repeat("00", 40000) +
                          " POP NONE LONG_BINPUT 100001 POP LONG_BINGET 100000 STOP");
    PickleInfo info;
    ValueGraph g;
    CHECK_NOTHROW(g = unpickle(bytes, &info));
    CHECK(g.kind(g.root()) == Kind::List);
    CHECK(info.memo_entries == 2);
  }
}

TEST_CASE("pathological sharing: a list containing itself") {
  SUBCASE("DUP then APPEND") {
    auto bytes = assemble("PROTO 2 EMPTY_LIST DUP APPEND STOP");
    ValueGraph g = unpickle(bytes);
    REQUIRE(g.items(g.root()).size() == 1);
    CHECK(g.items(g.root())[0] == g.root());
    CHECK(dump(g, g.root()).starts_with("[[[["));  // the dump's depth cap ends the cycle
  }
  SUBCASE("twice, through the memo") {
    auto bytes = assemble("PROTO 2 EMPTY_LIST BINPUT 0 MARK BINGET 0 BINGET 0 APPENDS STOP");
    ValueGraph g = unpickle(bytes);
    auto items = g.items(g.root());
    REQUIRE(items.size() == 2);
    CHECK(items[0] == g.root());
    CHECK(items[1] == g.root());
  }
}

TEST_CASE("repeated item batches: lists with equal contents stay independent") {
  // APPENDS lets the graph share equal item ranges between lists; every list must still
  // read back exactly what was appended to it.
  CHECK(dump_of("PROTO 2 MARK EMPTY_LIST MARK BININT1 1 BININT1 2 APPENDS EMPTY_LIST MARK BININT1 1 BININT1 2 "
                "APPENDS EMPTY_LIST MARK BININT1 1 APPENDS BININT1 9 APPEND TUPLE STOP") == "([1, 2], [1, 2], [1, 9])");
  SUBCASE("an empty APPENDS batch") {
    CHECK(dump_of("PROTO 2 EMPTY_LIST MARK BININT1 1 APPENDS MARK APPENDS EMPTY_LIST MARK BININT1 7 APPENDS "
                  "TUPLE2 STOP") == "([1], [7])");
  }
  SUBCASE("a list that grew into a shared range, then a new list where it was") {
    CHECK(dump_of("PROTO 2 MARK EMPTY_LIST MARK BININT1 1 BININT1 2 APPENDS EMPTY_LIST MARK BININT1 1 APPENDS "
                  "MARK BININT1 2 APPENDS EMPTY_LIST MARK BININT1 1 APPENDS EMPTY_LIST MARK BININT1 3 APPENDS "
                  "TUPLE STOP") == "([1, 2], [1, 2], [1], [3])");
  }
}

TEST_CASE("deep nesting is decoded without recursion") {
  constexpr size_t kDepth = 100000;
  SUBCASE("100000 nested lists built by APPEND") {
    auto bytes = assemble("PROTO 2 " + repeat("EMPTY_LIST ", kDepth) + repeat("APPEND ", kDepth - 1) + "STOP");
    ValueGraph g = unpickle(bytes);
    size_t depth = 1;
    for (ValueId v = g.root(); !g.items(v).empty(); v = g.items(v)[0]) ++depth;
    CHECK(depth == kDepth);
    CHECK(dump(g, g.root()).find("...") != std::string::npos);
  }
  SUBCASE("100000 nested MARKs closed by TUPLE") {
    auto bytes = assemble("PROTO 2 " + repeat("MARK ", kDepth) + "NONE " + repeat("TUPLE ", kDepth) + "STOP");
    Limits limits;
    limits.max_marks = kDepth;
    ValueGraph g = unpickle(bytes, nullptr, limits);
    size_t depth = 0;
    ValueId v = g.root();
    for (; g.kind(v) == Kind::Tuple; v = g.items(v)[0]) ++depth;
    CHECK(depth == kDepth);
    CHECK(g.kind(v) == Kind::None);
  }
}

TEST_CASE("a list receiving many batches between other containers keeps every item in order") {
  std::string program = "PROTO 2 EMPTY_LIST ";
  for (int i = 0; i < 5000; ++i) {
    program += "MARK BININT " + std::to_string(3 * i) + " BININT " + std::to_string(3 * i + 1) + " BININT " +
               std::to_string(3 * i + 2) + " APPENDS ";
    program += "EMPTY_DICT MARK BININT1 1 BININT1 2 BININT1 3 BININT1 4 SETITEMS POP ";
  }
  auto bytes = assemble(program + "STOP");
  ValueGraph g = unpickle(bytes);
  auto items = g.items(g.root());
  REQUIRE(items.size() == 15000);
  size_t first_wrong = 0;
  while (first_wrong < items.size() && g.kind(items[first_wrong]) == Kind::Int &&
         g.as_int(items[first_wrong]) == int64_t(first_wrong))
    ++first_wrong;
  CHECK(first_wrong == items.size());
}

// ---- error paths ------------------------------------------------------------------

TEST_CASE("truncated arguments") {
  {
    Failure f = failure_of(assemble("PROTO 2 RAW x:582c010000 RAW x:68656c6c6f20776f726c6421"));
    CHECK(f.location == "offset 2");
    CHECK(f.message == "truncated BINUNICODE (needs 300 bytes, 12 left)");
  }
  CHECK_FAILS(assemble("PROTO 2 RAW x:580100"), "offset 2", "truncated BINUNICODE (needs 4 bytes, 2 left)");
  CHECK_FAILS(assemble("PROTO 4 RAW x:8c05616263"), "offset 2", "truncated SHORT_BINUNICODE (needs 5 bytes, 3 left)");
  CHECK_FAILS(assemble("PROTO 4 RAW x:8c"), "offset 2", "truncated SHORT_BINUNICODE (needs 1 bytes, 0 left)");
  CHECK_FAILS(assemble("PROTO 3 RAW x:4210000000 RAW x:0102"), "offset 2",
              "truncated BINBYTES (needs 16 bytes, 2 left)");
  CHECK_FAILS(assemble("PROTO 2 NONE RAW x:8a0401"), "offset 3", "truncated LONG1 (needs 4 bytes, 1 left)");
  CHECK_FAILS(assemble("PROTO 2 RAW x:8b0a00000001"), "offset 2", "truncated LONG4 (needs 10 bytes, 1 left)");
  CHECK_FAILS(assemble("PROTO 2 RAW x:8b0a00"), "offset 2", "truncated LONG4 (needs 4 bytes, 2 left)");
  CHECK_FAILS(assemble("RAW x:4a0102"), "offset 0", "truncated BININT (needs 4 bytes, 2 left)");
  CHECK_FAILS(assemble("RAW x:4b"), "offset 0", "truncated BININT1 (needs 1 bytes, 0 left)");
  CHECK_FAILS(assemble("RAW x:4d01"), "offset 0", "truncated BININT2 (needs 2 bytes, 1 left)");
  CHECK_FAILS(assemble("RAW x:473ff8"), "offset 0", "truncated BINFLOAT (needs 8 bytes, 2 left)");
  CHECK_FAILS(assemble("PROTO 4 FRAME 100 BININT1 1 STOP"), "offset 2", "truncated FRAME (needs 100 bytes, 3 left)");
  CHECK_FAILS(assemble("PROTO 4 RAW x:950100"), "offset 2", "truncated FRAME (needs 8 bytes, 2 left)");
  CHECK_FAILS(assemble("RAW x:80"), "offset 0", "truncated PROTO (needs 1 bytes, 0 left)");
  CHECK_FAILS(assemble("PROTO 2 RAW x:7105"), "offset 2", "stack underflow");  // BINPUT with nothing to store
  CHECK_FAILS(assemble("PROTO 2 NONE RAW x:6a0000"), "offset 3", "truncated LONG_BINGET (needs 4 bytes, 2 left)");
  CHECK_FAILS(assemble("RAW x:493132"), "offset 0", "truncated INT (no end of line)");
  CHECK_FAILS(assemble("NONE RAW x:703132"), "offset 1", "truncated PUT (no end of line)");

  SUBCASE("huge length fields fail as truncated without allocating") {
    CHECK_FAILS(assemble("PROTO 4 RAW x:8df0ffffffffffffff RAW x:616263"), "offset 2",
                "truncated BINUNICODE8 (needs 18446744073709551600 bytes, 3 left)");
    CHECK_FAILS(assemble("PROTO 4 RAW x:8ef0ffffffffffffff"), "offset 2", "truncated BINBYTES8");
    CHECK_FAILS(assemble("PROTO 5 RAW x:96ffffffffffffffff"), "offset 2", "truncated BYTEARRAY8");
    CHECK_FAILS(assemble("PROTO 2 RAW x:58ffffffff"), "offset 2", "truncated BINUNICODE (needs 4294967295 bytes");
    CHECK_FAILS(assemble("PROTO 4 RAW x:95ffffffffffffffff"), "offset 2", "truncated FRAME");
  }
  SUBCASE("negative lengths") {
    CHECK_FAILS(assemble("PROTO 2 RAW x:8bffffffff"), "offset 2", "LONG4 with negative length");
    CHECK_FAILS(assemble("RAW x:54ffffffff"), "offset 0", "BINSTRING with negative length");
  }
}

TEST_CASE("missing STOP") {
  CHECK_FAILS(std::vector<uint8_t>{}, "offset 0", "no STOP opcode");
  CHECK_FAILS(assemble("PROTO 2 EMPTY_LIST"), "offset 3", "no STOP opcode");
  CHECK_FAILS(assemble("PROTO 2 EMPTY_LIST MARK BININT1 1 APPENDS"), "offset 7",
              "no STOP opcode (the pickle is truncated)");
}

TEST_CASE("stack underflow") {
  CHECK_FAILS(assemble("PROTO 2 STOP"), "offset 2", "STOP: stack underflow");
  CHECK_FAILS(assemble("PROTO 2 POP STOP"), "offset 2", "POP: stack underflow");
  CHECK_FAILS(assemble("PROTO 2 DUP STOP"), "offset 2", "DUP: stack underflow");
  CHECK_FAILS(assemble("PROTO 2 APPEND STOP"), "offset 2", "APPEND: stack underflow");
  CHECK_FAILS(assemble("PROTO 2 EMPTY_LIST APPEND STOP"), "offset 3", "APPEND: stack underflow");
  CHECK_FAILS(assemble("PROTO 2 EMPTY_DICT BININT1 1 SETITEM STOP"), "offset 5", "SETITEM: stack underflow");
  CHECK_FAILS(assemble("PROTO 2 BININT1 1 TUPLE2 STOP"), "offset 4", "TUPLE2: stack underflow");
  CHECK_FAILS(assemble("PROTO 2 TUPLE1 STOP"), "offset 2", "TUPLE1: stack underflow");
  CHECK_FAILS(assemble("PROTO 2 BININT1 1 BININT1 2 TUPLE3 STOP"), "offset 6", "TUPLE3: stack underflow");
  CHECK_FAILS(assemble("PROTO 2 EMPTY_LIST BINPUT 0 POP BINPUT 1"), "offset 6", "BINPUT: stack underflow");
  CHECK_FAILS(assemble("PROTO 4 MEMOIZE"), "offset 2", "MEMOIZE: stack underflow");
  SUBCASE("values below the last MARK are out of reach") {
    CHECK_FAILS(assemble("PROTO 2 BININT1 1 MARK TUPLE2 STOP"), "offset 5", "TUPLE2: stack underflow");
    CHECK_FAILS(assemble("PROTO 2 BININT1 1 MARK STOP"), "offset 5", "STOP: stack underflow");
    CHECK_FAILS(assemble("PROTO 2 EMPTY_LIST MARK BININT1 1 APPEND STOP"), "offset 6", "APPEND: stack underflow");
    CHECK_FAILS(assemble("PROTO 2 MARK BININT1 1 APPENDS STOP"), "offset 5", "APPENDS: stack underflow");
    CHECK_FAILS(assemble("PROTO 2 EMPTY_LIST MARK MARK BININT1 1 APPENDS STOP"), "offset 7",
                "APPENDS: stack underflow");
    CHECK_FAILS(assemble("PROTO 2 MARK MARK SHORT_BINUNICODE 'k' NONE SETITEMS STOP"), "offset 8",
                "SETITEMS: stack underflow");
  }
}

TEST_CASE("opcodes that need a MARK") {
  CHECK_FAILS(assemble("PROTO 2 EMPTY_LIST BININT1 1 APPENDS STOP"), "offset 5", "APPENDS without a preceding MARK");
  CHECK_FAILS(assemble("PROTO 2 EMPTY_DICT BININT1 1 BININT1 2 SETITEMS STOP"), "offset 7",
              "SETITEMS without a preceding MARK");
  CHECK_FAILS(assemble("PROTO 2 BININT1 1 TUPLE STOP"), "offset 4", "TUPLE without a preceding MARK");
  CHECK_FAILS(assemble("PROTO 2 BININT1 1 BININT1 2 DICT STOP"), "offset 6", "DICT without a preceding MARK");
  CHECK_FAILS(assemble("BININT1 1 LIST STOP"), "offset 2", "LIST without a preceding MARK");
  CHECK_FAILS(assemble("PROTO 4 BININT1 1 FROZENSET STOP"), "offset 4", "FROZENSET without a preceding MARK");
  CHECK_FAILS(assemble("PROTO 4 EMPTY_SET BININT1 1 ADDITEMS STOP"), "offset 5", "ADDITEMS without a preceding MARK");
  CHECK_FAILS(assemble("PROTO 2 NONE POP_MARK STOP"), "offset 3", "POP_MARK without a preceding MARK");
}

TEST_CASE("odd key/value counts and wrong container types") {
  CHECK_FAILS(assemble("PROTO 2 EMPTY_DICT MARK BININT1 1 SETITEMS STOP"), "offset 6", "SETITEMS: odd number of items");
  CHECK_FAILS(assemble("PROTO 2 MARK BININT1 1 DICT STOP"), "offset 5", "DICT: odd number of items");
  CHECK_FAILS(assemble("PROTO 2 EMPTY_DICT BININT1 1 APPEND STOP"), "offset 5", "APPEND target is a dict, not a list");
  CHECK_FAILS(assemble("PROTO 2 EMPTY_DICT MARK BININT1 1 APPENDS STOP"), "offset 6",
              "APPENDS target is a dict, not a list");
  CHECK_FAILS(assemble("PROTO 2 EMPTY_LIST BININT1 1 BININT1 2 SETITEM STOP"), "offset 7",
              "SETITEM target is a list, not a dict");
  CHECK_FAILS(assemble("PROTO 2 EMPTY_TUPLE MARK BININT1 1 BININT1 2 SETITEMS STOP"), "offset 8",
              "SETITEMS target is a tuple, not a dict");
  CHECK_FAILS(assemble("PROTO 4 EMPTY_LIST MARK BININT1 1 ADDITEMS STOP"), "offset 6",
              "ADDITEMS target is a list, not a set");
  CHECK_FAILS(assemble("PROTO 4 MARK FROZENSET MARK BININT1 1 ADDITEMS STOP"), "offset 7",
              "ADDITEMS target is a frozenset, not a set");
  CHECK_FAILS(assemble("PROTO 2 BININT1 5 BININT1 1 APPEND STOP"), "offset 6", "APPEND target is a int, not a list");
}

TEST_CASE("memo keys that were never stored") {
  CHECK_FAILS(assemble("PROTO 2 BINGET 3 STOP"), "offset 2", "BINGET: memo key 3 was never stored");
  CHECK_FAILS(assemble("PROTO 2 EMPTY_LIST BINPUT 1 BINGET 0 STOP"), "offset 5", "BINGET: memo key 0 was never stored");
  CHECK_FAILS(assemble("PROTO 2 LONG_BINGET 70000 STOP"), "offset 2", "LONG_BINGET: memo key 70000 was never stored");
  CHECK_FAILS(assemble("PROTO 2 EMPTY_LIST LONG_BINPUT 0xFFFFFFFF LONG_BINGET 0xFFFFFFFE STOP"), "offset 8",
              "LONG_BINGET: memo key 4294967294 was never stored");
  CHECK_FAILS(assemble("NONE POP GET 12 STOP"), "offset 2", "GET: memo key 12 was never stored");
  CHECK_FAILS(assemble("NONE GET 'x' STOP"), "offset 1", "GET: bad memo index 'x'");
  CHECK_FAILS(assemble("NONE PUT -1 STOP"), "offset 1", "PUT: bad memo index '-1'");
}

TEST_CASE("not a pickle, bad opcodes, unsupported protocols") {
  CHECK_FAILS(assemble("PROTO 6 NONE STOP"), "offset 0", "unsupported pickle protocol 6");
  CHECK_FAILS(assemble("PROTO 255 NONE STOP"), "offset 0", "unsupported pickle protocol 255");
  CHECK_FAILS(assemble("RAW x:ff"), "offset 0", "invalid pickle opcode 0xff");
  {
    Failure f = failure_of(assemble("PROTO 2 NONE RAW x:ff"));
    CHECK(f.location == "offset 3");
    CHECK(f.message == "invalid pickle opcode 0xff");
  }
  CHECK_FAILS(assemble("PROTO 2 NONE RAW x:00"), "offset 3", "invalid pickle opcode 0x00");
  CHECK_FAILS(assemble("PROTO 5 NONE RAW x:99"), "offset 3", "invalid pickle opcode 0x99");
  CHECK_FAILS(assemble("RAW x:68656c6c6f"), "offset 0", "not a snapshot");
  CHECK_FAILS(assemble("RAW x:68656c6c6f"), "offset 0", "'hello'");
  CHECK_FAILS(assemble("RAW x:000102"), "offset 0", "bytes 00 01 02");
}

TEST_CASE("limits: MARK nesting and value stack") {
  Limits limits;
  limits.max_marks = 8;
  CHECK(dump_of("PROTO 2 " + repeat("MARK ", 8) + "NONE STOP") == "None");
  auto ok = assemble("PROTO 2 " + repeat("MARK ", 8) + "NONE STOP");
  CHECK_NOTHROW(unpickle(ok, nullptr, limits));
  CHECK_FAILS(assemble("PROTO 2 " + repeat("MARK ", 9) + "NONE STOP"), "offset 10", "MARK nesting deeper than 8",
              limits);
  CHECK_FAILS(assemble("PROTO 2 " + repeat("MARK ", 4097) + "NONE STOP"), "offset 4098",
              "MARK nesting deeper than 4096");

  Limits small_stack;
  small_stack.max_stack = 4;
  CHECK_FAILS(assemble("PROTO 2 " + repeat("NONE ", 5) + "STOP"), "offset 6", "value stack exceeds its limit",
              small_stack);
}

TEST_CASE("malformed text arguments") {
  CHECK_FAILS(assemble("INT " + std::string(4301, '7') + " STOP"), "offset 0", "integer has more than 4300 digits");
  {
    auto bytes = assemble("INT " + std::string(4300, '7') + " STOP");
    ValueGraph g = unpickle(bytes);
    CHECK(g.kind(g.root()) == Kind::BigInt);
  }
  CHECK_FAILS(assemble("INT 'abc' STOP"), "offset 0", "INT: invalid integer literal");
  CHECK_FAILS(assemble("INT '' STOP"), "offset 0", "INT: invalid integer literal");
  CHECK_FAILS(assemble("NONE LONG '12x' STOP"), "offset 1", "LONG: invalid integer literal");
  CHECK_FAILS(assemble("FLOAT 'abc' STOP"), "offset 0", "FLOAT: invalid literal");
  CHECK_FAILS(assemble("FLOAT '1.5x' STOP"), "offset 0", "FLOAT: invalid literal");
  CHECK_FAILS(assemble("FLOAT '' STOP"), "offset 0", "FLOAT: invalid literal");
  CHECK_FAILS(assemble("STRING 'abc' STOP"), "offset 0", "STRING argument must be quoted");
  CHECK_FAILS(assemble(R"(STRING '\'abc"' STOP)"), "offset 0", "STRING argument must be quoted");
  CHECK_FAILS(assemble(R"(STRING '\'' STOP)"), "offset 0", "STRING argument must be quoted");
  CHECK_FAILS(assemble(R"(STRING '\'ab\\\'' STOP)"), "offset 0", "STRING: trailing backslash");
  CHECK_FAILS(assemble(R"(STRING '\'\xZ1\'' STOP)"), "offset 0", "STRING: invalid \\x escape");
  CHECK_FAILS(assemble(R"(UNICODE 'ab\u12' STOP)"), "offset 0", "UNICODE: truncated \\u escape");
  CHECK_FAILS(assemble(R"(UNICODE 'a\uZZZZ' STOP)"), "offset 0", "UNICODE: invalid \\u escape");
  CHECK_FAILS(assemble(R"(UNICODE '\U00110000' STOP)"), "offset 0", "UNICODE: \\U escape out of range");
}
